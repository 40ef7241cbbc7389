"""Read a workflow definition from YAML (or a mapping of the same shape), and write it back.

Outside input is checked whole before anything runs: an unknown key, a value of the wrong
kind, a stage named twice, a prompt that names a stage that has not run yet (or a task it does
not have) or an input the workflow does not declare is an error that names the file and the
place (`stages[1].tasks[0].prompt`). `pipeline_to_mapping` writes the same shape back: a run
record keeps the definition it ran, and resume reads it from there.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from aimon_core.workflow._model import (
    AgentTask,
    AnyStage,
    MergeStage,
    Pipeline,
    Stage,
    TaskLimits,
    UntilCheck,
    WorkflowBudget,
    WorkflowInput,
)
from aimon_core.workflow._render import check_template

T = TypeVar("T")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_MAX_ROUNDS = 100


class WorkflowDefinitionError(ValueError):
    """A workflow definition cannot be used; says which file, where in it, and why."""

    def __init__(self, source: str, where: str, reason: str) -> None:
        place = f"{source}: {where}: " if where else f"{source}: "
        super().__init__(place + reason)
        self.source = source
        self.where = where
        self.reason = reason


def parse_pipeline(text: str, *, source: str = "<text>", default_name: str = "") -> Pipeline:
    """Return the workflow a YAML document defines; raise WorkflowDefinitionError."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        raise WorkflowDefinitionError(source, "", f"not valid YAML: {exc}") from None
    return pipeline_from_mapping(data, source=source, default_name=default_name)


def pipeline_from_mapping(data: object, *, source: str = "<mapping>",
                          default_name: str = "") -> Pipeline:
    """Return the workflow a mapping of the YAML shape defines; raise WorkflowDefinitionError."""
    return _Reader(source).pipeline(data, default_name)


_TOP = ("name", "description", "inputs", "budget", "stages")
_STAGE = ("name", "tasks", "concurrency", "retry", "continue_on_error", "until", "max_rounds",
          "merge")
_TASK = ("agent", "prompt", "name", "worktree", "limits", "retry")
_LIMITS = ("iterations", "tokens", "cost", "time")
_BUDGET = ("tokens", "cost", "time")


