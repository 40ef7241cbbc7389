"""Forks: a subagent or a forked skill run in a fresh context, inside its parent's session.

A fork gets its runtime from the parent's assembly: the same model client, the parent's
permission policy (so the invoking session's approvals and denials apply inside it), the
settings' hooks minus the per-turn ones, and its own tool list. It runs with its own budget and
an execution id; it has no session of its own and writes nothing to the session store. Its
progress goes to the parent's event stream as notices; approval questions go to the parent's
asker, so the person sees and answers them as their own.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from aimon_core.agent import (
    AgentDefinition,
    AgentEvent,
    AgentRuntime,
    AgentRuntimeId,
    ApprovalRequested,
    ApprovalResolved,
    ApprovalWithdrawn,
    Asker,
    ExecutionBudget,
    ExecutionRequest,
    ExecutionResult,
    GateCall,
    GateVerdict,
    ModelRetrying,
    Notice,
    OrcaExecutor,
    ToolCallStarted,
    ToolGate,
)
from aimon_core.hook import HookDispatcher, HookEvent, HookRegistry, PermissionDecision
from aimon_core.llm import Message
from aimon_core.tools import Tool, ToolContext

if TYPE_CHECKING:
    from pathlib import Path

    from aimon_core.runtime._assembly import AgentAssembly
    from aimon_core.skill import Skill

# The tool call being run, captured by the gate for the tools that start forks: the executor
# hands the session's asker, hooks and event sink to the gate only, and the fork needs them.
_CALL: ContextVar[GateCall | None] = ContextVar("aimon_fork_call", default=None)
# Per-turn hook events a fork does not fire (it fires SubagentStart and SubagentStop instead).
_TURN_EVENTS = frozenset({HookEvent.ON_START, HookEvent.ON_STOP})


def _drop(event: AgentEvent) -> None:
    return None


def capturing_gate(inner: ToolGate, names: frozenset[str]) -> ToolGate:
    """Return a gate that remembers the call of the tools in `names`, then asks `inner`."""

    async def gate(tool: Tool, tool_input: Mapping[str, Any], ctx: ToolContext, *,
                   hint: PermissionDecision | None = None,
                   call: GateCall | None = None) -> GateVerdict:
        if tool.name in names:
            # Set in the task that runs this call; the tool's run reads it in the same task.
            _CALL.set(call)
        return await inner(tool, tool_input, ctx, hint=hint, call=call)

    return gate


def current_call() -> GateCall | None:
    """Return the gate call of the forking tool running in this task, if any."""
    return _CALL.get()


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkParent:
    """What a fork borrows from whoever starts it: hooks, the asker and the event sink.

    `session_id` is the invoking session's: the fork has none of its own, but its hooks and
    approvals are that session's.
    """

    tool_context: ToolContext
    session_id: str = ""
    hooks: HookDispatcher | None = None
    ask: Asker | None = None
    emit: Callable[[AgentEvent], None] = field(default=_drop)

    @classmethod
    def of_call(cls, call: GateCall | None, ctx: ToolContext) -> ForkParent:
        """Return the parent of a fork started by a tool call (`current_call()`)."""
        if call is None:
            return cls(tool_context=ctx, session_id=ctx.session_id)
        return cls(tool_context=ctx, session_id=ctx.session_id, hooks=call.hooks, ask=call.ask,
                   emit=call.emit)


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkRequest:
    """One fork: which agent, its goal, and its limits.

    `tools` replaces the agent's tool list (a forked skill's intersection); None keeps it.
    """

    agent: AgentDefinition
    goal: str
    tools: tuple[str, ...] | None = None
    max_iterations: int | None = None
    execution_id: str = ""
    # What started it, for the notices: "task", "skill review".
    label: str = "task"
    # The forked skill, whose own `hooks:` run as the fork's hooks (None: a plain subagent).
    skill: Skill | None = None


def new_execution_id() -> str:
    """Return a fresh ExecutionId for a fork."""
    return f"exec-{uuid.uuid4().hex[:12]}"


def fork_runtime(assembly: AgentAssembly, agent: AgentDefinition,
                 tools: tuple[str, ...] | None = None) -> AgentRuntime:
    """Return the runtime of a fork of `agent` on the parent's client, policy and hooks.

    Raises RuntimeSetupError when the tool list has a bad entry.
    """
    from aimon_core.permission import interactive_gate, restricted_gate
    from aimon_core.runtime._build import RuntimeParts, _agent_tools
    from aimon_core.session import project_key
    from aimon_core.tools import builtin_providers

    definition = agent if tools is None else replace(agent, tools=tools)
    root = assembly.project_root
    # A fork gets the built-in tools only: no Skill, no Task (subagents do not nest).
    registry, restrictions, _ = _agent_tools(definition, root,
                                             RuntimeParts(providers=builtin_providers()))
    parent = assembly.runtime
    gate = restricted_gate(interactive_gate(assembly.policy), restrictions, project_root=root,
                           agent=agent.name)
    hooks = HookRegistry([spec for spec in assembly.hooks.commands
                          if spec.event not in _TURN_EVENTS],
                         project_dir=assembly.hooks.project_dir)
    return AgentRuntime(
        agent=definition, client=parent.client, model=_model(agent, parent), tools=registry,
        gate=gate, settings=parent.settings, hooks=hooks,
        id=AgentRuntimeId.of(agent.name, project_key(str(root))),
        permission_mode=parent.permission_mode,
    )


def _model(agent: AgentDefinition, parent: AgentRuntime) -> str:
    """Return the agent's own model when the parent's provider serves it, else the parent's."""
    wanted = agent.model.name
    if wanted is None:
        return parent.model
    implied = "anthropic" if wanted.startswith("claude") else (
        "openai" if wanted.startswith(("gpt", "o3", "o4")) else None)
    return wanted if implied == parent.client.provider else parent.model


