"""Forks: a subagent or a forked skill run in a fresh context, for the session that starts it.

A fork borrows from its runtime (a `ForkBase`, given when the runtime is built): the model
client, the permission policy, the settings' hooks minus the per-turn ones, and the project.
It runs with its own tool list and budget and an `ExecutionId`; it writes nothing to the
session store. Everything else comes from the Turn of the call that starts it: its hooks fire
for that session, its approval questions go to that session's asker (the person sees and
answers them as their own), its "for this session" approvals are that session's, and its
progress goes to that session's event stream as notices.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from aimon_core.agent import (
    AgentDefinition,
    AgentEvent,
    AgentRuntime,
    AgentRuntimeId,
    ApprovalRequested,
    ApprovalResolved,
    ApprovalWithdrawn,
    ExecutionBudget,
    ExecutionId,
    ExecutionRequest,
    ExecutionResult,
    ModelRetrying,
    Notice,
    OrcaExecutor,
    SubagentFinished,
    SubagentStarted,
    SubagentStep,
    ToolCallStarted,
    Turn,
    new_execution_id,
)
from aimon_core.hook import HookEvent, HookRegistry
from aimon_core.llm import LLMClient, Message, ModelSettings, tagged
from aimon_core.runtime._tooling import Restrictions, agent_tools, tool_names
from aimon_core.tools import ToolContext

if TYPE_CHECKING:
    from pathlib import Path

    from aimon_core.agent import AgentExecutor
    from aimon_core.llm import PriceTable
    from aimon_core.permission import PermissionPolicy
    from aimon_core.skill import Skill
    from aimon_core.tools import ToolProvider

# Per-turn hook events a fork does not fire (it fires SubagentStart and SubagentStop instead).
_TURN_EVENTS = frozenset({HookEvent.ON_START, HookEvent.ON_STOP})


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkBase:
    """What a runtime lends the forks its sessions start.

    `tools` (the runtime's own agent's tool list, None: every tool) and `restrictions` (its
    patterns, `Bash(git log:*)`) hold for its forks too: an agent cannot widen its reach by
    starting a subagent.
    """

    project_root: Path
    client: LLMClient
    model: str
    settings: ModelSettings
    policy: PermissionPolicy
    hooks: HookRegistry
    permission_mode: Callable[[], str | None]
    restrictions: Restrictions
    agent_name: str
    tools: tuple[str, ...] | None = None
    # The domains a fork gets beside the built-in tools (memory, the web, knowledge).
    providers: tuple[ToolProvider, ...] = ()
    # What runs a fork (the runtime's interceptors around the Orca executor; None: the Orca
    # executor alone) and what its model calls cost (None: aimon's price table).
    executor: AgentExecutor | None = None
    prices: PriceTable | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkRequest:
    """One fork: which agent, its goal, and its limits.

    `tools` replaces the agent's tool list (a forked skill's intersection); None keeps it.
    """

    agent: AgentDefinition
    goal: str
    tools: tuple[str, ...] | None = None
    max_iterations: int | None = None
    execution_id: ExecutionId | None = None
    # What started it, for the notices: "task", "skill review".
    label: str = "task"
    # The forked skill, whose own `hooks:` run as the fork's hooks (None: a plain subagent).
    skill: Skill | None = None


def fork_runtime(base: ForkBase, agent: AgentDefinition,
                 tools: tuple[str, ...] | None = None) -> AgentRuntime:
    """Return the runtime of a fork of `agent` on the base's client, policy and hooks.

    Raises RuntimeSetupError when the tool list has a bad entry.
    """
    from aimon_core.permission import interactive_gate, restricted_gate
    from aimon_core.session import project_key
    from aimon_core.tools import builtin_providers

    definition = agent if tools is None else replace(agent, tools=tools)
    root = base.project_root
    # A fork gets the built-in tools and the domains (memory, web, knowledge) only: no
    # Skill, no Task (subagents do not nest).
    registry, restrictions = agent_tools(definition, root,
                                         (*builtin_providers(), *base.providers))
    if base.tools is not None:
        registry = registry.only(tool_names(base.tools))
    gate = restricted_gate(interactive_gate(base.policy), restrictions, project_root=root,
                           agent=agent.name)
    gate = restricted_gate(gate, base.restrictions, project_root=root, agent=base.agent_name)
    hooks = HookRegistry([spec for spec in base.hooks.commands
                          if spec.event not in _TURN_EVENTS],
                         project_dir=base.hooks.project_dir)
    return AgentRuntime(
        # Its calls say whose they are (the cost ledger keeps them by agent).
        agent=definition, client=tagged(base.client, agent=agent.name),
        model=_model(agent, base), tools=registry,
        gate=gate, settings=base.settings, hooks=hooks, prices=base.prices,
        id=AgentRuntimeId.of(agent.name, project_key(str(root))),
        permission_mode=base.permission_mode,
    )


def _model(agent: AgentDefinition, base: ForkBase) -> str:
    """Return the agent's own model (an alias as the provider's current one), else the base's."""
    from aimon_core.llm import agent_model

    return agent_model(agent.model.name, base.client.provider, base.model)


