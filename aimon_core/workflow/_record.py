"""A workflow run as a record: its definition, inputs, and every task's state, output,
transcript and cost. What survives a crash lives here; `RunStore` keeps it.

A record changes by `RunChange` values (a task's new state, a message of its transcript, a
stage's check, the run's end), appended to the store as they happen; `RunRecord.apply`
folds one in. Resume reads the record and runs again every task that did not complete.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import NewType

from aimon_core.agent import RunState, TaskState
from aimon_core.llm import Message, Usage
from aimon_core.workflow._model import Pipeline

RunId = NewType("RunId", str)
_RUN_ID = re.compile(r"run-[0-9]{8}-[0-9]{6}-[0-9a-f]{6}")


def new_run_id(now: datetime | None = None) -> RunId:
    """Return a fresh run id: `run-YYYYMMDD-HHMMSS-xxxxxx` (UTC), sortable by time."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%d-%H%M%S")
    return RunId(f"run-{stamp}-{secrets.token_hex(3)}")


def is_run_id(text: str) -> bool:
    """Tell whether `text` has the form of a run id."""
    return _RUN_ID.fullmatch(text) is not None


TaskKey = tuple[int, int]
"""A task's place: (stage index, task index)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRecord:
    """One task of a run, as of its last change.

    `round` and `attempt` count from 1; `transcript` holds the messages of its current
    attempt (every round of it). `worktree`, `branch` and `diff` are set for a task that
    works in a worktree: the folder (kept until the run ends well), the branch its changes
    are committed on, and the diff against the run's base commit.
    """

    stage: int
    index: int
    label: str
    agent: str
    state: TaskState = TaskState.PENDING
    output: str = ""
    error: str = ""
    round: int = 1
    attempt: int = 1
    execution_id: str = ""
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    duration_s: float = 0.0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    worktree: str | None = None
    branch: str | None = None
    diff: str | None = None
    transcript: tuple[Message, ...] = ()

    @property
    def key(self) -> TaskKey:
        """Return (stage index, task index)."""
        return (self.stage, self.index)


@dataclass(frozen=True, slots=True, kw_only=True)
class StageRecord:
    """A stage's progress: the checks run so far, what the last one printed, and the tasks
    whose folder it failed in (they run again in the next round).

    `passed` is True once the stage is done: its check passed, or its merges are made.
    """

    stage: int
    rounds: int = 0
    passed: bool | None = None
    check_output: str = ""
    failing: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskChanged:
    """A task's new state (a whole `TaskRecord`, transcript aside).

    A change to RUNNING starts a new execution of the task in `round`: messages of that
    round and later, from an earlier attempt, are dropped from the transcript.
    """

    task: TaskRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskMessage:
    """One message of a task's transcript, in the round it belongs to."""

    stage: int
    index: int
    round: int
    message: Message


@dataclass(frozen=True, slots=True, kw_only=True)
class StageChecked:
    """A stage's check ran (or its rounds changed)."""

    stage: StageRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class RunEnded:
    """The run changed state: ended (completed, failed, stopped, interrupted), or resumed."""

    state: RunState
    reason: str = ""
    at: datetime = field(default_factory=lambda: datetime.now(UTC))


RunChange = TaskChanged | TaskMessage | StageChecked | RunEnded


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    """A workflow run: what ran, with what, and where each task is."""

    id: RunId
    pipeline: Pipeline
    inputs: Mapping[str, str]
    project_root: str
    created_at: datetime
    updated_at: datetime
    state: RunState = RunState.RUNNING
    reason: str = ""
    # The commit worktrees start from (HEAD when the run started), None outside git.
    base_commit: str | None = None
    tasks: tuple[TaskRecord, ...] = ()
    stages: tuple[StageRecord, ...] = ()
    # Rounds of messages per task, for the fold (what `transcript` is made of).
    rounds: Mapping[TaskKey, tuple[tuple[int, Message], ...]] = field(default_factory=dict)
    load_warnings: tuple[str, ...] = ()

    def task(self, stage: int, index: int) -> TaskRecord | None:
        """Return the record of one task, if it ever changed."""
        return next((t for t in self.tasks if t.key == (stage, index)), None)

    def stage(self, index: int) -> StageRecord:
        """Return a stage's check record (a fresh one if it never ran its check)."""
        return next((s for s in self.stages if s.stage == index), StageRecord(stage=index))

    @property
    def usage(self) -> Usage:
        """Return what every task used, together."""
        total = Usage()
        for task in self.tasks:
            total = total + task.usage
        return total

    @property
    def cost_usd(self) -> float:
        """Return what every task cost, together."""
        return sum(task.cost_usd for task in self.tasks)

    def apply(self, change: RunChange) -> RunRecord:
        """Return the record with `change` folded in."""
        match change:
            case TaskChanged(task=task):
                rounds = dict(self.rounds)
                kept = rounds.get(task.key, ())
                if task.state is TaskState.RUNNING:
                    kept = tuple((r, m) for r, m in kept if r < task.round)
                rounds[task.key] = kept
                task = replace(task, transcript=tuple(m for _, m in kept))
                others = tuple(t for t in self.tasks if t.key != task.key)
                return replace(self, tasks=tuple(sorted((*others, task), key=_order)),
                               rounds=rounds)
            case TaskMessage(stage=at_stage, index=index, round=round_, message=message):
                key = (at_stage, index)
                rounds = dict(self.rounds)
                rounds[key] = (*rounds.get(key, ()), (round_, message))
                tasks = tuple(replace(t, transcript=(*t.transcript, message))
                              if t.key == key else t for t in self.tasks)
                return replace(self, tasks=tasks, rounds=rounds)
            case StageChecked(stage=checked):
                rest = tuple(s for s in self.stages if s.stage != checked.stage)
                return replace(self, stages=tuple(sorted((*rest, checked),
                                                         key=lambda s: s.stage)))
            case RunEnded(state=state, reason=reason, at=at):
                return replace(self, state=state, reason=reason, updated_at=at)


def _order(task: TaskRecord) -> TaskKey:
    return task.key


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSummary:
    """One line of a listing of runs."""

    id: RunId
    workflow: str
    project_root: str
    state: RunState
    reason: str
    created_at: datetime
    updated_at: datetime
    tasks: int
    completed: int
    cost_usd: float

    @classmethod
    def of(cls, record: RunRecord) -> RunSummary:
        """Return the summary of a record."""
        from aimon_core.workflow._model import Stage

        counted = {i: len(stage.tasks) for i, stage in enumerate(record.pipeline.stages)
                   if isinstance(stage, Stage)}  # a merge stage's merges are not tasks here
        agents, total = set(counted), sum(counted.values())
        done = sum(t.state is TaskState.COMPLETED and t.stage in agents for t in record.tasks)
        return cls(id=record.id, workflow=record.pipeline.name,
                   project_root=record.project_root, state=record.state,
                   reason=record.reason, created_at=record.created_at,
                   updated_at=record.updated_at, tasks=total, completed=done,
                   cost_usd=record.cost_usd)