class _Reader:
    """Reads one definition, remembering its source for every error."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, reason: str) -> WorkflowDefinitionError:
        return WorkflowDefinitionError(self.source, where, reason)

    def mapping(self, value: object, where: str, keys: tuple[str, ...]) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(where, f"expected a mapping of {', '.join(keys)}, "
                                   f"not {_kind(value)}")
        for key in value:
            if key not in keys:
                near = difflib.get_close_matches(str(key), keys, n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise self.fail(where, f"unknown key {key!r}{hint}; known: {', '.join(keys)}")
        return value

    def text(self, value: object, where: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(where, f"expected some text, not {_kind(value)}")
        return value

    def name(self, value: object, where: str) -> str:
        text = self.text(value, where).strip()
        if not _NAME.fullmatch(text):
            raise self.fail(where, f"{text!r} is not a name: use letters, digits, - and _ "
                                   "(up to 64), starting with a letter or digit")
        return text

    def flag(self, value: object, where: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(where, f"expected true or false, not {_kind(value)}")
        return value

    def count(self, value: object, where: str, *, least: int = 1) -> int:
        number = _count(value)
        if number is None or number < least:
            raise self.fail(where, f"expected a whole number of at least {least} "
                                   f"(e.g. 3, 50k), not {value!r}")
        return number

    def optional(self, data: Mapping[str, Any], key: str, where: str,
                 read: Callable[[object, str], T]) -> T | None:
        value = data.get(key)
        return None if value is None else read(value, f"{where}.{key}" if where else key)

    def pipeline(self, data: object, default_name: str) -> Pipeline:
        top = self.mapping(data, "", _TOP)
        name = self.name(top.get("name") or default_name, "name")
        raw_stages = top.get("stages")
        if not isinstance(raw_stages, list) or not raw_stages:
            raise self.fail("stages", "expected a list of stages (at least one)")
        stages = [self.stage(raw, f"stages[{i}]") for i, raw in enumerate(raw_stages)]
        pipeline = Pipeline(
            name=name, stages=tuple(stages), source=self.source,
            description=str(top.get("description") or "").strip(),
            inputs=self.inputs(top.get("inputs")),
            budget=self.budget(top.get("budget"), "budget"))
        self.check(pipeline)
        return pipeline

    def inputs(self, value: object) -> tuple[WorkflowInput, ...]:
        if value is None:
            return ()
        if isinstance(value, list):
            return tuple(WorkflowInput(name=self.name(v, f"inputs[{i}]"))
                         for i, v in enumerate(value))
        if not isinstance(value, Mapping):
            raise self.fail("inputs", f"expected a list of names or a mapping, not "
                                      f"{_kind(value)}")
        found = []
        for key, spec in value.items():
            where = f"inputs.{key}"
            name = self.name(key, where)
            if spec is None or isinstance(spec, str):
                found.append(WorkflowInput(name=name, description=spec or ""))
                continue
            fields = self.mapping(spec, where, ("description", "default"))
            default = fields.get("default")
            found.append(WorkflowInput(
                name=name, description=str(fields.get("description") or ""),
                default=None if default is None else str(default)))
        return tuple(found)

    def budget(self, value: object, where: str) -> WorkflowBudget:
        if value is None:
            return WorkflowBudget()
        fields = self.mapping(value, where, _BUDGET)
        return WorkflowBudget(max_tokens=self.optional(fields, "tokens", where, self.count),
                              max_cost_usd=self.optional(fields, "cost", where, self.cost),
                              max_seconds=self.optional(fields, "time", where, self.seconds))

    def limits(self, value: object, where: str) -> TaskLimits:
        fields = self.mapping(value, where, _LIMITS)
        return TaskLimits(max_iterations=self.optional(fields, "iterations", where, self.count),
                          max_tokens=self.optional(fields, "tokens", where, self.count),
                          max_cost_usd=self.optional(fields, "cost", where, self.cost),
                          max_seconds=self.optional(fields, "time", where, self.seconds))

    def cost(self, value: object, where: str) -> float:
        amount = _number(str(value).strip().removeprefix("$")) if not isinstance(
            value, bool) else None
        if amount is None or amount <= 0:
            raise self.fail(where, f"expected an amount in dollars (e.g. 0.50), not {value!r}")
        return amount

    def seconds(self, value: object, where: str) -> float:
        seconds = _duration(value)
        if seconds is None or seconds <= 0:
            raise self.fail(where, f"expected a duration (e.g. 90s, 10m, 1h), not {value!r}")
        return seconds

    def stage(self, value: object, where: str) -> AnyStage:
        fields = self.mapping(value, where, _STAGE)
        name = self.name(fields.get("name"), f"{where}.name")
        continue_on_error = bool(self.optional(fields, "continue_on_error", where, self.flag))
        if "merge" in fields:
            extra = sorted(set(fields) - {"name", "merge", "continue_on_error"})
            if extra:
                raise self.fail(where, f"a merge stage takes only name, merge and "
                                       f"continue_on_error, not {', '.join(extra)}")
            return MergeStage(name=name, stages=self.merged(fields["merge"], f"{where}.merge"),
                              continue_on_error=continue_on_error)
        raw_tasks = fields.get("tasks")
        if not isinstance(raw_tasks, list) or not raw_tasks:
            raise self.fail(f"{where}.tasks", "expected a list of tasks (at least one), or "
                                              "`merge:` for a merge stage")
        tasks = tuple(self.task(t, f"{where}.tasks[{i}]") for i, t in enumerate(raw_tasks))
        return Stage(name=name, tasks=tasks, continue_on_error=continue_on_error,
                     concurrency=self.optional(fields, "concurrency", where, self.count),
                     retry=self.optional(fields, "retry", where, self.retries) or 0,
                     until=self.until(fields, where))

    def retries(self, value: object, where: str) -> int:
        return self.count(value, where, least=0)

    def merged(self, value: object, where: str) -> tuple[str, ...]:
        if value is True:
            return ()
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not value:
            raise self.fail(where, "expected true (every earlier stage) or a list of stage "
                                   "names")
        return tuple(self.name(v, f"{where}[{i}]") for i, v in enumerate(value))

    def until(self, fields: Mapping[str, Any], where: str) -> UntilCheck | None:
        raw = fields.get("until")
        rounds = fields.get("max_rounds")
        if raw is None:
            if rounds is not None:
                raise self.fail(f"{where}.max_rounds", "max_rounds needs `until` (a check)")
            return None
        if isinstance(raw, Mapping):
            spec = self.mapping(raw, f"{where}.until", ("command", "max_rounds"))
            command, rounds = spec.get("command"), spec.get("max_rounds", rounds)
        else:
            command = raw
        limit = 3 if rounds is None else self.count(rounds, f"{where}.max_rounds")
        if limit > _MAX_ROUNDS:
            raise self.fail(f"{where}.max_rounds", f"at most {_MAX_ROUNDS} rounds")
        return UntilCheck(command=self.text(command, f"{where}.until").strip(), max_rounds=limit)

    def task(self, value: object, where: str) -> AgentTask:
        fields = self.mapping(value, where, _TASK)
        limits = fields.get("limits")
        return AgentTask(
            agent=self.text(fields.get("agent"), f"{where}.agent").strip(),
            prompt=self.text(fields.get("prompt"), f"{where}.prompt"),
            name=self.optional(fields, "name", where, self.name) or "",
            worktree=bool(self.optional(fields, "worktree", where, self.flag)),
            limits=TaskLimits() if limits is None else self.limits(limits, f"{where}.limits"),
            retry=self.optional(fields, "retry", where, self.retries))

    def check(self, pipeline: Pipeline) -> None:
        """Check what the types of a Python-built workflow do not hold by themselves."""
        self.name(pipeline.name, "name")
        if not pipeline.stages:
            raise self.fail("stages", "a workflow needs at least one stage")
        seen: set[str] = set()
        for s, stage in enumerate(pipeline.stages):
            self.name(stage.name, f"stages[{s}].name")
            if stage.name in seen:
                raise self.fail(f"stages[{s}].name", f"a stage is already called {stage.name!r}")
            seen.add(stage.name)
            if isinstance(stage, Stage):
                self.check_stage(stage, f"stages[{s}]")
        self.check_prompts(pipeline)
        self.check_merges(pipeline)

    def check_stage(self, stage: Stage, where: str) -> None:
        if not stage.tasks:
            raise self.fail(f"{where}.tasks", "a stage needs at least one task")
        if stage.concurrency is not None and stage.concurrency < 1:
            raise self.fail(f"{where}.concurrency", "at least 1")
        if stage.until is not None and not 1 <= stage.until.max_rounds <= _MAX_ROUNDS:
            raise self.fail(f"{where}.until", f"max_rounds must be 1 to {_MAX_ROUNDS}")
        for i, task in enumerate(stage.tasks):
            self.text(task.agent, f"{where}.tasks[{i}].agent")
            self.text(task.prompt, f"{where}.tasks[{i}].prompt")

    def check_prompts(self, pipeline: Pipeline) -> None:
        declared = {i.name for i in pipeline.inputs} if pipeline.inputs else None
        for s, stage in enumerate(pipeline.stages):
            if not isinstance(stage, Stage):
                continue
            for t, task in enumerate(stage.tasks):
                problem = check_template(task.prompt, pipeline, s, declared)
                if problem is not None:
                    raise self.fail(f"stages[{s}].tasks[{t}].prompt", problem)

    def check_merges(self, pipeline: Pipeline) -> None:
        for s, stage in enumerate(pipeline.stages):
            if not isinstance(stage, MergeStage):
                continue
            for name in stage.stages:
                index = pipeline.stage_named(name)
                if index is None or index >= s:
                    raise self.fail(f"stages[{s}].merge", f"{name!r} is not an earlier stage")
            merged = [pipeline.stages[i] for i in merged_stages(pipeline, s)]
            if not any(isinstance(m, Stage) and any(t.worktree for t in m.tasks)
                       for m in merged):
                raise self.fail(f"stages[{s}].merge", "no task of the stages it merges has "
                                                      "`worktree: true`: nothing to merge")


def parse_budget(*, tokens: str | None = None, cost: str | None = None,
                 time: str | None = None, source: str = "options") -> WorkflowBudget:
    """Return a budget from text (`200k`, `1.50`, `30m`); WorkflowDefinitionError naming
    the value that is not one."""
    reader = _Reader(source)
    return WorkflowBudget(
        max_tokens=None if tokens is None else reader.count(tokens, "tokens"),
        max_cost_usd=None if cost is None else reader.cost(cost, "cost"),
        max_seconds=None if time is None else reader.seconds(time, "time"))


def check_pipeline(pipeline: Pipeline) -> None:
    """Check a workflow built in Python as a file's is checked; raise WorkflowDefinitionError."""
    _Reader(pipeline.source).check(pipeline)


