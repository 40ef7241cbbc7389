"""One run of a workflow, from its record to its end: stages in order, a stage's tasks at once.

The record is the truth: a stage whose tasks all completed (and whose check passed) is not
run again, a task that completed is not run again, so the same code starts a run and resumes
one. Every change is stored as it happens and told as an event (`WorkflowTaskChanged`,
`WorkflowRunChanged`) on the event stream of whoever started the run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from aimon_core.agent import (
    AgentEvent,
    ApprovalAnswer,
    ApprovalRefused,
    ApprovalRequest,
    ApprovalRequested,
    ApprovalResolved,
    ApprovalWithdrawn,
    Asker,
    AssistantMessageCompleted,
    ExecutionId,
    ExecutionResult,
    IterationStarted,
    Notice,
    RunState,
    StopCause,
    TaskState,
    ToolCallStarted,
    Turn,
    WorkflowRunChanged,
    WorkflowTaskChanged,
    new_execution_id,
)
from aimon_core.llm import Message, Usage
from aimon_core.workflow._budget import RunMeter, Spent, task_over
from aimon_core.workflow._model import AgentTask, Pipeline, Stage, task_label
from aimon_core.workflow._record import (
    RunChange,
    RunEnded,
    RunRecord,
    RunSummary,
    TaskChanged,
    TaskMessage,
    TaskRecord,
)
from aimon_core.workflow._render import render_prompt
from aimon_core.workflow._tasks import TaskExecutor, TaskRun, TaskSlots
from aimon_core.workflow._worktree import Worktree, Worktrees
from aimon_core.workflow._writer import RunWriter

log = logging.getLogger(__name__)


# How an execution ends when the budget a task got (its share of the run's) runs out.
_LIMITS = (StopCause.TOKEN_LIMIT, StopCause.TIME_LIMIT)


class RunStoppedError(Exception):
    """The workflow's budget is spent: the run stops here."""


@dataclass(slots=True, kw_only=True)
class RunParts:
    """What one run is given by its runner."""

    tasks: TaskExecutor
    slots: TaskSlots
    worktrees: Worktrees
    parent: Turn
    meter: RunMeter
    # The agent each task names, as the executor resolved it: stage -> per task.
    agents: dict[int, tuple[str, ...]] = field(default_factory=dict)