async def run_fork(base: ForkBase, request: ForkRequest, parent: Turn, context: ToolContext
                   ) -> ExecutionResult:
    """Run one fork to its end for `parent`'s session; SubagentStart/Stop hooks fire around it.

    `context` is the tool context of whoever starts it (the fork gets fresh read tracking).
    """
    from aimon_core.hook import SubagentStartInput, SubagentStopInput
    from aimon_core.tools import ToolState

    runtime = fork_runtime(base, request.agent, request.tools)
    execution_id = request.execution_id or new_execution_id()
    name = request.agent.name
    _add_skill_hooks(request, runtime, base.project_root, parent.emit)
    # SubagentStart/Stop fire on the session's own hooks; inside, the per-turn ones do not.
    hooks = None if parent.hooks is None else parent.hooks.bound(registry=runtime.hooks)
    if parent.hooks is not None:
        await parent.hooks.fire(SubagentStartInput(agent_id=execution_id, agent_type=name))
    parent.emit(SubagentStarted(agent=name, execution_id=execution_id, label=request.label,
                                goal=request.goal))
    budget = ExecutionBudget(
        max_iterations=request.max_iterations or request.agent.max_iterations or 100)
    turn = Turn(execution_id=execution_id, session_id=parent.session_id, hooks=hooks,
                emit=_relay(name, execution_id, parent.emit), ask=parent.ask,
                turn_approvals=parent.turn_approvals,
                session_approvals=parent.session_approvals,
                before_changes=parent.before_changes)
    result = await (base.executor or OrcaExecutor()).execute(runtime, ExecutionRequest(
        prompt=Message.user(request.goal), turn=turn, budget=budget,
        tool_context=replace(context, state=ToolState(), turn=None)))
    if parent.hooks is not None:
        await parent.hooks.fire(SubagentStopInput(agent_id=execution_id, agent_type=name,
                                                  last_assistant_message=result.text))
    parent.emit(SubagentFinished(agent=name, execution_id=execution_id, label=request.label,
                                 result=result))
    return result


def _add_skill_hooks(request: ForkRequest, runtime: AgentRuntime, root: Path,
                     emit: Callable[[AgentEvent], None]) -> None:
    """Run a forked skill's and its subagent's own hooks in the fork (not from an untrusted
    project folder)."""
    from aimon_core.runtime._skill_hooks import register_skill_hooks, skill_hooks_allowed
    from aimon_core.subagent import agent_hooks

    if runtime.hooks is None:
        return
    try:
        own = agent_hooks(request.agent)
    except ValueError:  # SkillError: a malformed block, whose agent never loaded
        own = None
    for owner in (request.skill, own):
        if owner is None or owner.hooks.is_empty:
            continue
        kind = "skill" if owner is request.skill else "subagent"
        if not skill_hooks_allowed(owner, root):
            emit(Notice(text=f"{kind} {owner.name}: its hooks were not run, because this "
                             "folder is not trusted (run /trust to trust it)", level="warning"))
            continue
        register_skill_hooks(runtime.hooks, owner, runtime.tools, root)


def _relay(name: str, execution_id: str, emit: Callable[[AgentEvent], None]
           ) -> Callable[[AgentEvent], None]:
    """Return a sink that passes a fork's approvals on and tells its steps as its own."""

    def on_event(event: AgentEvent) -> None:
        match event:
            case ApprovalRequested() | ApprovalResolved() | ApprovalWithdrawn():
                emit(event)
            case ToolCallStarted(name=tool, input=tool_input, label=label):
                emit(SubagentStep(agent=name, execution_id=execution_id,
                                  label=label or f"{tool}({_brief(tool_input)})"))
            case Notice(text=text, level=level):
                emit(Notice(text=f"[{name}] {text}", level=level))
            case ModelRetrying(reason=reason):
                emit(Notice(text=f"[{name}] retrying the model call: {reason}",
                            level="warning"))
            case _:
                pass

    return on_event


def _brief(tool_input: Mapping[str, Any]) -> str:
    for key in ("command", "file_path", "path", "pattern", "skill"):
        value = tool_input.get(key)
        if isinstance(value, str):
            return value if len(value) <= 80 else value[:77] + "..."
    return ""


def fork_answer(result: ExecutionResult, agent: str) -> str:
    """Return the fork's final answer, saying why it stopped when it did not finish."""
    if result.stop.ok and result.text.strip():
        return result.text
    why = f"subagent {agent} stopped: {result.reason}"
    return f"{result.text.rstrip()}\n\n({why})" if result.text.strip() else f"({why})"
