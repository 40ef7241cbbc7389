"""What a tool result means beyond its text, typed: a front end renders these, never a dict.

A tool puts one of these on `ToolResult.detail`; the REPL renders a diff, a checklist or a read
summary from it without knowing which tool made it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class FileChange:
    """A file was created or changed: the unified diff of the change."""

    path: str
    diff: str
    created: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class FileRead:
    """Lines `first_line`..`last_line` of a file of `total_lines` were read."""

    path: str
    first_line: int
    last_line: int
    total_lines: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TodoItem:
    """One entry of the model's todo list."""

    content: str
    status: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TodoList:
    """The model's todo list after the call."""

    items: tuple[TodoItem, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandRun:
    """A shell command ran: how it ended."""

    command: str
    exit_code: int | None
    timed_out: bool = False
    interrupted: bool = False


ToolDetail = FileChange | FileRead | TodoList | CommandRun
