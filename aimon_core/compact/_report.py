"""What a compaction replaced, for the user to judge what the model no longer sees verbatim."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from aimon_core.llm import Message, ToolResultBlock

Trigger = Literal["manual", "auto"]

# Tools whose input names a file they read or change, and the parameter holding it.
_FILE_TOOLS = {"Read": "file_path", "Write": "file_path", "Edit": "file_path",
               "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}  # fmt: skip
_CHANGING_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
_FILES_NAMED = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionReport:
    """Counts of what the summary replaced, and the request size before and after.

    `summarised` is False when the summary failed and the fallback shortened tool results
    instead; then `error` says why and the counts describe the results that were shed.
    """

    trigger: Trigger
    tokens_before: int
    tokens_after: int
    messages: int = 0
    turns: int = 0
    tool_results: int = 0
    files_read: tuple[str, ...] = ()
    files_changed: tuple[str, ...] = ()
    summarised: bool = True
    error: str | None = None

    @property
    def saved(self) -> bool:
        """Tell whether the conversation got smaller."""
        return self.tokens_after < self.tokens_before

    @property
    def text(self) -> str:
        """Return a one-paragraph account for the user."""
        sizes = f"{self.tokens_before:,} → {self.tokens_after:,} tokens"
        if not self.summarised:
            why = f" ({self.error})" if self.error else ""
            if not self.tool_results or not self.saved:
                return (f"Conversation not summarised{why}; there was nothing to shorten, so "
                        f"it is unchanged ({self.tokens_before:,} tokens).")
            return (
                f"Conversation not summarised{why}; {sizes} by shortening or removing "
                f"{_plural(self.tool_results, 'old tool result')}. The model no longer sees "
                "their full text."
            )
        if not self.saved:
            return (f"Nothing saved: a summary would be as long as what it replaces "
                    f"({sizes}), so the conversation is unchanged.")
        parts = [_plural(n, noun) for n, noun in ((self.turns, "turn"),
                                                  (self.tool_results, "tool result")) if n]
        files = _files_phrase(self)
        if files:
            parts.append(files)
        replaced = (", ".join(parts[:-1]) + " and " + parts[-1]) if len(parts) > 1 else \
            (parts[0] if parts else "the older messages")
        return (
            f"Conversation compacted ({sizes}). The summary replaced {replaced}; "
            "the model no longer sees them verbatim."
        )


def describe(
    older: Sequence[Message], *, trigger: Trigger, tokens_before: int, tokens_after: int
) -> CompactionReport:
    """Return the report of a summary that replaced `older`."""
    read: dict[str, None] = {}
    changed: dict[str, None] = {}
    results = turns = 0
    for message in older:
        if message.role == "user":
            batch = sum(isinstance(b, ToolResultBlock) for b in message.content)
            results += batch
            turns += batch == 0 and bool(message.text.strip())
        for use in message.tool_uses:
            path = use.input.get(_FILE_TOOLS.get(use.name, ""))
            if isinstance(path, str) and path:
                (changed if use.name in _CHANGING_TOOLS else read)[path] = None
    return CompactionReport(
        trigger=trigger,
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        messages=len(older),
        turns=turns,
        tool_results=results,
        files_read=tuple(p for p in read if p not in changed),
        files_changed=tuple(changed),
    )


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _files_phrase(report: CompactionReport) -> str:
    files = (*report.files_changed, *report.files_read)
    if not files:
        return ""
    named = ", ".join(files[:_FILES_NAMED])
    more = len(files) - _FILES_NAMED
    rest = f" and {more:,} more" if more > 0 else ""
    kinds = []
    if report.files_changed:
        kinds.append(f"{len(report.files_changed):,} changed")
    if report.files_read:
        kinds.append(f"{len(report.files_read):,} read")
    return f"the contents of {_plural(len(files), 'file')} ({' and '.join(kinds)}: {named}{rest})"
