"""The built-in tools, in the order the model is told about them."""

from __future__ import annotations

from aimon_core.tools._base import Tool
from aimon_core.tools._file_tools import EDIT_TOOL, READ_TOOL, WRITE_TOOL
from aimon_core.tools._search_tools import GLOB_TOOL, GREP_TOOL
from aimon_core.tools._shell_tools import BASH_OUTPUT_TOOL, BASH_TOOL, KILL_SHELL_TOOL
from aimon_core.tools._todo_tool import TODO_WRITE_TOOL

_BUILTIN: tuple[Tool, ...] = (
    READ_TOOL,
    WRITE_TOOL,
    EDIT_TOOL,
    GLOB_TOOL,
    GREP_TOOL,
    BASH_TOOL,
    BASH_OUTPUT_TOOL,
    KILL_SHELL_TOOL,
    TODO_WRITE_TOOL,
)

# Tools that change nothing outside the session: they may run in parallel and need no
# approval in a read-only permission mode.
READ_ONLY_TOOL_NAMES: frozenset[str] = frozenset(t.name for t in _BUILTIN if t.read_only)


def builtin_tools() -> tuple[Tool, ...]:
    """Return the built-in tools: Read, Write, Edit, Glob, Grep, Bash, BashOutput, KillShell,
    TodoWrite."""
    return _BUILTIN
