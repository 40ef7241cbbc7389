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
from aimon_core.tools._detail import (
    CommandRun,
    FileChange,
    FileRead,
    TodoItem,
    TodoList,
    ToolDetail,
)
from aimon_core.tools._names import (
    CLAUDE_CODE_TOOLS,
    closest_name,
    is_mcp_name,
    tool_list_notes,
)
from aimon_core.tools._preview import ProposedChange, call_label, proposed_change
from aimon_core.tools._providers import (
    StaticToolProvider,
    ToolProvider,
    ToolProviderContext,
    builtin_providers,
    provided_names,
    provided_tools,
)
from aimon_core.tools._state import TODO_STATUSES, Todo, TodoStatus, ToolState
from aimon_core.tools.builtin import READ_ONLY_TOOL_NAMES, builtin_tools

__all__ = [
    "CLAUDE_CODE_TOOLS",
    "READ_ONLY_TOOL_NAMES",
    "TODO_STATUSES",
    "CommandRun",
    "CommandSubject",
    "FileChange",
    "FileRead",
    "NameSubject",
    "PathFilter",
    "PathSubject",
    "ProposedChange",
    "StaticToolProvider",
    "Subject",
    "Todo",
    "TodoItem",
    "TodoList",
    "TodoStatus",
    "Tool",
    "ToolContext",
    "ToolDetail",
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
    "call_label",
    "check_input",
    "closest_name",
    "execute_tool",
    "is_mcp_name",
    "proposed_change",
    "provided_names",
    "provided_tools",
    "tool",
    "tool_list_notes",
    "warm_validators",
]
