"""How commands write numbers, durations, times and budgets, and read them back."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from aimon_core.command._registry import CommandError

if TYPE_CHECKING:
    from aimon_core.agent import ExecutionBudget
    from aimon_core.session import BudgetOverride


def plural(count: int, noun: str, many: str = "") -> str:
    """Return `1 file`, `2 files` (`many` for an irregular plural: `1 entry`, `2 entries`)."""
    return f"{count:,} {noun if count == 1 else many or noun + 's'}"


def format_tokens(count: int) -> str:
    """Return a token count the short way: 340, 1.2k, 56k, 1.3M."""
    if count < 1000:
        return str(count)
    if count < 10_000:
        return f"{count / 1000:.1f}k"
    if count < 1_000_000:
        return f"{count // 1000}k"
    return f"{count / 1_000_000:.1f}M"


def format_cost(cost_usd: float) -> str:
    """Return a cost in dollars: four decimals under a dollar, two above."""
    return f"${cost_usd:.4f}" if cost_usd < 1 else f"${cost_usd:.2f}"


def format_seconds(seconds: float) -> str:
    """Return a duration as 45s, 5m, 1m 30s, 2h or 1h 5m."""
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h"] if hours else []
    if minutes:
        parts.append(f"{minutes}m")
    if secs or not parts:
        parts.append(f"{secs}s")
    return " ".join(parts)


def format_ago(moment: datetime, now: datetime | None = None) -> str:
    """Return how long ago `moment` was: "just now", "5 min ago", "3 h ago", "2 days ago"."""
    seconds = ((now or datetime.now(UTC)) - moment).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86_400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86_400)
    return "yesterday" if days == 1 else f"{days} days ago"


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def format_when(moment: datetime, now: datetime | None = None) -> str:
    """Return when `moment` was in local time: "14:05" today, "Nov 28 14:05" on another day of
    this year, "Nov 28 2025 14:05" in another year (session listings).

    `now` (aware) sets both today and the time zone; default: the local time now. Month names
    are English whatever the locale, like the rest of aimon's text.
    """
    now = now or datetime.now(UTC).astimezone()
    local = moment.astimezone(now.tzinfo)
    clock = f"{local.hour:02d}:{local.minute:02d}"
    if local.date() == now.date():
        return clock
    day = f"{_MONTHS[local.month - 1]} {local.day}"
    return f"{day} {clock}" if local.year == now.year else f"{day} {local.year} {clock}"


def describe_budget(budget: ExecutionBudget) -> str:
    """Return a turn's limits in words."""
    parts = [
        "no iteration limit" if budget.max_iterations is None
        else f"at most {budget.max_iterations} iterations",
        "no token limit" if budget.max_tokens is None
        else f"at most {format_tokens(budget.max_tokens)} tokens",
        "no time limit" if budget.max_seconds is None
        else f"at most {format_seconds(budget.max_seconds)}",
    ]
    return " · ".join(parts)


def describe_override(override: BudgetOverride | None) -> str:
    """Return the session's budget override in words ("none" when the agent's limits apply)."""
    if override is None:
        return "none (the agent's limits apply)"
    parts = []
    if override.max_iterations is not None:
        parts.append(f"iterations {override.max_iterations}")
    if override.max_tokens is not None:
        parts.append(f"tokens {format_tokens(override.max_tokens)}")
    if override.max_seconds is not None:
        parts.append(f"time {format_seconds(override.max_seconds)}")
    return ", ".join(parts) or "none (the agent's limits apply)"


_UNITS = {"": 1, "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "m": 60, "min": 60,
          "mins": 60, "minute": 60, "minutes": 60, "h": 3600, "hour": 3600, "hours": 3600}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)")


def parse_duration(text: str) -> float:
    """Parse 90, 90s, 5m, 1.5h or 1m30s into seconds; raise CommandError otherwise."""
    compact = text.strip().lower().replace(" ", "")
    parts = _DURATION_PART.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise CommandError(f"{text!r} is not a duration: write e.g. 90s, 5m or 1h.")
    seconds = 0.0
    for number, unit in parts:
        if unit not in _UNITS:
            raise CommandError(f"unknown time unit {unit!r} in {text!r}: use s, m or h.")
        seconds += float(number) * _UNITS[unit]
    if seconds <= 0:
        raise CommandError("the time limit must be more than 0 seconds.")
    return seconds


def parse_count(text: str, what: str) -> int:
    """Parse a positive count such as 20, 50k, 1.5m or 200_000; raise CommandError otherwise."""
    match = re.fullmatch(r"(-?\d+(?:\.\d+)?)([km]?)", text.strip().lower().replace("_", "")
                         .replace(",", ""))
    if match is None:
        raise CommandError(f"{what} must be a whole number (e.g. 20, 50k), not {text!r}.")
    if match.group(1).startswith("-"):
        raise CommandError(f"{what} must be at least 1, not {text!r}.")
    value = float(match.group(1)) * {"": 1, "k": 1000, "m": 1_000_000}[match.group(2)]
    if value != int(value) or value < 1:
        raise CommandError(f"{what} must be a whole number of at least 1, not {text!r}.")
    return int(value)


