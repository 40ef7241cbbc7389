"""WorkflowRunner: starts, resumes and stops workflow runs for one scope.

Every agent runtime has one (`AgentAssembly.workflows`), made with that runtime's task
executor and its application's run store and task slots, and closed by the runtime: the
REPL's `/workflow`, print mode, the `Workflow` tool and a service's routines all start runs
there. `run` belongs to its caller: cancelling the caller (Ctrl-C) stops every task of the
run. `start` hands back a `RunHandle` that outlives its caller until the runner closes.

    runner = WorkflowRunner(executor, store=MemoryRunStore())
    record = await runner.run(pipeline, inputs={"file": "calc.py"}, project_root=root)
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from aimon_core.agent import RunState, Turn
from aimon_core.workflow._budget import RunMeter, Spent
from aimon_core.workflow._execute import Execution, RunParts
from aimon_core.workflow._model import Pipeline, Stage, WorkflowBudget
from aimon_core.workflow._parse import WorkflowDefinitionError, check_pipeline
from aimon_core.workflow._record import RunId, RunRecord, new_run_id
from aimon_core.workflow._store import RunLease, RunStore
from aimon_core.workflow._tasks import TaskExecutor, TaskSlots
from aimon_core.workflow._worktree import Worktrees
from aimon_core.workflow._writer import RunWriter


class WorkflowError(Exception):
    """A workflow cannot start or resume; the message says why and what to do."""


class RunHandle:
    """A run in progress: its id, its record as it goes, and its end."""

    def __init__(self, execution: Execution, task: asyncio.Task[RunRecord]) -> None:
        self._execution = execution
        self.task = task

    @property
    def id(self) -> RunId:
        """Return the run's id."""
        return self._execution.record.id

    @property
    def record(self) -> RunRecord:
        """Return the run's record as of now."""
        return self._execution.record

    async def wait(self) -> RunRecord:
        """Wait for the run to end (waiting does not own it: cancelling the waiter does not
        stop the run) and return its record."""
        return await asyncio.shield(self.task)

    async def stop(self) -> RunRecord:
        """Stop every task of the run (recorded as interrupted) and return its record."""
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(self.task)
        return self._execution.record


def _now() -> datetime:
    return datetime.now(UTC)