class Execution:
    """Runs one workflow run to its end (or until it is stopped) and keeps its record."""

    def __init__(self, record: RunRecord, parts: RunParts, writer: RunWriter) -> None:
        self.record = record
        self.parts = parts
        self.writer = writer
        self.pipeline: Pipeline = record.pipeline
        self.project = Path(record.project_root)
        # Running executions by task, and why one was stopped (its cost limit, the budget).
        self._jobs: dict[tuple[int, int], asyncio.Task[ExecutionResult]] = {}
        self._stopped: dict[tuple[int, int], str] = {}
        self.budget_stop: str | None = None
        self._live: dict[tuple[int, int], Spent] = {}

    # -- the record and the events

    def apply(self, change: RunChange) -> None:
        """Fold a change into the record (in memory; the writer stores it)."""
        self.record = self.record.apply(change)

    async def save(self, change: RunChange) -> None:
        """Fold a change in and store it before going on."""
        self.apply(change)
        await self.writer.write(change)

    def emit(self, event: AgentEvent) -> None:
        """Tell the run's owner."""
        try:
            self.parent.emit(event)
        except Exception:  # a subscriber's fault must not end the run
            log.exception("workflow event subscriber failed")

    @property
    def parent(self) -> Turn:
        """Return the Turn of whoever started (or resumed) the run."""
        return self.parts.parent

    async def task_changed(self, task: TaskRecord, activity: str = "") -> None:
        """Store a task's new state and tell it."""
        await self.save(TaskChanged(task=task))
        self.tell(task, activity)

    def tell(self, task: TaskRecord, activity: str = "") -> None:
        """Tell a task's state (and what it does now) as an event."""
        spent = self._live.get(task.key)
        usage, cost = (spent.usage, spent.cost_usd) if spent is not None else (
            task.usage, task.cost_usd)
        stage = self.pipeline.stages[task.stage]
        self.emit(WorkflowTaskChanged(
            run_id=self.record.id, workflow=self.pipeline.name, stage=stage.name,
            stage_index=task.stage, index=task.index, label=task.label, agent=task.agent,
            state=task.state, activity=activity, detail=task.error or _first_line(task.output),
            round=task.round, attempt=task.attempt, tokens=usage.total_tokens, cost_usd=cost,
            duration_s=task.duration_s))

    def run_changed(self, state: RunState, reason: str = "") -> None:
        """Tell the run's state as an event."""
        record = self.record
        self.emit(WorkflowRunChanged(
            run_id=record.id, workflow=self.pipeline.name, state=state, reason=reason,
            stages=tuple(s.name for s in self.pipeline.stages),
            tokens=record.usage.total_tokens, cost_usd=record.cost_usd,
            duration_s=self.parts.meter.elapsed))

    # -- the run

    async def drive(self) -> RunRecord:
        """Run every stage that has not finished; return the record as the run ends."""
        await self.save(RunEnded(state=RunState.RUNNING))
        self.run_changed(RunState.RUNNING)
        timer = self._start_timer()
        try:
            state, reason = await self._stages()
        except asyncio.CancelledError:
            await self._end(RunState.INTERRUPTED, "interrupted")
            raise
        except Exception as exc:
            log.exception("workflow run %s failed", self.record.id)
            await self._end(RunState.FAILED, f"{type(exc).__name__}: {exc}")
        else:
            await self._end(state, reason)
        finally:
            if timer is not None:
                timer.cancel()
        return self.record

    def _start_timer(self) -> asyncio.TimerHandle | None:
        left = self.parts.meter.seconds_left()
        if left is None:
            return None
        return asyncio.get_running_loop().call_later(left, self._out_of_time)

    def _out_of_time(self) -> None:
        self.stop_all(self.parts.meter.exceeded() or "the workflow's time budget is spent")

    def stop_all(self, reason: str) -> None:
        """Stop every running task: the budget is spent."""
        self.budget_stop = self.budget_stop or reason
        for key, job in self._jobs.items():
            self._stopped.setdefault(key, reason)
            job.cancel()

    async def _stages(self) -> tuple[RunState, str]:
        from aimon_core.workflow._merge import run_merge
        from aimon_core.workflow._model import MergeStage

        failed: list[str] = []
        for index, stage in enumerate(self.pipeline.stages):
            if self.stage_done(index):
                continue
            try:
                match stage:
                    case Stage():
                        problem = await self._stage(index, stage)
                    case MergeStage():
                        problem = await run_merge(self, index, stage)
            except RunStoppedError as exc:
                return RunState.STOPPED, str(exc)
            if self.budget_stop is not None:
                return RunState.STOPPED, self.budget_stop
            if problem is not None and not stage.continue_on_error:
                await self._skip_after(index)
                return RunState.FAILED, f"stage {stage.name}: {problem}"
            if problem is not None:
                failed.append(f"stage {stage.name}: {problem}")
        done = RunSummary.of(self.record).completed
        summary = f"{done} task{'s' * (done != 1)} completed"
        return RunState.COMPLETED, "; ".join([summary, *failed])

    def stage_done(self, index: int) -> bool:
        """Tell whether a stage finished in an earlier process (resume skips it)."""
        stage = self.pipeline.stages[index]
        if not isinstance(stage, Stage):
            return self.record.stage(index).passed is True
        completed = all(self.completed(index, i) for i in range(len(stage.tasks)))
        return completed and (stage.until is None or self.record.stage(index).passed is True)

    def completed(self, stage: int, index: int) -> bool:
        """Tell whether a task completed (in this process or before)."""
        task = self.record.task(stage, index)
        return task is not None and task.state is TaskState.COMPLETED

    async def _skip_after(self, index: int) -> None:
        """Record the tasks of the stages after a failed one as skipped."""
        for later in range(index + 1, len(self.pipeline.stages)):
            stage = self.pipeline.stages[later]
            if not isinstance(stage, Stage):
                continue
            for i in range(len(stage.tasks)):
                if self.record.task(later, i) is None:
                    await self.task_changed(self.new_task(later, i, TaskState.SKIPPED))

    def new_task(self, stage: int, index: int, state: TaskState = TaskState.PENDING
                 ) -> TaskRecord:
        """Return the first record of a task."""
        spec = self.pipeline.stages[stage]
        agents = self.parts.agents.get(stage, ())
        agent = agents[index] if index < len(agents) else ""
        return TaskRecord(stage=stage, index=index, label=task_label(spec, index), agent=agent,
                          state=state)

    async def _end(self, state: RunState, reason: str) -> None:
        if state is RunState.COMPLETED:
            await self._remove_worktrees()
        else:
            kept = [t.worktree for t in self.record.tasks if t.worktree]
            if kept:
                self.emit(Notice(text=f"workflow {self.pipeline.name}: worktrees kept to look "
                                      f"into: {', '.join(kept)}"))
        await self.save(RunEnded(state=state, reason=reason))
        self.run_changed(state, reason)

    async def _remove_worktrees(self) -> None:
        for task in self.record.tasks:
            if task.worktree and task.branch:
                try:
                    await self.parts.worktrees.remove(
                        self.project, Worktree(path=Path(task.worktree), branch=task.branch))
                except Exception as exc:
                    self.emit(Notice(text=f"worktree {task.worktree} not removed: {exc}",
                                     level="warning"))

    # -- a stage of agent tasks

    async def _stage(self, index: int, stage: Stage) -> str | None:
        """Run a stage's tasks (and its check, round after round); return why it failed."""
        from aimon_core.workflow._check import run_check

        limit = asyncio.Semaphore(stage.concurrency or len(stage.tasks))
        while True:
            checked = self.record.stage(index)
            round_ = checked.rounds + 1 if stage.until is not None else 1
            todo = [i for i in range(len(stage.tasks)) if self._due(index, i, round_)]
            results = await asyncio.gather(*(
                self._task(index, i, stage, round_, limit) for i in todo))
            if self.budget_stop is not None:
                raise RunStoppedError(self.budget_stop)
            failed = [problem for problem in results if problem is not None]
            if failed:
                return failed[0] if len(failed) == 1 else f"{len(failed)} tasks failed: " \
                                                          f"{failed[0]}"
            if stage.until is None:
                return None
            passed, problem = await run_check(self, index, stage, round_)
            if passed or problem is not None:
                return problem

    def _due(self, stage: int, index: int, round_: int) -> bool:
        """Tell whether a task runs in this round (not completed in it already)."""
        task = self.record.task(stage, index)
        if task is None or task.state is not TaskState.COMPLETED:
            return True
        if round_ == 1 or task.round >= round_:
            return False
        return index in self.record.stage(stage).failing

    async def _task(self, stage_index: int, index: int, stage: Stage, round_: int,
                    limit: asyncio.Semaphore) -> str | None:
        """Run one task (retrying it as allowed); return why it failed, or None."""
        spec = stage.tasks[index]
        retries = spec.retry if spec.retry is not None else stage.retry
        async with limit, self.parts.slots.semaphore:
            problem: str | None = None
            for attempt in range(1, retries + 2):
                problem = await self._attempt(stage_index, index, spec, round_, attempt)
                if problem is None or self.budget_stop is not None:
                    return problem
        return problem

    async def _attempt(self, stage_index: int, index: int, spec: AgentTask, round_: int,
                       attempt: int) -> str | None:
        if (why := self.parts.meter.exceeded()) is not None:
            self.stop_all(why)
            return why
        key = (stage_index, index)
        task = self.record.task(stage_index, index) or self.new_task(stage_index, index)
        history = task.transcript if round_ > 1 else ()
        task = replace(task, state=TaskState.RUNNING, round=round_, attempt=attempt, error="",
                       execution_id=new_execution_id(), started_at=_now(), finished_at=None)
        await self.task_changed(task)
        started = asyncio.get_running_loop().time()
        try:
            folder, task = await self._folder(task, spec)
            prompt = self.prompt(stage_index, spec, round_, task)
            result = await self._run(task, spec, TaskRun(
                agent=task.agent, prompt=prompt, folder=folder, history=history,
                limits=self.parts.meter.limits_for(spec.limits), label=task.label))
            return await self._settle(task, result, started)
        except asyncio.CancelledError:
            reason = self._stopped.pop(key, None)
            if reason is None or _cancelling():
                await self._finish(task, TaskState.STOPPED, started, error="interrupted")
                raise
            # The budget stops the run (it runs again on resume); a task's own limit fails it.
            state = TaskState.STOPPED if self.budget_stop is not None else TaskState.FAILED
            await self._finish(task, state, started, error=reason)
            return f"{task.label}: {reason}"
        except Exception as exc:
            log.debug("workflow task %s failed", task.label, exc_info=True)
            await self._finish(task, TaskState.FAILED, started, error=str(exc) or repr(exc))
            return f"{task.label}: {exc}"

    async def _settle(self, task: TaskRecord, result: ExecutionResult, started: float
                      ) -> str | None:
        if not result.stop.ok:
            spent = self.parts.meter.exceeded() if result.stop in _LIMITS else None
            if spent is not None:  # the task's share of the budget ran out: the run stops
                self.budget_stop = self.budget_stop or spent
                await self._finish(task, TaskState.STOPPED, started, error=spent)
                return f"{task.label}: {spent}"
            await self._finish(task, TaskState.FAILED, started, error=result.reason,
                               output=result.text)
            return f"{task.label}: {result.reason}"
        diff = task.diff
        if task.worktree and task.branch and self.record.base_commit:
            worktree = Worktree(path=Path(task.worktree), branch=task.branch)
            diff = await self.parts.worktrees.collect(
                worktree, self.record.base_commit,
                f"{self.pipeline.name}: {task.label} (run {self.record.id})")
        await self._finish(replace(task, diff=diff), TaskState.COMPLETED, started,
                           output=result.text)
        return None

    async def _finish(self, task: TaskRecord, state: TaskState, started: float, *,
                      error: str = "", output: str = "") -> None:
        spent = self._live.pop(task.key, None) or Spent()
        elapsed = asyncio.get_running_loop().time() - started
        await self.task_changed(replace(
            task, state=state, error=error, output=output, finished_at=_now(),
            usage=task.usage + spent.usage, cost_usd=task.cost_usd + spent.cost_usd,
            duration_s=task.duration_s + elapsed))

    async def _folder(self, task: TaskRecord, spec: AgentTask) -> tuple[Path, TaskRecord]:
        """Return where the task works: its worktree (made or put back), or the project."""
        if not spec.worktree:
            return self.project, task
        base = self.record.base_commit
        if base is None:
            raise RuntimeError("worktree: true needs a git repository with a commit")
        key = f"{self.pipeline.stages[task.stage].name}-{task.index}"
        worktree = self.parts.worktrees.place(self.project, self.record.id, key)
        await self.parts.worktrees.prepare(self.project, worktree, base)
        task = replace(task, worktree=str(worktree.path), branch=worktree.branch)
        await self.save(TaskChanged(task=task))  # stored, not told: its state is the same
        return worktree.path, task

    def prompt(self, stage_index: int, spec: AgentTask, round_: int, task: TaskRecord) -> str:
        """Return the task's prompt for this round: its template rendered, or (a later round
        of a template that does not name the check) what the check said."""
        from aimon_core.workflow._check import feedback, names_the_check, render_context

        if round_ > 1 and not names_the_check(spec.prompt):
            return feedback(self, stage_index, task)
        return render_prompt(spec.prompt, render_context(self, stage_index, round_, task))

    async def _run(self, task: TaskRecord, spec: AgentTask, run: TaskRun) -> ExecutionResult:
        """Run one execution as its own asyncio task, so a budget can stop it alone."""
        key = task.key
        self._live[key] = Spent()
        turn = self._turn(task, spec)
        job = asyncio.get_running_loop().create_task(self.parts.tasks.execute(run, turn))
        self._jobs[key] = job
        try:
            return await job
        finally:
            self._jobs.pop(key, None)

    def _turn(self, task: TaskRecord, spec: AgentTask) -> Turn:
        """Return the Turn of one execution: the parent's asker and approvals, its own events
        and transcript."""
        parent = self.parent
        key, round_ = task.key, task.round

        def persist(message: Message) -> None:
            change = TaskMessage(stage=key[0], index=key[1], round=round_, message=message)
            self.apply(change)
            self.writer.write_soon(change)

        return Turn(execution_id=ExecutionId(task.execution_id), session_id=parent.session_id,
                    hooks=parent.hooks, emit=self._relay(task, spec),
                    ask=None if parent.ask is None else _asking_for(task.label, parent.ask),
                    turn_approvals=parent.turn_approvals,
                    session_approvals=parent.session_approvals, persist=persist,
                    before_changes=None if spec.worktree else parent.before_changes)

    def _relay(self, task: TaskRecord, spec: AgentTask) -> Callable[[AgentEvent], None]:
        """Return what a task's execution tells: its spending counted against the limits,
        its questions passed on, its tool calls shown as what it is doing."""
        key = task.key

        def on_event(event: AgentEvent) -> None:
            match event:
                case AssistantMessageCompleted(usage=usage, cost_usd=cost):
                    self._spend(key, usage, cost)
                case IterationStarted():
                    self._before_call(key, spec)
                case ApprovalRequested() | ApprovalResolved() | ApprovalWithdrawn():
                    self.emit(event)
                case ApprovalRefused():
                    self.emit(event)
                case ToolCallStarted(label=label, name=name):
                    current = self.record.task(*key)
                    if current is not None:
                        self.tell(current, activity=label or name)
                case Notice(text=text, level=level) if level != "info":
                    self.emit(Notice(text=f"[{task.label}] {text}", level=level))
                case _:
                    pass

        return on_event

    def _spend(self, key: tuple[int, int], usage: Usage, cost: float) -> None:
        """Count a response; a budget it spends stops the run, but the answer it brought
        still counts (a task whose last answer this was completes)."""
        self._live.setdefault(key, Spent()).add(usage, cost)
        self.parts.meter.spent.add(usage, cost)
        if self.budget_stop is None:
            self.budget_stop = self.parts.meter.exceeded()

    def _before_call(self, key: tuple[int, int], spec: AgentTask) -> None:
        """Stop a task about to call the model when its cost limit or the budget is spent."""
        job = self._jobs.get(key)
        if job is None:
            return
        if (why := self.parts.meter.exceeded()) is not None:
            self.stop_all(why)
        elif (over := task_over(spec.limits, self._live.get(key) or Spent())) is not None:
            self._stopped.setdefault(key, over)
            job.cancel()


def _asking_for(label: str, ask: Asker) -> Asker:
    """Return `ask` with each question naming the task that asks (`[fix/0] Bash(make)`):
    the tasks of a stage run at once, and the person answering sees which one it is."""

    async def asking(request: ApprovalRequest) -> ApprovalAnswer | None:
        named = request.label or request.tool_name
        return await ask(replace(request, label=f"[{label}] {named}"))

    return asking


def _cancelling() -> bool:
    current = asyncio.current_task()
    return current is not None and current.cancelling() > 0


def _now() -> datetime:
    return datetime.now(UTC)


def _first_line(text: str, limit: int = 100) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
