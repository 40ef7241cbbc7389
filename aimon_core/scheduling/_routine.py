"""Routines and their runs, as values, and their JSON (one function per direction).

A routine is a prompt that runs by itself: on a trigger, in a project, with an agent, as a
fresh execution each time (its own session) or appended to a named session. Each run is an
execution with no session of a person's: it has an id, a budget of its own, and its
transcript is a session in the record store, listed with the run.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aimon_core.scheduling._trigger import Cron, Every, Once, Trigger, TriggerError

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class RoutineError(ValueError):
    """A routine cannot be made, found or changed; the message says why."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{reason}: {name!r}")
        self.name = name
        self.reason = reason


class UnknownRoutineError(RoutineError):
    """No routine has that name."""

    def __init__(self, name: str) -> None:
        super().__init__(name, "no such routine")


def check_name(name: str) -> str:
    """Return `name` if it can name a routine (letters, digits, `.`, `_`, `-`; 64 at most)."""
    if not _NAME.fullmatch(name):
        raise RoutineError(name, "a routine's name is 1-64 letters, digits, '.', '_' or '-', "
                           "starting with a letter or digit")
    return name


class RoutineState(enum.Enum):
    """Whether a routine runs when due."""

    ACTIVE = "active"
    PAUSED = "paused"  # by a person, the kill switch, or failures in a row
    DONE = "done"  # a one-shot that ran, or a routine that reached its max runs


class RunOutcome(enum.Enum):
    """How a run ended."""

    RUNNING = "running"
    OK = "ok"
    FAILED = "failed"  # a model error, a limit, a setup error
    INTERRUPTED = "interrupted"  # stopped: the kill switch, a shutdown, a service that died
    SKIPPED = "skipped"  # due but not run: a limit of the day, the previous run still running


@dataclass(frozen=True, slots=True, kw_only=True)
class RoutineLimits:
    """What a routine may spend and how it stops (None: no limit).

    Args:
        max_runs: runs in all; then the routine is done.
        max_cost_usd: cost of one run; the run is stopped when it passes it.
        max_tokens: tokens of one run (input and output).
        runs_per_day: runs in any 24 hours.
        cost_per_day_usd: cost of the runs of any 24 hours.
        tokens_per_day: tokens of the runs of any 24 hours.
        pause_after_failures: failed runs in a row that pause the routine.
    """

    max_runs: int | None = None
    max_cost_usd: float | None = None
    max_tokens: int | None = None
    runs_per_day: int | None = None
    cost_per_day_usd: float | None = None
    tokens_per_day: int | None = None
    pause_after_failures: int = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class Routine:
    """A scheduled prompt: what runs, when, where, within which limits, and how it stands.

    Args:
        session: a session id the runs are appended to; None: each run is a new session.
        skip_missed: an occurrence missed while no service ran is skipped (default: the
            missed occurrences run once, coalesced, when the service is back).
        origin: where the definition comes from: "" (a command or a tool) or the path of a
            `.aimon/routines/*.md` file.
        origin_item: the trust digest of that file as it read when it was scheduled.
        next_run: when it runs next (None: not scheduled).
        runs: runs started so far.
        failures: failed runs in a row.
        not_before: after failures, occurrences before this are skipped (the backoff).
        note: why it is paused or done, for a person.
    """

    name: str
    trigger: Trigger
    prompt: str
    project: str
    agent: str | None = None
    session: str | None = None
    limits: RoutineLimits = field(default_factory=RoutineLimits)
    skip_missed: bool = False
    origin: str = ""
    origin_item: str = ""
    created: float = 0.0
    state: RoutineState = RoutineState.ACTIVE
    next_run: float | None = None
    runs: int = 0
    failures: int = 0
    not_before: float = 0.0
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class RoutineRun:
    """One run of a routine: when, in which session, how it ended, what it cost.

    Args:
        scheduled_for: the occurrence it ran for (None: started by hand, `schedule run`).
        session_id: the session holding its transcript ("" until it is opened).
        refusals: tool calls refused because they would have asked a person.
        message: the end of the answer, or why it failed or was skipped.
    """

    id: str
    routine: str
    started: float
    scheduled_for: float | None = None
    finished: float | None = None
    outcome: RunOutcome = RunOutcome.RUNNING
    session_id: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    refusals: int = 0
    message: str = ""
    holder: str = ""


# ------------------------------------------------------------------------------- JSON


def trigger_to_json(trigger: Trigger) -> dict[str, Any]:
    """Return the trigger as JSON data."""
    match trigger:
        case Cron(expression=expression, zone=zone):
            return {"cron": expression, "zone": zone}
        case Every(seconds=seconds):
            return {"every": seconds}
        case Once(at=moment):
            return {"at": moment}


