"""The files an execution created or changed (the seeds' ArtifactAware tools).

A tool is artifact-aware when its subject is a path it writes (`PathSubject(writes=True)`:
Write, Edit, a library tool declared so). The artifacts of any execution — a session's turn,
a fork, a routine run, a workflow task — are read from its messages: each successful call of
such a tool names a file; the file as it is now gives its size and hash. Read from the
messages, they need no bookkeeping of their own and survive a resume.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aimon_core.llm import Message, ToolResultBlock, ToolUseBlock
from aimon_core.tools._base import PathSubject, ToolRegistry


@dataclass(frozen=True, slots=True, kw_only=True)
class Artifact:
    """A file an execution created or changed, and the last tool call that did."""

    path: Path
    size: int
    sha256: str
    tool_use_id: str
    tool_name: str

    def to_json(self, root: Path | None = None) -> dict[str, Any]:
        """Return the artifact as plain JSON (`--output-format json`); paths relative to
        `root` when inside it."""
        shown = self.path.relative_to(root) if root and self.path.is_relative_to(root) \
            else self.path
        return {"path": str(shown), "size": self.size, "sha256": self.sha256,
                "tool_use_id": self.tool_use_id, "tool": self.tool_name}


def collect_artifacts(messages: Iterable[Message], tools: ToolRegistry, cwd: Path
                      ) -> tuple[Artifact, ...]:
    """Return the files that `messages`' successful artifact-aware calls wrote, in the order
    first written, each with the last call that wrote it; files gone since are left out."""
    calls: dict[str, tuple[str, Path]] = {}
    written: dict[Path, tuple[str, str]] = {}
    for message in messages:
        for block in message.content:
            match block:
                case ToolUseBlock(id=use_id, name=name, input=given):
                    tool = tools.get(name)
                    if tool is not None and isinstance(tool.subject, PathSubject) \
                            and tool.subject.writes \
                            and isinstance(path := given.get(tool.subject.param), str) and path:
                        calls[use_id] = (name, (cwd / path).resolve())
                case ToolResultBlock(tool_use_id=use_id, is_error=False) if use_id in calls:
                    name, path = calls[use_id]
                    written.pop(path, None)  # a later write moves it to the end
                    written[path] = (use_id, name)
                case _:
                    pass
    return tuple(artifact for path, (use_id, name) in written.items()
                 if (artifact := _artifact(path, use_id, name)) is not None)


def _artifact(path: Path, use_id: str, name: str) -> Artifact | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return Artifact(path=path, size=len(data), sha256=hashlib.sha256(data).hexdigest(),
                    tool_use_id=use_id, tool_name=name)
