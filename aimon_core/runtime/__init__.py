"""Assembling agents: `build_runtime`, `AgentAssembly`, `AgentRuntimeRegistry`, `Application`.

The one composition root: the command line, the REPL, subagent and skill forks and library
callers all get their runtimes here. The scopes, outermost first: `Application` (start to
shutdown), `AgentAssembly` (one agent's runtime, shared by its sessions), then the session's
own (`aimon_core.live.LiveSession`) and each execution's (`aimon_core.agent.Turn`).
"""

from aimon_core.runtime._application import Application
from aimon_core.runtime._assembly import AgentAssembly, default_store
from aimon_core.runtime._build import build_runtime
from aimon_core.runtime._configure import choose_model, find_agent, load_runtime_settings
from aimon_core.runtime._extensions import listing_text
from aimon_core.runtime._parts import RuntimeFlags, RuntimeParts, RuntimeSetupError
from aimon_core.runtime._registry import AgentRuntimeRegistry, TrustAsker

__all__ = [
    "AgentAssembly",
    "AgentRuntimeRegistry",
    "Application",
    "RuntimeFlags",
    "RuntimeParts",
    "RuntimeSetupError",
    "TrustAsker",
    "build_runtime",
    "choose_model",
    "default_store",
    "find_agent",
    "listing_text",
    "load_runtime_settings",
]