class WorkflowRunner:
    """Starts and resumes workflow runs whose tasks `tasks` executes.

    Args:
        store: where runs are kept (`default_run_store()`: beside the sessions).
        slots: the application's limit on tasks running at once (default: its own).
        worktrees: where worktree tasks work (default: under aimon's data folder).
        holder: how this process is named to another that finds a run held.
    """

    def __init__(self, tasks: TaskExecutor, *, store: RunStore,
                 slots: TaskSlots | None = None, worktrees: Worktrees | None = None,
                 holder: str | None = None, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.tasks = tasks
        self.store = store
        self.slots = slots or TaskSlots()
        self._worktrees = worktrees
        self._holder = holder
        self._clock = clock
        self._handles: dict[RunId, RunHandle] = {}
        self._closed = False

    @property
    def worktrees(self) -> Worktrees:
        """Return where worktree tasks work."""
        if self._worktrees is None:
            self._worktrees = Worktrees()
        return self._worktrees

    def running(self) -> tuple[RunHandle, ...]:
        """Return the runs in progress, oldest first."""
        return tuple(self._handles.values())

    async def run(self, pipeline: Pipeline, *, project_root: Path,
                  inputs: Mapping[str, str] | None = None, parent: Turn | None = None
                  ) -> RunRecord:
        """Run a workflow to its end and return its record; cancelling the call stops it."""
        return await self._own(await self.start(pipeline, project_root=project_root,
                                                inputs=inputs, parent=parent))

    async def resume_run(self, run_id: str, *, parent: Turn | None = None,
                         budget: WorkflowBudget | None = None,
                         project_root: Path | None = None) -> RunRecord:
        """Resume a run to its end and return its record; cancelling the call stops it."""
        return await self._own(await self.resume(run_id, parent=parent, budget=budget,
                                                 project_root=project_root))

    async def _own(self, handle: RunHandle) -> RunRecord:
        try:
            return await handle.wait()
        except asyncio.CancelledError:
            await handle.stop()
            raise

    async def start(self, pipeline: Pipeline, *, project_root: Path,
                    inputs: Mapping[str, str] | None = None, parent: Turn | None = None
                    ) -> RunHandle:
        """Check the workflow, store a new run, and start it; raise WorkflowError."""
        self._check_open()
        try:
            check_pipeline(pipeline)
        except WorkflowDefinitionError as exc:
            raise WorkflowError(str(exc)) from None
        given = resolve_inputs(pipeline, inputs or {})
        agents = self._agents(pipeline)
        root = await asyncio.to_thread(Path(project_root).resolve)
        base = None
        if any(isinstance(s, Stage) and any(t.worktree for t in s.tasks)
               for s in pipeline.stages):
            base = await self._base(root)
        now = _now()
        record = RunRecord(id=new_run_id(now), pipeline=pipeline, inputs=given,
                           project_root=str(root), created_at=now, updated_at=now,
                           base_commit=base)
        store = self.store
        await asyncio.to_thread(store.create, record)
        lease = await asyncio.to_thread(store.acquire, record.id, self._holder_name())
        meter = RunMeter(pipeline.budget, clock=self._clock)
        return self._launch(record, lease, agents, parent or Turn(), meter)

    async def resume(self, run_id: str, *, parent: Turn | None = None,
                     budget: WorkflowBudget | None = None,
                     project_root: Path | None = None) -> RunHandle:
        """Start again every task of a run that did not complete; raise WorkflowError.

        What the run spent before counts against its budget; `budget` replaces the budget
        its definition sets (to go on after it was spent). `project_root`: the project this
        runner's tasks work for; a run of another project is refused (its rules and hooks
        are that project's).
        """
        self._check_open()
        store = self.store
        record = await asyncio.to_thread(store.load, RunId(run_id))
        if record.state is RunState.COMPLETED:
            raise WorkflowError(f"run {record.id} completed; there is nothing to resume")
        if project_root is not None and str(project_root) != record.project_root:
            raise WorkflowError(f"run {record.id} belongs to {record.project_root}; resume it "
                                "there")
        lease = await asyncio.to_thread(store.acquire, record.id, self._holder_name())
        try:
            agents = self._agents(record.pipeline)
        except BaseException:
            lease.release()
            raise
        spent = Spent(usage=record.usage, cost_usd=record.cost_usd)
        meter = RunMeter(budget or record.pipeline.budget, spent_before=spent,
                         clock=self._clock)
        return self._launch(record, lease, agents, parent or Turn(), meter)

    def _launch(self, record: RunRecord, lease: RunLease, agents: dict[int, tuple[str, ...]],
                parent: Turn, meter: RunMeter) -> RunHandle:
        writer = RunWriter(self.store, record.id)
        execution = Execution(record, RunParts(
            tasks=self.tasks, slots=self.slots, worktrees=self.worktrees, parent=parent,
            meter=meter, agents=agents), writer)

        async def drive() -> RunRecord:
            try:
                return await execution.drive()
            finally:
                await writer.close()
                lease.release()
                self._handles.pop(record.id, None)

        handle = RunHandle(execution, asyncio.get_running_loop().create_task(drive()))
        self._handles[record.id] = handle
        return handle

    def _agents(self, pipeline: Pipeline) -> dict[int, tuple[str, ...]]:
        """Return each task's agent as the executor knows it; WorkflowError for an unknown
        one, naming those there are."""
        found: dict[int, tuple[str, ...]] = {}
        for s, stage in enumerate(pipeline.stages):
            if not isinstance(stage, Stage):
                continue
            names = []
            for i, task in enumerate(stage.tasks):
                name = self.tasks.resolve_agent(task.agent)
                if name is None:
                    known = ", ".join(self.tasks.agent_names()) or "none"
                    raise WorkflowError(
                        f"{pipeline.source}: stages[{s}].tasks[{i}]: no agent {task.agent!r} "
                        f"(agents: {known})")
                names.append(name)
            found[s] = tuple(names)
        return found

    async def _base(self, root: Path) -> str:
        from aimon_core.workflow._worktree import WorktreeError

        try:
            base = await self.worktrees.head(root)
        except WorktreeError as exc:
            raise WorkflowError(f"worktree tasks cannot run here: {exc}") from None
        if base is None:
            raise WorkflowError(f"worktree tasks need a git repository with a commit; {root} "
                                "is not one (run `git init` and commit, or drop `worktree`)")
        return base

    def _holder_name(self) -> str:
        if self._holder is None:
            from aimon_core.session import default_holder

            self._holder = default_holder()
        return self._holder

    def _check_open(self) -> None:
        if self._closed:
            raise WorkflowError("the workflow runner is closed")

    async def aclose(self) -> None:
        """Stop every run in progress (each is recorded as interrupted, to resume later)."""
        self._closed = True
        for handle in list(self._handles.values()):
            await handle.stop()


def resolve_inputs(pipeline: Pipeline, given: Mapping[str, str]) -> dict[str, str]:
    """Return the run's inputs: those given, and the defaults of the others.

    Raises WorkflowError for an input the workflow does not declare (when it declares some)
    and for a declared one with no default that was not given.
    """
    if not pipeline.inputs:
        return dict(given)
    declared = {i.name: i for i in pipeline.inputs}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise WorkflowError(f"workflow {pipeline.name} has no input "
                            f"{', '.join(map(repr, unknown))} (its inputs: "
                            f"{', '.join(declared)})")
    values = {name: spec.default for name, spec in declared.items() if spec.default is not None}
    values.update(given)
    missing = [name for name in declared if name not in values]
    if missing:
        hint = " ".join(f"--input {name}=..." for name in missing)
        raise WorkflowError(f"workflow {pipeline.name} needs {', '.join(missing)}: {hint}")
    return values
