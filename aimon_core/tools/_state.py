"""ToolState: what the tools of one session remember between calls (reads, the todo list)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

TodoStatus = Literal["pending", "in_progress", "completed"]
TODO_STATUSES: tuple[TodoStatus, ...] = ("pending", "in_progress", "completed")


@dataclass(frozen=True, slots=True, kw_only=True)
class Todo:
    """One item of the model's todo list."""

    content: str
    status: TodoStatus
    # The item in the present continuous ("Running the tests"), shown while in progress.
    active_form: str


def content_hash(data: bytes) -> str:
    """Return the sha256 hex digest of `data`."""
    return hashlib.sha256(data).hexdigest()


class ToolState:
    """Per-session memory of the built-in tools: read tracking and the todo list."""

    def __init__(self) -> None:
        self._reads: dict[Path, str] = {}
        self.todos: tuple[Todo, ...] = ()

    def record_read(self, path: Path, data: bytes) -> None:
        """Remember that the model has seen `path` holding `data` (after a read or a write)."""
        self._reads[path] = content_hash(data)

    def reads(self) -> tuple[tuple[str, str], ...]:
        """Return what the model has seen, as (path, content hash), to keep with the session."""
        return tuple((str(path), seen) for path, seen in self._reads.items())

    def restore(self, reads: tuple[tuple[str, str], ...]) -> None:
        """Remember reads of an earlier run of the session (a resume).

        Only the content hash is trusted: a file changed since must be read again.
        """
        for path, seen in reads:
            self._reads.setdefault(Path(path), seen)

    def has_read(self, path: Path) -> bool:
        """Return whether the model has read or written `path` in this session."""
        return path in self._reads

    def check_fresh(self, path: Path, current_data: bytes) -> str | None:
        """Return why the model may not change `path` now, or None if it may.

        The model must have read the file, and it must not have changed since (compared by
        content, so a touched mtime alone does not count as a change).
        """
        seen = self._reads.get(path)
        if seen is None:
            return (
                f"File {str(path)!r} has not been read in this session. "
                "Read it with the Read tool first, then try again."
            )
        if seen != content_hash(current_data):
            return (
                f"File {str(path)!r} has changed since it was last read (by the user, a "
                "formatter or another process). Read it again to see the current content, "
                "then try again."
            )
        return None
