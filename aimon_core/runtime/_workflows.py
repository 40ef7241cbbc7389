"""Workflows in a runtime: its task executor, its runner, the Workflow tool's provider.

Every agent runtime can run the project's workflows (`aimon_core.workflow`). What the tasks
borrow is the runtime's, as a fork's is (`ForkBase`): the model client, the permission rules
and mode, the hooks, the agent's tool list as a restriction; each task runs as its own agent
with that agent's tools. A task in a worktree gets the same rules anchored at its worktree
(and the OS sandbox, when on, with the worktree as its project, aimon's folders still
unreadable). The application gives the run store and the task slots (`WorkflowScope`); the
runner is made on first use and closed with the runtime.

Nothing here imports `aimon_core.workflow` until a workflow is used: `aimon -p` in a project
without workflows never loads it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from aimon_core.runtime._fork import ForkBase, fork_runtime

if TYPE_CHECKING:
    from aimon_core.agent import AgentDefinition, ExecutionResult, Turn
    from aimon_core.hook import HookDispatcher
    from aimon_core.llm import LLMClient, LLMRequest, LLMResponse, StreamEvent
    from aimon_core.permission import PermissionPolicy
    from aimon_core.runtime._assembly import AgentAssembly
    from aimon_core.runtime._sandbox import SandboxSetup
    from aimon_core.subagent import AgentRegistry
    from aimon_core.tools import Tool, ToolProviderContext
    from aimon_core.workflow import (
        CommandResult,
        RunStore,
        TaskRun,
        TaskSlots,
        WorkflowLibrary,
        WorkflowRunner,
    )

# The Workflow tool's name (aimon_core.workflow.WORKFLOW_TOOL_NAMES), known without loading it.
WORKFLOW_TOOL_NAMES = ("Workflow",)
_SUFFIXES = (".yaml", ".yml")
_CHECK_TIMEOUT_MS = 600_000


class WorkflowScope:
    """The application's part of workflow runs: where they are kept, how many tasks run at
    once across all of them. Each is made on first use."""

    def __init__(self, store: RunStore | None = None, *, max_tasks: int = 4) -> None:
        self._store = store
        self._slots: TaskSlots | None = None
        self.max_tasks = max_tasks

    @property
    def store(self) -> RunStore:
        """Return the run store (the file store under aimon's data folder by default)."""
        if self._store is None:
            from aimon_core.workflow import default_run_store

            self._store = default_run_store()
        return self._store

    @property
    def slots(self) -> TaskSlots:
        """Return the application's task slots."""
        if self._slots is None:
            from aimon_core.workflow import TaskSlots, WorkflowConcurrency

            self._slots = TaskSlots(WorkflowConcurrency(max_tasks=self.max_tasks))
        return self._slots


def has_workflow_files(project_root: Path, user_dir: Path | None) -> bool:
    """Tell whether the project or the user has any workflow file (a folder listing only)."""
    folders = [project_root / ".aimon" / "workflows"]
    if user_dir is not None:
        folders.append(user_dir / "workflows")
    for folder in folders:
        try:
            with os.scandir(folder) as entries:
                if any(e.name.endswith(_SUFFIXES) and not e.name.startswith(".")
                       for e in entries):
                    return True
        except OSError:
            continue
    return False


@dataclass(frozen=True, slots=True, kw_only=True)
class _Place:
    """What a task borrows in one folder: the fork base, its rules, its sandbox."""

    base: ForkBase
    policy: PermissionPolicy
    sandbox: SandboxSetup | None


class ForkTasks:
    """A runtime's task executor: each task is a fork of the runtime, as its own agent."""

    def __init__(self, base: ForkBase, agents: AgentRegistry,
                 assembly: Callable[[], AgentAssembly]) -> None:
        self.base = base
        self.agents = agents
        self._assembly = assembly

    def agent_names(self) -> tuple[str, ...]:
        """Return the subagents a task may name."""
        return self.agents.names()

    def resolve_agent(self, name: str) -> str | None:
        """Return the agent `name` means: itself, or the one agent named so in another case
        (Claude Code's `Explore` is `explore`)."""
        wanted = name.strip()
        if self.agents.get(wanted) is not None:
            return wanted
        folded = [n for n in self.agents.names() if n.lower() == wanted.lower()]
        return folded[0] if len(folded) == 1 else None

    def _agent(self, name: str) -> AgentDefinition:
        agent = self.agents.get(name)
        if agent is None:
            raise RuntimeError(f"no agent {name!r} (agents: {', '.join(self.agent_names())})")
        return agent

    def _place(self, folder: Path) -> _Place:
        """Return what a task borrows in `folder`: the runtime's, or the same anchored there."""
        assembly = self._assembly()
        if folder == self.base.project_root:
            return _Place(base=self.base, policy=self.base.policy, sandbox=assembly.sandbox)
        from aimon_core.permission import PermissionPolicy

        policy = self.base.policy
        rooted = PermissionPolicy(policy.rules, policy.mode, folder, extra_dirs=policy.extra_dirs,
                                  agent_scope=policy.agent_scope)
        sandbox = _worktree_sandbox(assembly.sandbox, rooted)
        return _Place(base=replace(self.base, project_root=folder, policy=rooted),
                      policy=rooted, sandbox=sandbox)

    async def execute(self, task: TaskRun, turn: Turn) -> ExecutionResult:
        """Run one execution of a task, as a fork of the runtime in the task's folder."""
        from aimon_core.agent import ExecutionBudget, ExecutionRequest, OrcaExecutor
        from aimon_core.hook import SubagentStartInput, SubagentStopInput
        from aimon_core.llm import Message

        agent = self._agent(task.agent)
        place = self._place(task.folder)
        runtime = replace(fork_runtime(place.base, agent),
                          client=_StopPoint(place.base.client))
        limits = task.limits
        budget = ExecutionBudget(
            max_iterations=limits.max_iterations or agent.max_iterations or 100,
            max_tokens=limits.max_tokens, max_seconds=limits.max_seconds)
        outer = turn.hooks or self._dispatcher(task.folder)
        context = self._assembly().tool_context(root=task.folder, policy=place.policy,
                                                sandbox=place.sandbox)
        await outer.fire(SubagentStartInput(agent_id=turn.execution_id, agent_type=agent.name))
        try:
            result = await OrcaExecutor().execute(runtime, ExecutionRequest(
                prompt=Message.user(task.prompt), history=task.history, budget=budget,
                tool_context=context,
                turn=replace(turn, hooks=outer.bound(registry=runtime.hooks, cwd=task.folder))))
        finally:
            await context.shell.close()
        await outer.fire(SubagentStopInput(agent_id=turn.execution_id, agent_type=agent.name,
                                           last_assistant_message=result.text))
        return result

    def _dispatcher(self, folder: Path) -> HookDispatcher:
        """Return the hooks of work done for no session (a run from the command line)."""
        from aimon_core.hook import HookDispatcher

        return HookDispatcher(self.base.hooks, cwd=folder,
                              permission_mode=self.base.permission_mode)

    async def run_command(self, command: str, folder: Path, turn: Turn) -> CommandResult:
        """Run `command` in `folder` as the runtime's Bash tool, after its permission gate."""
        from aimon_core.permission import interactive_gate, restricted_gate
        from aimon_core.tools import execute_tool
        from aimon_core.workflow import CommandResult

        place = self._place(folder)
        bash = _bash_tool()
        gate = restricted_gate(interactive_gate(place.policy), place.base.restrictions,
                               project_root=folder, agent=place.base.agent_name)
        context = replace(self._assembly().tool_context(root=folder, policy=place.policy,
                                                        sandbox=place.sandbox), turn=turn)
        call = {"command": command, "timeout": _CHECK_TIMEOUT_MS,
                "description": "a command the workflow runs"}
        try:
            verdict = await gate(bash, call, context, tool_use_id=f"wf-{turn.execution_id}")
            if not verdict.allowed:
                return CommandResult(passed=False, output=verdict.message, refused=True)
            result = await execute_tool(bash, call, context)
        finally:
            await context.shell.close()
        return CommandResult(passed=not result.is_error, output=result.text)


class _StopPoint:
    """A task's model client: each call lets the loop run once before the request is made.

    A task is stopped (its cost limit, the workflow's budget) by cancelling it as a model call
    begins (`IterationStarted`); the executor reaches the client without suspending, so
    without this pause the request would be made, and paid for, before the stop landed.
    """

    def __init__(self, inner: LLMClient) -> None:
        self._inner = inner

    @property
    def provider(self) -> str:
        """Return the provider of the runtime's client."""
        return self._inner.provider

    async def call(self, request: LLMRequest) -> LLMResponse:
        """Pause once, then run the call."""
        await asyncio.sleep(0)
        return await self._inner.call(request)

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Pause once, then stream the call."""
        await asyncio.sleep(0)
        async for event in self._inner.stream(request):
            yield event

    async def aclose(self) -> None:
        """Close nothing: the client is the runtime's, closed with it."""


def _bash_tool() -> Tool:
    from aimon_core.tools import builtin_tools

    return next(tool for tool in builtin_tools() if tool.name == "Bash")


def _worktree_sandbox(setup: SandboxSetup | None, policy: PermissionPolicy
                      ) -> SandboxSetup | None:
    """Return the sandbox of a worktree (its project), with aimon's folders still unreadable.

    A worktree lies under aimon's data folder, which the sandbox of a project inside it would
    leave readable (every project's sessions): it is masked here, the worktree bound in it.
    """
    if setup is None or setup.config is None or setup.probe is None:
        return setup
    from aimon_core.permission import SandboxedBash, sandbox_paths
    from aimon_core.session import user_config_dir, user_data_dir

    paths = sandbox_paths(setup.settings, policy.project_root, policy.extra_dirs)
    hidden = tuple(dict.fromkeys((*paths.deny_read, user_config_dir(), user_data_dir())))
    config = replace(setup.config, paths=replace(paths, deny_read=hidden))
    policy.sandbox = SandboxedBash(config=config, auto_allow=setup.settings.auto_allow)
    return replace(setup, config=config)


class RuntimeWorkflows:
    """One runtime's workflows: the project's definitions, the runner (made on first use,
    closed with the runtime) and the Workflow tool."""

    def __init__(self, *, project_root: Path, tasks: ForkTasks, scope: WorkflowScope,
                 readable: Callable[[Path], bool] | None = None) -> None:
        self.project_root = project_root
        self.tasks = tasks
        self.scope = scope
        self._readable = readable
        self._runner: WorkflowRunner | None = None

    def library(self) -> WorkflowLibrary:
        """Load the project's (and the user's) workflows now (blocking: it reads files)."""
        from aimon_core.workflow import load_workflows

        return load_workflows(self.project_root, readable=self._readable)

    @property
    def runner(self) -> WorkflowRunner:
        """Return the runtime's runner (made on first use; the runtime closes it)."""
        if self._runner is None:
            from aimon_core.workflow import WorkflowRunner

            self._runner = WorkflowRunner(self.tasks, store=self.scope.store,
                                          slots=self.scope.slots)
        return self._runner

    def provider(self) -> WorkflowTools:
        """Return the provider of the Workflow tool."""
        return WorkflowTools(self)

    async def aclose(self) -> None:
        """Stop the runs in progress (they stay resumable)."""
        if self._runner is not None:
            await self._runner.aclose()


@dataclass(frozen=True, slots=True)
class WorkflowTools:
    """Gives a runtime the Workflow tool when the project or the user has workflows."""

    workflows: RuntimeWorkflows
    name: str = "workflows"
    names: tuple[str, ...] = WORKFLOW_TOOL_NAMES

    def tools(self, context: ToolProviderContext) -> Iterable[Tool]:
        """Return the Workflow tool (none when there is no workflow file)."""
        from aimon_core.session import user_config_dir

        if not has_workflow_files(self.workflows.project_root, user_config_dir()):
            return ()
        from aimon_core.workflow import WorkflowToolProvider

        return WorkflowToolProvider(self.workflows.library, runner=self.workflows.runner
                                    ).tools(context)