def merged_stages(pipeline: Pipeline, index: int) -> list[int]:
    """Return the indexes of the stages the merge stage at `index` merges, in order."""
    stage = pipeline.stages[index]
    assert isinstance(stage, MergeStage)
    if not stage.stages:
        return list(range(index))
    return [i for i in range(index) if pipeline.stages[i].name in stage.stages]


def _kind(value: object) -> str:
    if value is None:
        return "nothing"
    return {str: "text", bool: "true/false", int: "a number", float: "a number",
            list: "a list", dict: "a mapping"}.get(type(value), type(value).__name__)


def _number(text: str) -> float | None:
    try:
        return float(text.replace("_", "").replace(",", ""))
    except ValueError:
        return None


def _count(value: object) -> int | None:
    """Return 20, 50k, 1.5m or 200_000 as a whole number; None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([km]?)", str(value).strip().lower()
                         .replace("_", "").replace(",", ""))
    if match is None:
        return None
    number = float(match.group(1)) * {"": 1, "k": 1000, "m": 1_000_000}[match.group(2)]
    return int(number) if number == int(number) else None


_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def _duration(value: object) -> float | None:
    """Return 90, "90s", "10m", "1h30m" in seconds; None when it is not a duration."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip().lower().replace(" ", "")
    parts = re.findall(r"(\d+(?:\.\d+)?)(min|[smh]?)", text)
    if not text or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNIT[u] for n, u in parts)


