"""Tools: the Tool value, its registry and schema gate, and the built-in tools."""

from aimon_core.tools._artifacts import Artifact, collect_artifacts
from aimon_core.tools._base import (
    CommandSubject,
    DomainSubject,
    NameSubject,
    PathFilter,
    PathSubject,
    SchemaGate,
    ServerSubject,
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
    subject_name,
    url_host,
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
from aimon_core.tools._interrupt import (
    ConcurrencyBehavior,
    FinishedOnInterruptError,
    InterruptBehavior,
    run_to_end,
)
from aimon_core.tools._mentions import MENTION, NO_MENTIONS, Mentions, attach_mentions
from aimon_core.tools._names import (
    CLAUDE_CODE_TOOLS,
    closest_name,
    is_mcp_name,
    tool_list_notes,
)
from aimon_core.tools._output import LiveOutput
from aimon_core.tools._owned import ParamPatterns, RuleMatcher, RuleSubject
from aimon_core.tools._preview import ProposedChange, call_label, proposed_change
from aimon_core.tools._providers import (
    StaticToolProvider,
    ToolProvider,
    ToolProviderContext,
    builtin_providers,
    provided_names,
    provided_tools,
)
from aimon_core.tools._search import (
    DEFAULT_SHARE as DEFAULT_SEARCH_SHARE,
)
from aimon_core.tools._search import TOOL_SEARCH, schema_tokens, tool_search_tool
from aimon_core.tools._state import TODO_STATUSES, Todo, TodoStatus, ToolState
from aimon_core.tools.builtin import READ_ONLY_TOOL_NAMES, builtin_tools

__all__ = [
    "CLAUDE_CODE_TOOLS",
    "DEFAULT_SEARCH_SHARE",
    "MENTION",
    "NO_MENTIONS",
    "READ_ONLY_TOOL_NAMES",
    "TODO_STATUSES",
    "TOOL_SEARCH",
    "Artifact",
    "CommandRun",
    "CommandSubject",
    "ConcurrencyBehavior",
    "DomainSubject",
    "FileChange",
    "FileRead",
    "FinishedOnInterruptError",
    "InterruptBehavior",
    "LiveOutput",
    "Mentions",
    "NameSubject",
    "ParamPatterns",
    "PathFilter",
    "PathSubject",
    "ProposedChange",
    "RuleMatcher",
    "RuleSubject",
    "SchemaGate",
    "ServerSubject",
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
    "attach_mentions",
    "builtin_providers",
    "builtin_tools",
    "call_label",
    "check_input",
    "closest_name",
    "collect_artifacts",
    "execute_tool",
    "is_mcp_name",
    "proposed_change",
    "provided_names",
    "provided_tools",
    "run_to_end",
    "schema_tokens",
    "subject_name",
    "tool",
    "tool_list_notes",
    "tool_search_tool",
    "url_host",
    "warm_validators",
]
