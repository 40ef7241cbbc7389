"""`aimon usage`: what the model calls cost, from the ledger, grouped and summed."""

from __future__ import annotations

import json
import sys
import time


def usage_command(args: list[str]) -> int:
    """Print the ledger's sums; return the exit status."""
    import argparse

    from aimon_core.observe import (
        USAGE_GROUPS,
        SinceError,
        SQLiteLedgerStore,
        ledger_path,
        parse_since,
        row_json,
        summarize,
    )

    parser = argparse.ArgumentParser(
        prog="aimon usage", description="Show what model calls cost (every project, every "
        "session), from the ledger aimon keeps.")
    parser.add_argument("--since", default="month",
                        help="today, month (the default), all, 7d, 12h, 2w or a date")
    parser.add_argument("--by", choices=USAGE_GROUPS, default="model",
                        help="group by (default model)")
    parser.add_argument("--json", action="store_true", help="print JSON")
    options = parser.parse_args(args)
    try:
        since = parse_since(options.since, time.time())
    except SinceError as exc:
        sys.stderr.write(f"aimon usage: {exc}\n")
        return 2
    rows = summarize(SQLiteLedgerStore(ledger_path()).entries(since), options.by)
    total = sum(r.cost_usd for r in rows)
    if options.json:
        sys.stdout.write(json.dumps({"since": options.since, "by": options.by,
                                     "rows": [row_json(r) for r in rows],
                                     "total_usd": round(total, 6)}, indent=2) + "\n")
        return 0
    sys.stdout.write(usage_table(rows, options.by, options.since, total))
    return 0


def usage_table(rows: tuple[object, ...], by: str, since: str, total: float) -> str:
    """Return the rows as a plain table, a total line last."""
    from aimon_core.command import format_cost, format_tokens
    from aimon_core.llm import PRICES_AS_OF
    from aimon_core.observe import UsageRow

    lines = [f"Usage since {since}, by {by} (prices: aimon's table of {PRICES_AS_OF}, "
             "and your settings' prices)"]
    if not rows:
        return lines[0] + "\nNo model calls yet.\n"
    width = max(len(by), *(len(r.key) for r in rows if isinstance(r, UsageRow)))
    lines.append(f"{by:<{width}}  {'calls':>6}  {'input':>7}  {'output':>7}  {'cached':>7}  "
                 f"{'cost':>10}")
    for row in rows:
        assert isinstance(row, UsageRow)
        u = row.usage
        lines.append(f"{row.key:<{width}}  {row.calls:>6}  {format_tokens(u.input_tokens):>7}  "
                     f"{format_tokens(u.output_tokens):>7}  "
                     f"{format_tokens(u.cache_read_tokens):>7}  {format_cost(row.cost_usd):>10}")
    lines.append(f"{'total':<{width}}  {sum(r.calls for r in rows if isinstance(r, UsageRow)):>6}"
                 f"  {'':>7}  {'':>7}  {'':>7}  {format_cost(total):>10}")
    return "\n".join(lines) + "\n"


def observe_command(name: str, args: list[str]) -> int:
    """Run `aimon usage` or `aimon trace`; return the exit status."""
    if name == "usage":
        return usage_command(args)
    return trace_command(args)


def trace_command(args: list[str]) -> int:
    """Print a session's trace as a tree (or its spans as JSON); return the exit status."""
    import argparse

    from aimon_cli._store import default_store, resolve_session_id
    from aimon_core.observe import find_trace, render_trace, trace_summary

    parser = argparse.ArgumentParser(
        prog="aimon trace", description="Show where a session's time went and what it "
        "cost: its executions, iterations, model and tool calls as a tree.")
    parser.add_argument("session", help="a session id (or its start or end)")
    parser.add_argument("--json", action="store_true", help="print the spans as JSON")
    options = parser.parse_args(args)
    from pathlib import Path

    try:
        session_id = resolve_session_id(default_store(), options.session, Path.cwd())
    except ValueError as exc:
        sys.stderr.write(f"aimon trace: {exc}\n")
        return 1
    spans = find_trace(session_id)
    if options.json:
        sys.stdout.write(json.dumps([s.to_json() for s in spans], indent=2) + "\n")
        return 0
    if not spans:
        sys.stdout.write(f"No trace kept for session {session_id} (tracing.enabled false, or "
                         "no turn ran yet).\n")
        return 0
    sys.stdout.write(f"{trace_summary(spans)}\n{render_trace(spans)}\n")
    return 0
