"""The workflow runs of a session, drawn from their events: a live tree, and a line per change.

`WorkflowView` keeps, from `WorkflowTaskChanged` and `WorkflowRunChanged` events, where each
task of each running workflow is. The renderer asks it for the lines to print when a task or a
run changes state (`update`), and for the tree of the runs in progress to draw in the live
area above the prompt (`tree_lines`, next to the running tool calls):

    ⚙ survey run-20250102-030405-a1b2c3 · 1 done · $0.0021
      explore
        ● explore/0 explore · Grep("def ") · 4s
        ✓ explore/1 explore · 2.1s · $0.0010
      report
        ○ report/0 general-purpose

Plain text (a style name per printed line); nothing here draws by itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from aimon_core.agent import RunState, TaskState, WorkflowRunChanged, WorkflowTaskChanged
from aimon_core.command import format_cost

MARKS = {TaskState.PENDING: "○", TaskState.RUNNING: "●", TaskState.COMPLETED: "✓",
         TaskState.FAILED: "✗", TaskState.STOPPED: "■", TaskState.SKIPPED: "–"}
STYLES = {TaskState.COMPLETED: "dim green", TaskState.FAILED: "red",
          TaskState.STOPPED: "yellow", TaskState.SKIPPED: "dim"}
RUN_STYLES = {RunState.COMPLETED: "green", RunState.FAILED: "red", RunState.STOPPED: "yellow",
              RunState.INTERRUPTED: "yellow"}


def progress_line(event: WorkflowTaskChanged | WorkflowRunChanged) -> str | None:
    """Return the line print mode writes on stderr for a change of state (None: the event
    only tells what a running task is doing)."""
    match event:
        case WorkflowRunChanged(workflow=workflow, run_id=run_id, state=state):
            return f"workflow {workflow} run {run_id}: {state.value}"
        case WorkflowTaskChanged(activity=""):
            line = f"{MARKS[event.state]} {event.label} ({event.agent}) {event.state.value}"
            if event.round > 1:
                line += f", round {event.round}"
            if event.state is not TaskState.RUNNING and event.cost_usd:
                line += f" {format_cost(event.cost_usd)}"
            if event.state in (TaskState.FAILED, TaskState.STOPPED) and event.detail:
                line += f": {event.detail}"
            return line
    return None


@dataclass(slots=True)
class _Task:
    event: WorkflowTaskChanged
    since: float


@dataclass(slots=True)
class _Run:
    workflow: str
    stages: tuple[str, ...]
    tasks: dict[tuple[int, int], _Task] = field(default_factory=dict)


class WorkflowView:
    """The workflow runs of one session, as their events told them."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._runs: dict[str, _Run] = {}
        self._clock = clock

    def update(self, event: WorkflowTaskChanged | WorkflowRunChanged) -> list[tuple[str, str]]:
        """Take one event in; return the lines (text, style) to print for it now."""
        match event:
            case WorkflowRunChanged():
                return self._run_changed(event)
            case WorkflowTaskChanged():
                return self._task_changed(event)

    def _run_changed(self, event: WorkflowRunChanged) -> list[tuple[str, str]]:
        if event.state is RunState.RUNNING:
            self._runs[event.run_id] = _Run(workflow=event.workflow, stages=event.stages)
            return [(f"⚙ workflow {event.workflow} started (run {event.run_id})", "bold")]
        self._runs.pop(event.run_id, None)
        why = f": {event.reason}" if event.reason else ""
        return [(f"⚙ workflow {event.workflow} {event.state.value} · {format_cost(event.cost_usd)}"
                 f"{why}", RUN_STYLES.get(event.state, "dim"))]

    def _task_changed(self, event: WorkflowTaskChanged) -> list[tuple[str, str]]:
        run = self._runs.setdefault(event.run_id, _Run(workflow=event.workflow, stages=()))
        key = (event.stage_index, event.index)
        before = run.tasks.get(key)
        since = before.since if before is not None and before.event.state is event.state \
            else self._clock()
        run.tasks[key] = _Task(event=event, since=since)
        if before is not None and before.event.state is event.state:
            return []  # only what it does changed: the live tree shows it
        if event.state in (TaskState.PENDING, TaskState.RUNNING):
            return []
        return [(f"{MARKS[event.state]} {event.workflow} · {_task_text(event)}",
                 STYLES.get(event.state, "dim"))]

    def tree_lines(self) -> list[str]:
        """Return the tree of the runs in progress, for the live area above the prompt."""
        lines: list[str] = []
        now = self._clock()
        for run_id, run in self._runs.items():
            tasks = sorted(run.tasks.items())
            done = sum(t.event.state is TaskState.COMPLETED for _, t in tasks)
            cost = sum(t.event.cost_usd for _, t in tasks)
            lines.append(f"⚙ {run.workflow} {run_id} · {done} done · {format_cost(cost)}")
            stage = None
            for (stage_index, _), task in tasks:
                if stage_index != stage:
                    stage = stage_index
                    name = run.stages[stage_index] if stage_index < len(run.stages) else \
                        task.event.stage
                    lines.append(f"  {name}")
                lines.append(f"    {_live_text(task, now)}")
        return lines


def _task_text(event: WorkflowTaskChanged) -> str:
    """Return a finished task's line: label, agent, state, time, cost, what it said."""
    parts = [f"{event.label} ({event.agent}) {event.state.value}"]
    if event.round > 1:
        parts.append(f"round {event.round}")
    if event.duration_s:
        parts.append(f"{event.duration_s:.1f}s")
    if event.cost_usd:
        parts.append(format_cost(event.cost_usd))
    text = " · ".join(parts)
    return f"{text}: {event.detail}" if event.detail else text


def _live_text(task: _Task, now: float) -> str:
    event = task.event
    parts = [f"{MARKS[event.state]} {event.label} {event.agent}"]
    if event.state is TaskState.RUNNING:
        if event.activity:
            parts.append(event.activity)
        parts.append(f"{max(0.0, now - task.since):.0f}s")
    elif event.duration_s:
        parts.append(f"{event.duration_s:.1f}s")
    if event.cost_usd:
        parts.append(format_cost(event.cost_usd))
    return " · ".join(parts)