def trigger_from_json(data: object) -> Trigger:
    """Return the trigger JSON data describe; raise TriggerError."""
    from aimon_core.scheduling._trigger import cron

    if isinstance(data, Mapping):
        if isinstance(data.get("cron"), str) and isinstance(data.get("zone", "UTC"), str):
            return cron(data["cron"], data.get("zone", "UTC"))
        seconds = data.get("every")
        if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds > 0:
            return Every(seconds=float(seconds))
        moment = data.get("at")
        if isinstance(moment, int | float) and not isinstance(moment, bool):
            return Once(at=float(moment))
    raise TriggerError(repr(data), "a trigger is {cron, zone}, {every} or {at}")


def routine_to_json(routine: Routine) -> dict[str, Any]:
    """Return the routine as JSON data (its definition and how it stands)."""
    limits = routine.limits
    return {
        "name": routine.name, "trigger": trigger_to_json(routine.trigger),
        "prompt": routine.prompt, "project": routine.project, "agent": routine.agent,
        "session": routine.session, "skip_missed": routine.skip_missed,
        "origin": routine.origin, "origin_item": routine.origin_item,
        "created": routine.created,
        "limits": {"max_runs": limits.max_runs, "max_cost_usd": limits.max_cost_usd,
                   "max_tokens": limits.max_tokens, "runs_per_day": limits.runs_per_day,
                   "cost_per_day_usd": limits.cost_per_day_usd,
                   "tokens_per_day": limits.tokens_per_day,
                   "pause_after_failures": limits.pause_after_failures},
        "state": routine.state.value, "next_run": routine.next_run, "runs": routine.runs,
        "failures": routine.failures, "not_before": routine.not_before, "note": routine.note,
    }


def routine_from_json(data: Mapping[str, Any]) -> Routine:
    """Return the routine JSON data describe; raise RoutineError or TriggerError."""
    name = check_name(_text(data, "name", "") or "")
    try:
        limits_data = data.get("limits") or {}
        limits = RoutineLimits(
            max_runs=whole(limits_data, "max_runs"),
            max_cost_usd=amount(limits_data, "max_cost_usd"),
            max_tokens=whole(limits_data, "max_tokens"),
            runs_per_day=whole(limits_data, "runs_per_day"),
            cost_per_day_usd=amount(limits_data, "cost_per_day_usd"),
            tokens_per_day=whole(limits_data, "tokens_per_day"),
            pause_after_failures=whole(limits_data, "pause_after_failures") or 3)
        return Routine(
            name=name, trigger=trigger_from_json(data.get("trigger")),
            prompt=_text(data, "prompt", None) or _missing(name, "prompt"),
            project=_text(data, "project", None) or _missing(name, "project"),
            agent=_text(data, "agent", None), session=_text(data, "session", None),
            limits=limits, skip_missed=data.get("skip_missed") is True,
            origin=_text(data, "origin", "") or "",
            origin_item=_text(data, "origin_item", "") or "",
            created=float(data.get("created") or 0),
            state=RoutineState(data.get("state", "active")),
            next_run=amount(data, "next_run"), runs=int(data.get("runs") or 0),
            failures=int(data.get("failures") or 0),
            not_before=float(data.get("not_before") or 0), note=_text(data, "note", "") or "")
    except (TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, RoutineError | TriggerError):
            raise
        raise RoutineError(name, f"not a routine ({exc})") from None


def _text(data: Mapping[str, Any], key: str, default: str | None) -> str | None:
    value = data.get(key, default)
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{key} must be a string")


def _missing(name: str, key: str) -> str:
    raise RoutineError(name, f"a routine needs a {key}")


def whole(data: Mapping[str, Any], key: str) -> int | None:
    """Return `data[key]`: absent, or a whole number above 0; raise ValueError naming it."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise ValueError(f"{key} must be a whole number above 0")


def amount(data: Mapping[str, Any], key: str) -> float | None:
    """Return `data[key]`: absent, or a number of 0 or more; raise ValueError naming it."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    raise ValueError(f"{key} must be a number of 0 or more")


def run_to_json(run: RoutineRun) -> dict[str, Any]:
    """Return the run as JSON data."""
    return {"id": run.id, "routine": run.routine, "started": run.started,
            "scheduled_for": run.scheduled_for, "finished": run.finished,
            "outcome": run.outcome.value, "session_id": run.session_id,
            "input_tokens": run.input_tokens, "output_tokens": run.output_tokens,
            "cost_usd": run.cost_usd, "refusals": run.refusals, "message": run.message,
            "holder": run.holder}


def run_from_json(data: Mapping[str, Any]) -> RoutineRun:
    """Return the run JSON data describe."""
    return RoutineRun(
        id=str(data["id"]), routine=str(data["routine"]), started=float(data["started"]),
        scheduled_for=amount(data, "scheduled_for"), finished=amount(data, "finished"),
        outcome=RunOutcome(data.get("outcome", "running")),
        session_id=str(data.get("session_id") or ""),
        input_tokens=int(data.get("input_tokens") or 0),
        output_tokens=int(data.get("output_tokens") or 0),
        cost_usd=float(data.get("cost_usd") or 0), refusals=int(data.get("refusals") or 0),
        message=str(data.get("message") or ""), holder=str(data.get("holder") or ""))
