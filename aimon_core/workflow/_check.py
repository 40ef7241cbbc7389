"""A stage's check (`until`), and what a task's prompt is rendered with.

After a round of a stage with a check, the command runs in each folder the stage's tasks
worked in (the project, or each worktree), as a Bash call of the workflow's runtime would: the
permission rules decide, and it asks when they would ask (in print mode: it is refused, and the
stage fails saying so). It passes in a folder when it exits 0. The tasks whose folder it failed
in run again, going on from their transcript and told what the check printed, until it passes
everywhere or the stage's rounds are used up.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aimon_core.agent import Notice, TaskState, Turn, new_execution_id
from aimon_core.workflow._model import Stage
from aimon_core.workflow._record import StageChecked, StageRecord, TaskRecord

if TYPE_CHECKING:
    from aimon_core.workflow._execute import Execution

_CHECK_OUTPUT = 8_000
_NAMES_CHECK = re.compile(r"\{\{[{&#^]?\s*(round\b|check\.)")


def names_the_check(template: str) -> bool:
    """Tell whether a prompt template uses `{{round}}` or `{{check...}}`."""
    return _NAMES_CHECK.search(template) is not None


def command_turn(execution: Execution) -> Turn:
    """Return the Turn of a command the workflow runs (a check, a merge) for its owner."""
    parent = execution.parent
    return Turn(execution_id=new_execution_id(), session_id=parent.session_id,
                hooks=parent.hooks, emit=execution.emit, ask=parent.ask,
                turn_approvals=parent.turn_approvals,
                session_approvals=parent.session_approvals)


async def run_check(execution: Execution, index: int, stage: Stage, round_: int
                    ) -> tuple[bool, str | None]:
    """Run the stage's check after round `round_`: (passed, why the stage fails).

    (False, None) means: run another round.
    """
    assert stage.until is not None
    command = stage.until.command
    folders: dict[Path, list[int]] = {}
    for i in range(len(stage.tasks)):
        task = execution.record.task(index, i)
        folder = Path(task.worktree) if task is not None and task.worktree else \
            execution.project
        folders.setdefault(folder, []).append(i)
    failing: list[int] = []
    outputs: list[str] = []
    for folder, tasks in folders.items():
        result = await execution.parts.tasks.run_command(command, folder,
                                                         command_turn(execution))
        if result.refused:
            return False, f"the check `{command}` was not run: {result.output}"
        if not result.passed:
            failing.extend(tasks)
            where = "" if len(folders) == 1 else f"in {folder}:\n"
            outputs.append(where + _tail(result.output))
    passed = not failing
    await execution.save(StageChecked(stage=StageRecord(
        stage=index, rounds=round_, passed=passed, check_output="\n\n".join(outputs),
        failing=tuple(failing))))
    limit = stage.until.max_rounds
    if passed:
        execution.emit(Notice(text=f"stage {stage.name}: the check `{command}` passed "
                                   f"(round {round_})"))
        return True, None
    if round_ >= limit:
        return False, (f"the check `{command}` still fails after {limit} round"
                       f"{'s' * (limit != 1)}")
    execution.emit(Notice(text=f"stage {stage.name}: the check `{command}` failed (round "
                               f"{round_} of {limit}); running again", level="warning"))
    return False, None


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _CHECK_OUTPUT else "…" + text[-_CHECK_OUTPUT:]


def feedback(execution: Execution, index: int, task: TaskRecord) -> str:
    """Return what a task is told in a later round: the check failed, and what it printed."""
    stage = execution.pipeline.stages[index]
    assert isinstance(stage, Stage) and stage.until is not None
    checked = execution.record.stage(index)
    return (f"The check `{stage.until.command}` fails after round {checked.rounds} of "
            f"{stage.until.max_rounds}. It printed:\n\n```\n{checked.check_output}\n```\n\n"
            "Go on with the same task until the check passes; then answer as you were asked "
            "to at first.")


def render_context(execution: Execution, index: int, round_: int, task: TaskRecord
                   ) -> dict[str, Any]:
    """Return what a task's prompt template is rendered with (see `_render`)."""
    record, pipeline = execution.record, execution.pipeline
    stages: dict[str, Any] = {}
    for s, stage in enumerate(pipeline.stages[:index]):
        done = sorted((t for t in record.tasks if t.stage == s), key=lambda t: t.index)
        count = len(stage.tasks) if isinstance(stage, Stage) else len(done)
        by_index = {t.index: t for t in done}
        tasks = [_task_values(by_index.get(i)) for i in range(count)]
        stages[stage.name] = {
            "output": "\n\n".join(t["output"] for t in tasks if t["output"]),
            "tasks": tasks}
    context: dict[str, Any] = {
        "inputs": dict(record.inputs), "stages": stages, "round": round_,
        "run": {"id": record.id}, "workflow": {"name": pipeline.name}}
    stage = pipeline.stages[index]
    if isinstance(stage, Stage) and stage.until is not None:
        checked = record.stage(index)
        context["check"] = {"command": stage.until.command, "output": checked.check_output,
                            "passed": bool(checked.passed)}
    return context


def _task_values(task: TaskRecord | None) -> dict[str, str]:
    if task is None:
        return {"output": "", "agent": "", "state": TaskState.PENDING.value, "branch": "",
                "diff": "", "worktree": ""}
    output = task.output if task.state is TaskState.COMPLETED else ""
    return {"output": output, "agent": task.agent, "state": task.state.value,
            "branch": task.branch or "", "diff": task.diff or "", "worktree": task.worktree or ""}
