"""AgentRuntime: one agent's model client, tools and tool gate, shared by its sessions."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from aimon_core.agent._definition import AgentDefinition
from aimon_core.agent._prompt import ContextSource
from aimon_core.hook import HookRegistry, PermissionDecision
from aimon_core.llm import LLMClient, ModelSettings
from aimon_core.tools import ConcurrencyBehavior, SchemaGate, Tool, ToolContext, ToolRegistry

if TYPE_CHECKING:
    from aimon_core.llm import PriceTable


@dataclass(frozen=True, slots=True)
class AgentRuntimeId:
    """A runtime's stable id: `agent:<name>` or `agent:<name>:<discriminator>`."""

    value: str

    @classmethod
    def of(cls, agent_name: str, discriminator: str | None = None) -> AgentRuntimeId:
        """Return the deterministic id of an agent (and optional discriminator)."""
        safe = re.sub(r"[^A-Za-z0-9_.-]", "-", agent_name)
        return cls(f"agent:{safe}" + (f":{discriminator}" if discriminator else ""))

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True, kw_only=True)
class GateVerdict:
    """Whether a tool call may run; `message` tells the model why not.

    `read_only`: the gate proved that this call changes nothing (a command every part of
    which is known read-only, as the permission layer's own read-only check decides). Such a
    call's start is recorded without an fsync, as a read-only tool's is. `updated_input`:
    the call runs with this input instead (the person edited it before allowing it).
    """

    allowed: bool
    message: str = ""
    decided_by: str = ""
    read_only: bool = False
    updated_input: Mapping[str, Any] | None = None


class ToolGate(Protocol):
    """Decides whether one tool call may run; may ask through the turn (`ctx.turn.ask`).

    `ctx.turn` is the execution the call belongs to: its hooks fire PermissionRequest, its
    asker asks the person, its event sink hears the approval events, and its approvals are the
    session's. `hint` carries a PreToolUse hook's permission decision: ALLOW skips asking (deny
    rules still win), ASK asks even where a rule would allow. `tool_use_id` names the call.
    """

    async def __call__(
        self,
        tool: Tool,
        tool_input: Mapping[str, Any],
        ctx: ToolContext,
        *,
        hint: PermissionDecision | None = None,
        tool_use_id: str = "",
    ) -> GateVerdict:
        """Return whether the call may run."""
        ...


async def allow_all(
    tool: Tool,
    tool_input: Mapping[str, Any],
    ctx: ToolContext,
    *,
    hint: PermissionDecision | None = None,
    tool_use_id: str = "",
) -> GateVerdict:
    """Allow every tool call (for tests and trusted programmatic use)."""
    return GateVerdict(allowed=True, decided_by="allow_all")


async def read_only(
    tool: Tool,
    tool_input: Mapping[str, Any],
    ctx: ToolContext,
    *,
    hint: PermissionDecision | None = None,
    tool_use_id: str = "",
) -> GateVerdict:
    """Allow read-only tools only: the safe default when no permission policy is given."""
    if tool.read_only:
        return GateVerdict(allowed=True, decided_by="read-only tool")
    return GateVerdict(
        allowed=False,
        message=f"{tool.name} is not allowed: this agent runs without a permission policy, "
        "which allows read-only tools only.",
        decided_by="default gate",
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentRuntime:
    """One agent's model client, model, tools and gate; created once, never closed by a session."""

    agent: AgentDefinition
    client: LLMClient
    model: str
    tools: ToolRegistry
    gate: ToolGate = read_only
    settings: ModelSettings = field(default_factory=ModelSettings)
    hooks: HookRegistry | None = None
    id: AgentRuntimeId | None = None
    # The permission mode in force, read when a hook fires (the policy's, when it has one).
    permission_mode: Callable[[], str | None] = field(default=lambda: "default")
    # Whether consecutive read-only calls run together (settings: `tools.concurrency`).
    concurrency: ConcurrencyBehavior = ConcurrencyBehavior.PARALLEL
    # What the schema gate does with input that does not fit (settings: `tools.schemaGate`).
    schema_gate: SchemaGate = SchemaGate.STRICT
    # Context providers refreshed at each turn (None: the environment is described once, in
    # the system prompt, as for a fork).
    context: ContextSource | None = None
    # What a model call costs (the settings' `prices` over aimon's table); None: the table.
    prices: PriceTable | None = None

    @property
    def runtime_id(self) -> AgentRuntimeId:
        """Return the id, derived from the agent's name when not given."""
        return self.id or AgentRuntimeId.of(self.agent.name)
