"""Tools: the Tool value, its registry and schema gate, and the built-in tools."""

from aimon_core.tools._base import (
    CommandSubject,
    NameSubject,
    PathFilter,
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
    warm_validators,
)
from aimon_core.tools._declare import tool
from aimon_core.tools._providers import (
    StaticToolProvider,
    ToolProvider,
    ToolProviderContext,
    builtin_providers,
    provided_tools,
)
from aimon_core.tools._state import TODO_STATUSES, Todo, TodoStatus, ToolState
from aimon_core.tools.builtin import READ_ONLY_TOOL_NAMES, builtin_tools

__all__ = [
    "READ_ONLY_TOOL_NAMES",
    "TODO_STATUSES",
    "CommandSubject",
    "NameSubject",
    "PathFilter",
    "PathSubject",
    "StaticToolProvider",
    "Subject",
    "Todo",
    "TodoStatus",
    "Tool",
    "ToolContext",
    "ToolInput",
    "ToolInputError",
    "ToolProvider",
    "ToolProviderContext",
    "ToolRegistry",
    "ToolResult",
    "ToolRun",
    "ToolState",
    "builtin_providers",
    "builtin_tools",
    "check_input",
    "execute_tool",
    "provided_tools",
    "tool",
    "warm_validators",
]
