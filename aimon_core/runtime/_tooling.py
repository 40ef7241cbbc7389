"""An agent's tools: what its providers give, narrowed to its tool list and its patterns."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from aimon_core.runtime._parts import RuntimeSetupError

if TYPE_CHECKING:
    from aimon_core.agent import AgentDefinition
    from aimon_core.config import Settings
    from aimon_core.tools import Tool, ToolProvider, ToolRegistry

Restrictions = dict[str, tuple[str, ...]]
"""Per tool, the patterns an agent's tool list allows it (`Bash(git log:*)`)."""


def agent_tools(agent: AgentDefinition, root: Path, providers: Iterable[ToolProvider],
                extra: Iterable[Tool] = ()) -> tuple[ToolRegistry, Restrictions]:
    """Return the agent's tool registry and its per-tool patterns.

    The registry holds every provider's tools and `extra` (a library user's own), narrowed
    to the agent's tool list when it has one. Raises RuntimeSetupError for a bad entry.
    """
    from aimon_core.permission import RuleError, tool_restrictions
    from aimon_core.tools import ToolProviderContext, ToolRegistry, provided_tools

    context = ToolProviderContext(project_root=root, agent_name=agent.name)
    tools = ToolRegistry((*provided_tools(providers, context), *extra))
    if agent.disallowed_tools:  # Claude Code's `disallowedTools`: whole tools taken away
        denied = set(tool_names(agent.disallowed_tools))
        tools = tools.only(t.name for t in tools if t.name not in denied)
    if agent.tools is None:
        return tools, {}
    try:
        restrictions = tool_restrictions(agent.tools)
    except RuleError as exc:
        raise RuntimeSetupError(f"{agent.source}: the tool list has a bad entry: {exc}") from None
    return tools.only(tool_names(agent.tools)), restrictions


def tool_names(entries: Iterable[str]) -> list[str]:
    """Return the tool names of a tool list's entries (`Bash(git:*)` names Bash), once each."""
    return list(dict.fromkeys(entry.split("(", 1)[0].strip() for entry in entries))


def lazy_schemas(tools: ToolRegistry, settings: Settings, model: str, provider: str,
                 agent: AgentDefinition) -> None:
    """Give `tools` ToolSearch and the schema budget the settings' `tools.searchThreshold`
    (a share of the model's window, 10 % by default) makes; 1 sends every schema always.

    An agent whose tool list names tools gets exactly those: ToolSearch only if the list
    names it or an MCP tool (whose schemas it loads)."""
    from aimon_core.compact import compaction_settings, context_window
    from aimon_core.tools import DEFAULT_SEARCH_SHARE, TOOL_SEARCH, tool_search_tool

    if agent.tools is not None and not any(
            name.startswith((TOOL_SEARCH, "mcp__")) for name in agent.tools):
        return
    share = settings.tools.search_threshold
    share = DEFAULT_SEARCH_SHARE if share is None else share
    if share >= 1:
        return
    window = context_window(model, provider, compaction_settings(
        context_window=settings.compaction.context_window))
    tools.schema_budget = int(window * share)
    if TOOL_SEARCH not in tools:
        tools.add(tool_search_tool(tools))
