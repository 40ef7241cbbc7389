"""Who closes a runner: the runtime closes its own; a runner made for one call, the call."""

from __future__ import annotations

import asyncio
from pathlib import Path

from aimon_core.agent import ExecutionResult, StopCause, Turn
from aimon_core.llm import Usage
from aimon_core.tools import ToolContext, ToolInput, ToolProviderContext
from aimon_core.workflow import (
    CommandResult,
    MemoryRunStore,
    RunState,
    TaskRun,
    WorkflowRunner,
    WorkflowToolProvider,
    load_workflows,
)
from tests.workflow.conftest import HeldClient, assemble, by_prompt, make_project


def test_the_runtime_closes_its_runner_and_a_run_in_progress_stays_resumable(
        tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    held = HeldClient(by_prompt({}, calls=0))
    store = MemoryRunStore()

    async def go() -> None:
        assembly = assemble(root, held, store=store)  # type: ignore[arg-type]
        async with assembly:
            assert assembly.workflows is not None
            library = await asyncio.to_thread(assembly.workflows.library)
            pipeline = library.get("survey")
            assert pipeline is not None
            await assembly.workflows.runner.start(pipeline, project_root=root)
            await asyncio.wait_for(held.arrived.wait(), 10)
        # Leaving the runtime closed its runner: the run was stopped and recorded so.

    asyncio.run(go())
    (run,) = store.list_runs(None, 5)
    assert run.state is RunState.INTERRUPTED
    assert [t.state.value for t in store.load(run.id).tasks] == ["stopped", "stopped"]


class Instant:
    """A task executor that answers every task at once."""

    def agent_names(self) -> tuple[str, ...]:
        return ("explore", "general-purpose")

    def resolve_agent(self, name: str) -> str | None:
        return name if name in self.agent_names() else None

    async def execute(self, task: TaskRun, turn: Turn) -> ExecutionResult:
        return ExecutionResult(stop=StopCause.ANSWERED, reason="answered", text="ok",
                               new_messages=(), usage=Usage(), cost_usd=0.0, iterations=1,
                               tool_calls=0, duration_s=0.0)

    async def run_command(self, command: str, folder: Path, turn: Turn) -> CommandResult:
        return CommandResult(passed=True, output="")


def test_a_runner_made_for_one_call_is_closed_by_the_call(tmp_path: Path) -> None:
    from aimon_core.filesystem import LocalFileSystem
    from aimon_core.shell import LocalShell
    from aimon_core.tools import ToolState

    root = make_project(tmp_path / "p")
    ctx = ToolContext(project_root=root, cwd=root, fs=LocalFileSystem(root), shell=LocalShell(),
                      state=ToolState())
    made: list[WorkflowRunner] = []

    def new_runner() -> WorkflowRunner:
        made.append(WorkflowRunner(Instant(), store=MemoryRunStore()))
        return made[-1]

    provider = WorkflowToolProvider(lambda: load_workflows(root), new_runner=new_runner)
    (tool,) = provider.tools(ToolProviderContext(project_root=root, agent_name="default"))
    assert "- survey: 2 stages" in tool.description

    async def call() -> str:
        result = await tool.run(ToolInput({"workflow": "survey"}), ctx)
        return result.text

    assert asyncio.run(call()).startswith("Workflow survey run run-")
    assert len(made) == 1 and made[0].running() == ()
    try:
        asyncio.run(made[0].start(load_workflows(root).get("survey"),  # type: ignore[arg-type]
                                  project_root=root))
    except Exception as exc:
        assert "closed" in str(exc)
    else:
        raise AssertionError("the call's runner must be closed after the call")
