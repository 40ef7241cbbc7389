"""Subagents: agent definitions found by layer; the executor joins later."""

from aimon_core.subagent._registry import (
    AgentRegistry,
    AgentRoots,
    agent_hooks,
    builtin_agent_names,
    default_agent_roots,
    hooked_agents,
    load_agents,
    load_named_agent,
    read_partials,
    scan_agent_folder,
)

__all__ = [
    "AgentRegistry",
    "AgentRoots",
    "agent_hooks",
    "builtin_agent_names",
    "default_agent_roots",
    "hooked_agents",
    "load_agents",
    "load_named_agent",
    "read_partials",
    "scan_agent_folder",
]
