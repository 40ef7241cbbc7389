"""The lines of a run file: one function per direction, strict on read.

A run file is JSON lines: a header (the run's id, project, definition and inputs), then one
line per `RunChange`. A reader that finds a value of the wrong shape raises RunCodecError; the
store skips that line and says so. Messages use the session codec, so a task's transcript is
stored exactly as a session's is.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

from aimon_core.agent import RunState, TaskState
from aimon_core.llm import Usage
from aimon_core.workflow._record import (
    RunChange,
    RunEnded,
    RunId,
    RunRecord,
    StageChecked,
    StageRecord,
    TaskChanged,
    TaskMessage,
    TaskRecord,
    is_run_id,
)

FORMAT_VERSION = 1
JSONObject = dict[str, Any]
_T = TypeVar("_T")


class RunCodecError(ValueError):
    """A line of a run file does not have the shape of any line."""


def header_to_json(record: RunRecord) -> JSONObject:
    """Encode what a run starts with: id, project, definition, inputs, base commit."""
    from aimon_core.workflow._parse import pipeline_to_mapping

    return {"t": "run", "v": FORMAT_VERSION, "id": record.id, "project": record.project_root,
            "created": record.created_at.isoformat(), "definition": pipeline_to_mapping(
                record.pipeline), "source": record.pipeline.source,
            "inputs": dict(record.inputs), "base": record.base_commit}


def header_from_json(obj: object) -> RunRecord:
    """Decode a run file's header into a record with no task yet; raise RunCodecError."""
    from aimon_core.workflow._parse import WorkflowDefinitionError, pipeline_from_mapping

    data = _object(obj)
    if data.get("t") != "run":
        raise RunCodecError("the first line is not a run header")
    run_id = _get(data, "id", str)
    if not is_run_id(run_id):
        raise RunCodecError(f"{run_id!r} is not a run id")
    inputs = _get(data, "inputs", dict)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in inputs.items()):
        raise RunCodecError("'inputs' must map names to text")
    try:
        pipeline = pipeline_from_mapping(_get(data, "definition", dict),
                                         source=str(data.get("source") or "<run record>"))
    except WorkflowDefinitionError as exc:
        raise RunCodecError(f"the stored definition cannot be read: {exc}") from None
    created = _time(data, "created")
    base = data.get("base")
    return RunRecord(id=RunId(run_id), pipeline=pipeline, inputs=inputs,
                     project_root=_get(data, "project", str), created_at=created,
                     updated_at=created, base_commit=base if isinstance(base, str) else None)


def change_to_json(change: RunChange) -> JSONObject:
    """Encode one change of a run."""
    from aimon_core.session import message_to_json

    match change:
        case TaskChanged(task=task):
            return {"t": "task", **_task_json(task)}
        case TaskMessage(stage=stage, index=index, round=round_, message=message):
            return {"t": "msg", "stage": stage, "index": index, "round": round_,
                    "m": message_to_json(message)}
        case StageChecked(stage=stage):
            return {"t": "stage", "stage": stage.stage, "rounds": stage.rounds,
                    "passed": stage.passed, "check_output": stage.check_output,
                    "failing": list(stage.failing)}
        case RunEnded(state=state, reason=reason, at=at):
            return {"t": "state", "state": state.value, "reason": reason, "at": at.isoformat()}


def _task_json(task: TaskRecord) -> JSONObject:
    usage = task.usage
    return {
        "stage": task.stage, "index": task.index, "label": task.label, "agent": task.agent,
        "state": task.state.value, "output": task.output, "error": task.error,
        "round": task.round, "attempt": task.attempt, "execution": task.execution_id,
        "usage": [usage.input_tokens, usage.output_tokens, usage.cache_read_tokens,
                  usage.cache_write_tokens],
        "cost": task.cost_usd, "duration": task.duration_s,
        "started": task.started_at.isoformat() if task.started_at else None,
        "finished": task.finished_at.isoformat() if task.finished_at else None,
        "worktree": task.worktree, "branch": task.branch, "diff": task.diff,
    }


def change_from_json(obj: object) -> RunChange:
    """Decode one change line; raise RunCodecError if it is malformed."""
    from aimon_core.session import SessionCodecError, message_from_json

    data = _object(obj)
    kind = data.get("t")
    if kind == "task":
        return TaskChanged(task=_task(data))
    if kind == "msg":
        try:
            message = message_from_json(data.get("m"))
        except SessionCodecError as exc:
            raise RunCodecError(str(exc)) from None
        return TaskMessage(stage=_get(data, "stage", int), index=_get(data, "index", int),
                           round=_get(data, "round", int), message=message)
    if kind == "stage":
        passed = data.get("passed")
        failing = _get(data, "failing", list)
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in failing):
            raise RunCodecError("'failing' must be a list of task numbers")
        return StageChecked(stage=StageRecord(
            stage=_get(data, "stage", int), rounds=_get(data, "rounds", int),
            passed=passed if isinstance(passed, bool) else None,
            check_output=_get(data, "check_output", str), failing=tuple(failing)))
    if kind == "state":
        return RunEnded(state=_enum(RunState, _get(data, "state", str)),
                        reason=_get(data, "reason", str), at=_time(data, "at"))
    raise RunCodecError(f"unknown line type {kind!r}")


def _task(data: Mapping[str, Any]) -> TaskRecord:
    usage = _get(data, "usage", list)
    if len(usage) != 4 or not all(isinstance(n, int) and not isinstance(n, bool)
                                  for n in usage):
        raise RunCodecError("'usage' must be four whole numbers")
    return TaskRecord(
        stage=_get(data, "stage", int), index=_get(data, "index", int),
        label=_get(data, "label", str), agent=_get(data, "agent", str),
        state=_enum(TaskState, _get(data, "state", str)), output=_get(data, "output", str),
        error=_get(data, "error", str), round=_get(data, "round", int),
        attempt=_get(data, "attempt", int), execution_id=_get(data, "execution", str),
        usage=Usage(input_tokens=usage[0], output_tokens=usage[1], cache_read_tokens=usage[2],
                    cache_write_tokens=usage[3]),
        cost_usd=float(_get(data, "cost", (int, float))),
        duration_s=float(_get(data, "duration", (int, float))),
        started_at=_maybe_time(data, "started"), finished_at=_maybe_time(data, "finished"),
        worktree=_maybe(data, "worktree"), branch=_maybe(data, "branch"),
        diff=_maybe(data, "diff"))


def _object(obj: object) -> Mapping[str, Any]:
    if not isinstance(obj, dict):
        raise RunCodecError("a line must be a JSON object")
    return obj


def _get(data: Mapping[str, Any], key: str, kind: type[_T] | tuple[type, ...]) -> _T:
    value = data.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise RunCodecError(f"{key!r} is missing or of the wrong type")
    return value  # type: ignore[return-value]


def _maybe(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise RunCodecError(f"{key!r} must be text or null")
    return value


def _time(data: Mapping[str, Any], key: str) -> datetime:
    try:
        return datetime.fromisoformat(_get(data, key, str))
    except ValueError:
        raise RunCodecError(f"{key!r} is not a time") from None


def _maybe_time(data: Mapping[str, Any], key: str) -> datetime | None:
    return None if data.get(key) is None else _time(data, key)


def _enum(kind: type[Any], value: str) -> Any:
    try:
        return kind(value)
    except ValueError:
        raise RunCodecError(f"unknown {kind.__name__} {value!r}") from None
