"""Triggers: when a routine runs (a cron expression, a fixed interval, or once).

Times are seconds since the epoch (UTC) everywhere outside this module; a cron expression is
read in its time zone (an IANA name), with `croniter`. Daylight saving: a wall-clock time that
does not exist (02:30 on the night clocks go forward) runs at the first one after it, as
croniter gives it; a wall-clock time that happens twice (the night clocks go back) runs once,
at its first instant.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


class TriggerError(ValueError):
    """A trigger cannot be understood; the message says what is wrong and what is expected."""

    def __init__(self, text: str, reason: str) -> None:
        super().__init__(f"{reason}: {text!r}")
        self.text = text
        self.reason = reason


@dataclass(frozen=True, slots=True, kw_only=True)
class Cron:
    """A cron expression (five fields), read in a time zone."""

    expression: str
    zone: str = "UTC"


@dataclass(frozen=True, slots=True, kw_only=True)
class Every:
    """A fixed interval, counted from when the routine was made (or last ran on time)."""

    seconds: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Once:
    """One run at a moment (seconds since the epoch)."""

    at: float


Trigger = Cron | Every | Once

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)", re.IGNORECASE)
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# Intervals shorter than this would let a routine run (and spend) faster than anyone watches.
MIN_INTERVAL_SECONDS = 1.0


def parse_duration(text: str) -> float:
    """Return the seconds in `30m`, `2s`, `1h30m`, `1d` (units ms s m h d w)."""
    cleaned = text.strip()
    position, total = 0, 0.0
    for match in _DURATION.finditer(cleaned):
        if cleaned[position:match.start()].strip():
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()]
        position = match.end()
    if not cleaned or position != len(cleaned) or total <= 0:
        raise TriggerError(text, "a duration is a number and a unit (ms, s, m, h, d, w), "
                           "e.g. 30m, 2s, 1h30m")
    return total


def check_zone(zone: str) -> ZoneInfo:
    """Return the time zone named `zone` (an IANA name such as Europe/Berlin)."""
    try:
        return ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise TriggerError(zone, "no such time zone (use an IANA name, e.g. Europe/Berlin)"
                           ) from None


def local_zone(env: dict[str, str] | None = None) -> str:
    """Return the IANA name of this machine's time zone (`TZ`, else /etc/localtime; UTC)."""
    env = dict(os.environ) if env is None else env
    named = env.get("TZ", "").lstrip(":")
    if named:
        try:
            ZoneInfo(named)
            return named
        except (ZoneInfoNotFoundError, ValueError):
            pass
    try:
        target = str(Path("/etc/localtime").resolve())
    except OSError:
        return "UTC"
    _, found, name = target.partition("zoneinfo/")
    return name if found and name else "UTC"


def cron(expression: str, zone: str) -> Cron:
    """Return a Cron trigger, the expression and the zone checked."""
    from croniter import croniter

    check_zone(zone)
    text = " ".join(expression.split())
    if len(text.split(" ")) != 5 or not croniter.is_valid(text):
        raise TriggerError(expression, "a cron expression has five fields "
                           "(minute hour day month weekday), e.g. '0 9 * * 1-5'")
    return Cron(expression=text, zone=zone)


def every(text: str) -> Every:
    """Return an Every trigger from a duration (`30m`)."""
    seconds = parse_duration(text)
    if seconds < MIN_INTERVAL_SECONDS:
        raise TriggerError(text, f"an interval is at least {MIN_INTERVAL_SECONDS:g} s")
    return Every(seconds=seconds)


def at(text: str, zone: str) -> Once:
    """Return a Once trigger from an ISO time (`2026-12-02T09:00`; no offset: in `zone`)."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise TriggerError(text, "a time is ISO 8601, e.g. 2026-12-02T09:00") from None
    if moment.tzinfo is None:
        # fold=0: a wall time that happens twice is its first instant; one skipped by the
        # clocks going forward is read with the old offset, i.e. moved past the gap.
        moment = moment.replace(tzinfo=check_zone(zone))
    return Once(at=moment.timestamp())


def after(text: str, now: float) -> Once:
    """Return a Once trigger `text` (a duration) after `now`."""
    return Once(at=now + parse_duration(text))


def next_time(trigger: Trigger, after_moment: float) -> float | None:
    """Return the first time the trigger fires after `after_moment` (None: never again)."""
    match trigger:
        case Once(at=moment):
            return moment if moment > after_moment else None
        case Every(seconds=seconds):
            return after_moment + seconds
        case Cron(expression=expression, zone=zone):
            return _next_cron(expression, check_zone(zone), after_moment)


def _next_cron(expression: str, zone: ZoneInfo, after_moment: float) -> float:
    from croniter import croniter

    start = datetime.fromtimestamp(after_moment, zone)
    found = croniter(expression, start).get_next(datetime)
    wall = start.replace(tzinfo=None)
    # The night clocks go back, croniter gives 02:30 twice: a wall-clock time runs once.
    while found.replace(tzinfo=None) <= wall:
        found = croniter(expression, found).get_next(datetime)
    return float(found.timestamp())


def catch_up(trigger: Trigger, due: float, now: float) -> float | None:
    """Return the first occurrence after `now` that follows occurrence `due` (an interval
    keeps its rhythm; a cron expression gives its next time)."""
    match trigger:
        case Every(seconds=seconds):
            missed = int((now - due) // seconds) + 1 if now >= due else 1
            return due + missed * seconds
        case _:
            return next_time(trigger, max(now, due))


def describe(trigger: Trigger) -> str:
    """Return the trigger as a person reads it."""
    match trigger:
        case Cron(expression=expression, zone=zone):
            return f"cron '{expression}' ({zone})"
        case Every(seconds=seconds):
            return f"every {format_duration(seconds)}"
        case Once(at=moment):
            when = datetime.fromtimestamp(moment).astimezone()
            return f"once at {when.isoformat('T', 'minutes')}"


def format_duration(seconds: float) -> str:
    """Return `90` as `1m30s`."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    parts = []
    rest = round(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if rest >= size:
            parts.append(f"{rest // size}{unit}")
            rest %= size
    return "".join(parts) or "0s"
