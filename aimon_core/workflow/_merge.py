"""A merge stage: the branches of earlier worktree tasks, merged into the project in order.

Before each merge, git tells (in its object store only) whether the branch merges cleanly
into the project's HEAD. A branch that would conflict is not merged: nothing in the project
changes, and the stage fails naming the files and the command to merge it by hand. A clean
one is merged with `git merge --no-ff`, run as a Bash call of the workflow's runtime would
run: the permission rules decide, and it asks when they would (print mode refuses it, and
says which flag allows it).
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aimon_core.agent import TaskState
from aimon_core.workflow._check import command_turn
from aimon_core.workflow._model import MergeStage
from aimon_core.workflow._parse import merged_stages
from aimon_core.workflow._record import StageChecked, StageRecord, TaskRecord

if TYPE_CHECKING:
    from aimon_core.workflow._execute import Execution


def merge_command(branch: str) -> str:
    """Return the command a merge stage runs (and a person runs to merge by hand)."""
    return f"git merge --no-ff --no-edit {shlex.quote(branch)}"


def branches_to_merge(execution: Execution, index: int) -> list[TaskRecord]:
    """Return the completed worktree tasks a merge stage merges, in stage and task order."""
    record = execution.record
    wanted = set(merged_stages(execution.pipeline, index))
    return [t for t in record.tasks if t.stage in wanted and t.branch
            and t.state is TaskState.COMPLETED]


async def run_merge(execution: Execution, index: int, stage: MergeStage) -> str | None:
    """Merge each branch not merged yet; return why the stage failed, or None."""
    for number, source in enumerate(branches_to_merge(execution, index)):
        branch = source.branch
        assert branch is not None
        done = execution.record.task(index, number)
        if done is not None and done.state is TaskState.COMPLETED:
            continue
        task = TaskRecord(stage=index, index=number, label=f"merge {source.label}",
                          agent="merge", state=TaskState.RUNNING, branch=branch,
                          started_at=datetime.now(UTC))
        await execution.task_changed(task)
        problem = await _merge_one(execution, task, branch)
        if problem is not None:
            return problem
    await execution.save(StageChecked(stage=StageRecord(stage=index, rounds=1, passed=True)))
    return None


async def _merge_one(execution: Execution, task: TaskRecord, branch: str) -> str | None:
    worktrees, root = execution.parts.worktrees, execution.project
    try:
        if await worktrees.ahead(root, branch) == 0:
            await _end(execution, task, TaskState.COMPLETED, output=f"{branch}: nothing to merge")
            return None
        conflicts = await worktrees.conflicts(root, branch)
    except Exception as exc:
        await _end(execution, task, TaskState.FAILED, error=str(exc))
        return f"{task.label}: {exc}"
    if conflicts:
        files = ", ".join(conflicts)
        why = (f"merging {branch} into {root} would conflict in {files}; nothing was changed. "
               f"To merge it yourself: cd {shlex.quote(str(root))} && {merge_command(branch)}")
        await _end(execution, task, TaskState.FAILED, error=why)
        return why
    result = await execution.parts.tasks.run_command(merge_command(branch), root,
                                                     command_turn(execution))
    if not result.passed:
        why = f"{merge_command(branch)} {'was not run' if result.refused else 'failed'}: " \
              f"{result.output.strip()}"
        await _end(execution, task, TaskState.FAILED, error=why)
        return why
    await _end(execution, task, TaskState.COMPLETED, output=f"merged {branch}")
    return None


async def _end(execution: Execution, task: TaskRecord, state: TaskState, *, output: str = "",
               error: str = "") -> None:
    await execution.task_changed(replace(task, state=state, output=output, error=error,
                                         finished_at=datetime.now(UTC)))
