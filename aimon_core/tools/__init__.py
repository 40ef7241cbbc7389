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

__all__ = [
    "CommandSubject",
    "PathSubject",
    "Subject",
    "Tool",
    "ToolContext",
    "ToolInput",
    "ToolInputError",
    "ToolRegistry",
    "ToolResult",
    "ToolRun",
    "check_input",
    "execute_tool",
]