def pipeline_to_mapping(pipeline: Pipeline) -> dict[str, Any]:
    """Return the definition in the YAML shape (what `pipeline_from_mapping` reads back)."""
    data: dict[str, Any] = {"name": pipeline.name}
    if pipeline.description:
        data["description"] = pipeline.description
    if pipeline.inputs:
        data["inputs"] = {i.name: _without_none({"description": i.description or None,
                                                  "default": i.default})
                          for i in pipeline.inputs}
    budget = _without_none({"tokens": pipeline.budget.max_tokens,
                            "cost": pipeline.budget.max_cost_usd,
                            "time": pipeline.budget.max_seconds})
    if budget:
        data["budget"] = budget
    data["stages"] = [_stage_mapping(stage) for stage in pipeline.stages]
    return data


def _stage_mapping(stage: AnyStage) -> dict[str, Any]:
    match stage:
        case MergeStage(name=name, stages=stages, continue_on_error=go_on):
            return {"name": name, "merge": list(stages) or True,
                    **({"continue_on_error": True} if go_on else {})}
        case Stage():
            data: dict[str, Any] = {"name": stage.name,
                                    "tasks": [_task_mapping(t) for t in stage.tasks]}
            data.update(_without_none({
                "concurrency": stage.concurrency, "retry": stage.retry or None,
                "continue_on_error": stage.continue_on_error or None}))
            if stage.until is not None:
                data["until"] = {"command": stage.until.command,
                                 "max_rounds": stage.until.max_rounds}
            return data


def _task_mapping(task: AgentTask) -> dict[str, Any]:
    limits = _without_none({"iterations": task.limits.max_iterations,
                            "tokens": task.limits.max_tokens, "cost": task.limits.max_cost_usd,
                            "time": task.limits.max_seconds})
    return {"agent": task.agent, "prompt": task.prompt, **_without_none({
        "name": task.name or None, "worktree": task.worktree or None,
        "limits": limits or None, "retry": task.retry})}


def _without_none(values: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}
