"""A run in words and as JSON: the tree `aimon workflow show` prints, listings, final outputs.

Shared by the command line and the slash commands, so both say the same thing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aimon_core.agent import RunState, TaskState
from aimon_core.workflow._budget import money
from aimon_core.workflow._model import MergeStage, Stage
from aimon_core.workflow._record import RunRecord, RunSummary, TaskRecord

MARKS = {TaskState.PENDING: "○", TaskState.RUNNING: "●", TaskState.COMPLETED: "✓",
         TaskState.FAILED: "✗", TaskState.STOPPED: "■", TaskState.SKIPPED: "–"}


def seconds(value: float) -> str:
    """Return a duration: 4.2s, 3m 05s, 1h 02m."""
    if value < 60:
        return f"{value:.1f}s"
    minutes, secs = divmod(round(value), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def state_words(record: RunRecord, *, held: bool | None = None) -> str:
    """Return the run's state; a "running" run nobody holds is said to be interrupted.

    `held`: whether a process holds the run now (None: not known).
    """
    if record.state is RunState.RUNNING and held is False:
        return "interrupted (no process runs it; resume it)"
    return record.state.value


def run_tree(record: RunRecord, *, held: bool | None = None, diffs: bool = True) -> str:
    """Return a run as a tree of stages and tasks: state, time, cost, output's first line,
    and for each worktree task its branch, folder and diff."""
    total = sum(t.duration_s for t in record.tasks)
    lines = [f"{record.id}  {record.pipeline.name}  {state_words(record, held=held)}  "
             f"({_count(record)}, {seconds(total)} of task time, {money(record.cost_usd)})"]
    # A completed run's reason starts with its count, said above; the rest is what failed.
    reason = record.reason if record.state is not RunState.COMPLETED else \
        "; ".join(record.reason.split("; ")[1:])
    if reason:
        lines.append(f"  {reason}")
    if record.inputs:
        lines.append("  inputs: " + ", ".join(f"{k}={v!r}" for k, v in record.inputs.items()))
    stages = record.pipeline.stages
    for s in range(len(stages)):
        last_stage = s == len(stages) - 1
        branch, rest = ("└─ ", "   ") if last_stage else ("├─ ", "│  ")
        lines.append(branch + _stage_title(record, s))
        tasks = _tasks_of(record, s)
        kept = record.state is not RunState.COMPLETED  # worktrees go when a run ends well
        for n, task in enumerate(tasks):
            last = n == len(tasks) - 1
            lines.extend(_task_lines(task, rest, last, diffs=diffs, kept=kept))
    return "\n".join(lines)


def _count(record: RunRecord) -> str:
    summary = RunSummary.of(record)
    return f"{summary.completed} of {summary.tasks} tasks completed"


def _stage_title(record: RunRecord, index: int) -> str:
    stage = record.pipeline.stages[index]
    checked = record.stage(index)
    match stage:
        case MergeStage():
            return f"{stage.name} (merge)"
        case Stage(until=until) if until is not None:
            verdict = {True: "passed", False: "failing", None: "not run"}[checked.passed]
            return (f"{stage.name}  check `{until.command}`: {verdict}, round "
                    f"{max(checked.rounds, 1)} of {until.max_rounds}")
        case _:
            return stage.name


def _tasks_of(record: RunRecord, index: int) -> list[TaskRecord]:
    stage = record.pipeline.stages[index]
    if isinstance(stage, MergeStage):
        return [t for t in record.tasks if t.stage == index]
    return [record.task(index, i) or TaskRecord(stage=index, index=i, label=_label(stage, i),
                                                agent=stage.tasks[i].agent)
            for i in range(len(stage.tasks))]


def _label(stage: Stage, index: int) -> str:
    from aimon_core.workflow._model import task_label

    return task_label(stage, index)


def _task_lines(task: TaskRecord, rest: str, last: bool, *, diffs: bool, kept: bool
                ) -> list[str]:
    branch, more = ("└─ ", "   ") if last else ("├─ ", "│  ")
    parts = [f"{MARKS[task.state]} {task.label}", task.agent, task.state.value]
    if task.round > 1:
        parts.append(f"round {task.round}")
    if task.attempt > 1:
        parts.append(f"attempt {task.attempt}")
    if task.duration_s:
        parts.append(seconds(task.duration_s))
    if task.cost_usd:
        parts.append(money(task.cost_usd))
    lines = [rest + branch + "  ".join(parts)]
    pad = rest + more + "   "
    if task.error:
        lines.append(pad + f"error: {task.error}")
    elif task.output.strip():
        lines.append(pad + _first(task.output))
    if task.branch:
        lines.append(pad + f"branch {task.branch}" + (f"  (worktree {task.worktree})"
                                                      if task.worktree and kept else ""))
    if diffs and task.diff:
        lines.extend(pad + "  " + line for line in task.diff.rstrip("\n").splitlines())
    return lines


def _first(text: str, limit: int = 100) -> str:
    line = text.strip().splitlines()[0]
    extra = len(text.strip().splitlines()) - 1
    shown = line if len(line) <= limit else line[: limit - 1] + "…"
    return shown + (f" (+{extra} lines)" if extra > 0 else "")


def unmerged_branches(record: RunRecord) -> list[str]:
    """Return the branches of worktree tasks that no merge stage of the run merged."""
    merged = {t.branch for t in record.tasks if t.agent == "merge"
              and t.state is TaskState.COMPLETED}
    return list(dict.fromkeys(t.branch for t in record.tasks
                              if t.branch and t.agent != "merge" and t.branch not in merged))


def final_outputs(record: RunRecord) -> str:
    """Return what a run ends with: the outputs of the last stage that has any."""
    for index in range(len(record.pipeline.stages) - 1, -1, -1):
        outputs = [t.output.strip() for t in _tasks_of(record, index)
                   if t.state is TaskState.COMPLETED and t.output.strip()]
        if outputs:
            return "\n\n".join(outputs)
    return ""


def runs_lines(summaries: Sequence[RunSummary]) -> list[str]:
    """Return one line per run: id, workflow, state, tasks done, cost, reason."""
    return [f"{s.id}  {s.workflow:<16} {s.state.value:<11} {s.completed}/{s.tasks} tasks  "
            f"{money(s.cost_usd)}" + (f"  {_first(s.reason, 60)}" if s.reason else "")
            for s in summaries]


def record_json(record: RunRecord, *, transcripts: bool = True) -> dict[str, Any]:
    """Return a run as JSON: definition, inputs, state, and every task (with transcripts)."""
    from aimon_core.workflow._parse import pipeline_to_mapping

    usage = record.usage
    return {
        "id": record.id, "workflow": record.pipeline.name, "state": record.state.value,
        "reason": record.reason, "project": record.project_root,
        "created_at": record.created_at.isoformat(), "updated_at": record.updated_at.isoformat(),
        "inputs": dict(record.inputs), "base_commit": record.base_commit,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                  "cache_read_input_tokens": usage.cache_read_tokens,
                  "cache_creation_input_tokens": usage.cache_write_tokens},
        "total_cost_usd": round(record.cost_usd, 6),
        "output": final_outputs(record),
        "stages": [{"name": stage.name, "kind": "merge" if isinstance(stage, MergeStage)
                    else "tasks", "rounds": record.stage(s).rounds,
                    "check_passed": record.stage(s).passed,
                    "tasks": [_task_json(t, transcripts) for t in _tasks_of(record, s)]}
                   for s, stage in enumerate(record.pipeline.stages)],
        "definition": pipeline_to_mapping(record.pipeline),
        "warnings": list(record.load_warnings),
    }


def _task_json(task: TaskRecord, transcripts: bool) -> dict[str, Any]:
    from aimon_core.session import message_to_json

    data: dict[str, Any] = {
        "label": task.label, "agent": task.agent, "state": task.state.value,
        "output": task.output, "error": task.error, "round": task.round,
        "attempt": task.attempt, "execution_id": task.execution_id,
        "cost_usd": round(task.cost_usd, 6), "duration_s": round(task.duration_s, 3),
        "tokens": task.usage.total_tokens, "worktree": task.worktree, "branch": task.branch,
        "diff": task.diff}
    if transcripts:
        data["transcript"] = [message_to_json(m) for m in task.transcript]
    return data
