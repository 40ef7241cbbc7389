"""What a caller asks of the composition root: flags, extra parts, and its one error type."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aimon_core.agent import AgentDefinition
    from aimon_core.llm import LLMClient, ModelCallInterceptor
    from aimon_core.memory import ObservationStore
    from aimon_core.observe import ExecutionInterceptor
    from aimon_core.runtime._workflows import WorkflowScope
    from aimon_core.tools import Tool, ToolProvider


class RuntimeSetupError(Exception):
    """The flags or configuration cannot build a runtime; the message says how to fix it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeFlags:
    """What a caller (the command line, a library user) asks for beyond the settings files.

    None means "not given": the settings, the environment and the agent decide.
    """

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    agent: str | None = None
    allowed: tuple[str, ...] = ()
    disallowed: tuple[str, ...] = ()
    permission_mode: str | None = None
    # --sandbox: the OS sandbox on for this run (`sandbox.enabled` in the flags layer).
    sandbox: bool = False
    # --profile: a stored account (provider, endpoint, model, key); the flags above still win.
    profile: str | None = None

    def settings_layer(self) -> dict[str, Any]:
        """Return the model flags in the shape of a settings file (None: not given)."""
        return {"model": self.model, "provider": self.provider, "base_url": self.base_url,
                "sandbox": {"enabled": True} if self.sandbox else None}


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeParts:
    """Extra parts a caller adds to what the settings build (library users, tests).

    `tools` are added to the built-in ones (a rule may name them: `deny: ["word_count"]`);
    `providers` replace the built-in providers; `client` replaces the model client chosen
    from settings and environment (then `model` names the model, default the agent's).
    `workflows` is the application's run store and task slots (None: the runtime's own).
    `interceptors` run around each execution of the runtime's sessions, `model_interceptors`
    around each model call, after aimon's own (the cost ledger, tracing).
    """

    tools: tuple[Tool, ...] = ()
    providers: tuple[ToolProvider, ...] | None = None
    client: LLMClient | None = None
    model: str | None = None
    trust_all: bool = False
    agent_definition: AgentDefinition | None = None
    workflows: WorkflowScope | None = None
    # Where memory is kept (None: files in aimon's data folder).
    memory: ObservationStore | None = None
    interceptors: tuple[ExecutionInterceptor, ...] = ()
    model_interceptors: tuple[ModelCallInterceptor, ...] = ()


NO_FLAGS = RuntimeFlags()
NO_PARTS = RuntimeParts()
