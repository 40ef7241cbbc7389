"""/cost and /trace: what this session's model calls cost against the caps, and where its
time went."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from aimon_core.command._registry import CommandHost, CommandOutcome, SlashCommand

if TYPE_CHECKING:
    from aimon_core.observe import BudgetCaps


def _money(value: float) -> str:
    from aimon_core.command._format import format_cost

    return format_cost(value)


def cost_text(session_id: str, model: str, caps: BudgetCaps, prices_from: str,
              now: float) -> str:
    """Return what /cost shows: the session's calls, today, this month, each cap, prices."""
    from aimon_core.command._format import format_tokens
    from aimon_core.observe import SQLiteLedgerStore, ledger_path, start_of_day, start_of_month

    store = SQLiteLedgerStore(ledger_path())
    month = store.entries(start_of_month(now))
    mine = [e for e in store.entries() if e.session_id == session_id]
    today = sum(e.cost_usd for e in month if e.at >= start_of_day(now))
    spent = sum(e.cost_usd for e in mine)
    tokens_in = sum(e.usage.input_tokens + e.usage.cache_read_tokens for e in mine)
    tokens_out = sum(e.usage.output_tokens for e in mine)

    def against(value: float, cap: float | None, key: str) -> str:
        if cap is None:
            return f"{_money(value)} (no cap; set {key} to have one)"
        return f"{_money(value)} of {_money(cap)} ({key})"

    per_turn = (f"{_money(caps.per_turn_usd)} (budget.perTurnUsd)"
                if caps.per_turn_usd is not None else "no cap (budget.perTurnUsd)")
    this_month = against(sum(e.cost_usd for e in month), caps.monthly_usd, "budget.monthlyUsd")
    return "\n".join((
        f"This session: {_money(spent)} · {len(mine)} model calls · "
        f"{format_tokens(tokens_in)} in · {format_tokens(tokens_out)} out",
        f"Today:        {against(today, caps.daily_usd, 'budget.dailyUsd')}",
        f"This month:   {this_month}",
        f"Per turn:     {per_turn}",
        f"Prices:       {model} from {prices_from}",
        "All sessions: aimon usage [--since 7d] [--by project|model|agent|day]",
    ))


async def _cost(args: str, host: CommandHost) -> CommandOutcome:
    from aimon_core.llm import DEFAULT_PRICES
    from aimon_core.observe import BudgetCaps

    live = await host.live_session()
    settings = host.settings
    caps = settings.settings.observe.caps if settings is not None else BudgetCaps()
    prices = live.runtime.prices or DEFAULT_PRICES
    text = await asyncio.to_thread(cost_text, live.id, live.runtime.model, caps,
                                   prices.source(live.runtime.model), time.time())
    return CommandOutcome.message(text)


async def _trace(args: str, host: CommandHost) -> CommandOutcome:
    from aimon_core.observe import project_trace_store, render_trace, trace_summary

    live = await host.live_session()
    spans = await asyncio.to_thread(project_trace_store(live.project_root).read, live.id)
    if not spans:
        return CommandOutcome.message("No trace yet: it is kept as each turn ends "
                                      "(tracing.enabled false keeps none).")
    roots = [s for s in spans if not s.parent_id]
    last = args.strip() != "all" and len(roots) > 5
    if last:  # the last five turns; /trace all shows every one
        keep = {s.trace_id for s in roots[-5:]}
        spans = tuple(s for s in spans if s.trace_id in keep)
    note = "\n(the last 5 turns; /trace all for every one)" if last else ""
    return CommandOutcome.message(f"{trace_summary(spans)}\n{render_trace(spans)}{note}")


def observe_commands() -> tuple[SlashCommand, ...]:
    """Return /cost and /trace."""
    return (
        SlashCommand(name="cost", run=_cost,
                     description="Show what this session cost, today and this month, "
                     "against the caps"),
        SlashCommand(name="trace", run=_trace, usage="/trace [all]",
                     description="Show where this session's time went: turns, model and tool "
                     "calls as a tree"),
    )
