"""The built-in tools, in the order the model is told about them."""

from __future__ import annotations

from aimon_core.tools._base import Tool
from aimon_core.tools._providers import FILE_TOOLS, SHELL_TOOLS, TODO_TOOLS

_BUILTIN: tuple[Tool, ...] = (*FILE_TOOLS.provided, *SHELL_TOOLS.provided, *TODO_TOOLS.provided)

# Tools that change nothing outside the session: they may run in parallel and need no
# approval in a read-only permission mode.
READ_ONLY_TOOL_NAMES: frozenset[str] = frozenset(t.name for t in _BUILTIN if t.read_only)


def builtin_tools() -> tuple[Tool, ...]:
    """Return the built-in tools: Read, Write, Edit, Glob, Grep, Bash, BashOutput, KillShell,
    TodoWrite."""
    return _BUILTIN