async def run_fork(assembly: AgentAssembly, request: ForkRequest, parent: ForkParent
                   ) -> ExecutionResult:
    """Run one fork to its end; SubagentStart and SubagentStop hooks fire around it."""
    from aimon_core.tools import ToolState

    runtime = fork_runtime(assembly, request.agent, request.tools)
    execution_id = request.execution_id or new_execution_id()
    name = request.agent.name
    _add_skill_hooks(request, runtime, assembly.project_root, parent.emit)
    # SubagentStart/Stop fire on the session's own hooks; inside, the per-turn ones do not.
    hooks = None if parent.hooks is None else parent.hooks.bound(registry=runtime.hooks)
    if parent.hooks is not None:
        await parent.hooks.fire(HookEvent.SUBAGENT_START, agent_id=execution_id,
                                agent_type=name)
    parent.emit(Notice(text=f"{request.label}: subagent {name} started ({execution_id})"))
    budget = ExecutionBudget(
        max_iterations=request.max_iterations or request.agent.max_iterations or 100)
    context = replace(parent.tool_context, session_id="", state=ToolState())
    result = await OrcaExecutor().execute(runtime, ExecutionRequest(
        prompt=Message.user(request.goal), tool_context=context, budget=budget, hooks=hooks,
        ask=parent.ask, on_event=_relay(name, parent.emit), execution_id=execution_id))
    if parent.hooks is not None:
        await parent.hooks.fire(HookEvent.SUBAGENT_STOP, agent_id=execution_id,
                                agent_type=name, last_assistant_message=result.text)
    parent.emit(Notice(text=f"{request.label}: subagent {name} finished "
                            f"({result.stop.value}, {result.tool_calls} tool calls)"))
    return result


def _add_skill_hooks(request: ForkRequest, runtime: AgentRuntime, root: Path,
                     emit: Callable[[AgentEvent], None]) -> None:
    """Run a forked skill's own hooks in its fork (not from an untrusted project folder)."""
    from aimon_core.runtime._skill_hooks import register_skill_hooks, skill_hooks_allowed

    skill = request.skill
    if skill is None or skill.hooks.is_empty or runtime.hooks is None:
        return
    if not skill_hooks_allowed(skill, root):
        emit(Notice(text=f"skill {skill.name}: its hooks were not run, because this folder is "
                         "not trusted (run /trust to trust it)", level="warning"))
        return
    register_skill_hooks(runtime.hooks, skill, runtime.tools, root)


def _relay(name: str, emit: Callable[[AgentEvent], None]) -> Callable[[AgentEvent], None]:
    """Return a sink that passes a fork's approvals on and turns its progress into notices."""

    def on_event(event: AgentEvent) -> None:
        match event:
            case ApprovalRequested() | ApprovalResolved() | ApprovalWithdrawn():
                emit(event)
            case ToolCallStarted(name=tool, input=tool_input):
                emit(Notice(text=f"[{name}] {tool} {_brief(tool_input)}".rstrip()))
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
