"""What the ledger says, summed: by project, model, agent, day or session, since a time."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from aimon_core.llm import Usage
from aimon_core.observe._ledger import LedgerEntry, start_of_day, start_of_month

USAGE_GROUPS = ("project", "model", "agent", "day", "session")
_AGO = re.compile(r"(\d+)\s*([hdw])")


class SinceError(ValueError):
    """A --since value aimon cannot read."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageRow:
    """The calls of one group: how many, their tokens and what they cost."""

    key: str
    calls: int
    usage: Usage
    cost_usd: float


def parse_since(text: str, now: float) -> float:
    """Return the time `text` names: today, month, 7d, 12h, 2w, or a date (2026-11-01)."""
    value = text.strip().lower()
    if value in ("today", "day"):
        return start_of_day(now)
    if value in ("month", "this month"):
        return start_of_month(now)
    if value in ("all", ""):
        return 0.0
    if match := _AGO.fullmatch(value):
        count, unit = int(match[1]), match[2]
        hours = {"h": 1, "d": 24, "w": 24 * 7}[unit] * count
        return (datetime.fromtimestamp(now) - timedelta(hours=hours)).timestamp()
    try:
        return datetime.fromisoformat(value).astimezone().timestamp()
    except ValueError:
        raise SinceError(f"--since {text!r}: give today, month, all, a span such as 7d, 12h "
                         "or 2w, or a date such as 2026-11-01") from None


def _key(entry: LedgerEntry, by: str) -> str:
    match by:
        case "project":
            return entry.project
        case "model":
            return entry.model
        case "agent":
            return entry.agent
        case "session":
            return entry.session_id or "(no session)"
        case _:
            return entry.day


def summarize(entries: Iterable[LedgerEntry], by: str) -> tuple[UsageRow, ...]:
    """Return one row a group, the costliest first (by day: in order of days)."""
    groups: dict[str, tuple[int, Usage, float]] = {}
    for entry in entries:
        key = _key(entry, by)
        calls, usage, cost = groups.get(key, (0, Usage(), 0.0))
        groups[key] = (calls + 1, usage + entry.usage, cost + entry.cost_usd)
    rows = [UsageRow(key=k, calls=c, usage=u, cost_usd=cost)
            for k, (c, u, cost) in groups.items()]
    rows.sort(key=(lambda r: r.key) if by == "day" else (lambda r: -r.cost_usd))
    return tuple(rows)


def row_json(row: UsageRow) -> dict[str, object]:
    """Return a row as the JSON `aimon usage --json` prints."""
    u = row.usage
    return {"key": row.key, "calls": row.calls, "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens, "cache_read_tokens": u.cache_read_tokens,
            "cache_write_tokens": u.cache_write_tokens, "cost_usd": round(row.cost_usd, 6)}
