"""What `aimon schedule list`, `runs` and `/schedule` show: JSON data and its text.

The service answers with the data (`schedule_report`, `run_to_json`); the command line and
the `/schedule` command print it with the same functions, so both read alike.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from aimon_core.scheduling._routine import (
    Routine,
    RoutineRun,
    RunOutcome,
    routine_to_json,
    run_to_json,
)
from aimon_core.scheduling._trigger import describe


def routine_report(routine: Routine, runs: Iterable[RoutineRun],
                   running: RoutineRun | None = None) -> dict[str, Any]:
    """Return a routine with its trigger in words, its last run and its totals."""
    ran = [run for run in runs if run.outcome is not RunOutcome.SKIPPED]
    last = ran[0] if ran else None
    return {
        **routine_to_json(routine), "trigger_text": describe(routine.trigger),
        "last_run": run_to_json(last) if last is not None else None,
        "running": run_to_json(running) if running is not None else None,
        "totals": {"runs": len(ran),
                   "failed": sum(run.outcome is RunOutcome.FAILED for run in ran),
                   "cost_usd": round(sum(run.cost_usd for run in ran), 6),
                   "tokens": sum(run.input_tokens + run.output_tokens for run in ran)},
    }


def local_time(moment: object) -> str:
    """Return a time (seconds since the epoch) as this machine's wall clock, to the minute."""
    if not isinstance(moment, int | float) or isinstance(moment, bool):
        return "-"
    return datetime.fromtimestamp(moment).astimezone().isoformat(" ", "minutes")


def _when(moment: object, now: float) -> str:
    if not isinstance(moment, int | float) or isinstance(moment, bool):
        return "-"
    local = datetime.fromtimestamp(moment).astimezone()
    if abs(moment - now) < 86400 * 300:
        return local.strftime("%b %d %H:%M")
    return local.strftime("%Y-%m-%d %H:%M")


def list_lines(reports: Iterable[Mapping[str, Any]], *, now: float | None = None
               ) -> list[str]:
    """Return the lines of `aimon schedule list` (and `/schedule`)."""
    now = time.time() if now is None else now
    lines = []
    for report in reports:
        state = "running" if report.get("running") else str(report.get("state"))
        last = report.get("last_run") or {}
        totals = report.get("totals") or {}
        lines.append(f"{report['name']}  [{state}]  {report.get('trigger_text', '')}")
        lines.append(f"    next {_when(report.get('next_run'), now)}   last "
                     f"{_when(last.get('started'), now)} {last.get('outcome', '')}   "
                     f"runs {totals.get('runs', 0)} (failed {totals.get('failed', 0)})   "
                     f"${float(totals.get('cost_usd', 0)):.4f}   "
                     f"{int(totals.get('tokens', 0)):,} tokens")
        lines.append(f"    {' '.join(str(report.get('prompt', '')).split())[:100]}")
        if report.get("note"):
            lines.append(f"    ({report['note']})")
    return lines or ["No routines (add one: aimon schedule add NAME --every 1h \"PROMPT\")."]


def runs_lines(runs: Iterable[Mapping[str, Any]], *, now: float | None = None) -> list[str]:
    """Return the lines of `aimon schedule runs NAME`: one a run, newest first."""
    now = time.time() if now is None else now
    lines = []
    for run in runs:
        tokens = int(run.get("input_tokens", 0)) + int(run.get("output_tokens", 0))
        lines.append(f"{_when(run.get('started'), now)}  {run.get('outcome', ''):<11} "
                     f"{run.get('session_id') or '-':<28} ${float(run.get('cost_usd', 0)):.4f} "
                     f"{tokens:>8,} tokens")
        if run.get("message"):
            lines.append(f"    {' '.join(str(run['message']).split())[:160]}")
    return lines or ["No runs yet."]
