"""Tools: the Tool value, its registry and schema gate, and the built-in tools."""

from aimon_core.tools._base import (
    CommandSubject,
    PathSubject,
    Subject,
    Tool,
    ToolContext,
    ToolInput,
    ToolInputError,
    ToolRegistry,
    ToolResult,
    ToolRun,
    check_input,
    execute_tool,
)
from aimon_core.tools._state import TODO_STATUSES, Todo, TodoStatus, ToolState
from aimon_core.tools.builtin import READ_ONLY_TOOL_NAMES, builtin_tools

__all__ = [
    "READ_ONLY_TOOL_NAMES",
    "TODO_STATUSES",
    "CommandSubject",
    "PathSubject",
    "Subject",
    "Todo",
    "TodoStatus",
    "Tool",
    "ToolContext",
    "ToolInput",
    "ToolInputError",
    "ToolRegistry",
    "ToolResult",
    "ToolRun",
    "ToolState",
    "builtin_tools",
    "check_input",
    "execute_tool",
]
