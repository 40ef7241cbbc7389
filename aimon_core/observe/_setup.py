"""What `build_runtime` adds to every runtime: the cost ledger, its caps, and tracing."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aimon_core.llm import ModelCallInterceptor, PriceTable
    from aimon_core.observe._chain import ExecutionInterceptor
    from aimon_core.observe._settings import ObserveSettings
    from aimon_core.observe._trace import Tracing


@dataclass(slots=True, kw_only=True)
class Observation:
    """The interceptors of one runtime: around its model calls, around its executions."""

    prices: PriceTable
    model: tuple[ModelCallInterceptor, ...] = ()
    execution: tuple[ExecutionInterceptor, ...] = ()
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    # What the user should know (an export asked for that cannot be made).
    notices: list[str] = field(default_factory=list)
    # What a session's running turn has spent so far (a status line adds it to the totals).
    turn_cost: Callable[[str], float] = lambda _: 0.0


def observe_runtime(project_root: Path, agent: str, initial: ObserveSettings,
                    settings: Callable[[], ObserveSettings]) -> Observation:
    """Return the cost ledger (prices as `initial` says; caps as `settings` says now, reloads
    included) and the tracing interceptor for one agent's runtime."""
    from aimon_core.observe._costs import CostLedger, LedgerScope
    from aimon_core.observe._ledger import SQLiteLedgerStore, ledger_path
    from aimon_core.observe._settings import price_table

    prices = price_table(initial)
    ledger = CostLedger(SQLiteLedgerStore(ledger_path()),
                        LedgerScope(project=str(project_root), agent=agent), prices=prices,
                        caps=lambda: settings().caps,
                        cap_sources=lambda: dict(settings().cap_sources))
    observation = Observation(prices=prices, model=(ledger,), execution=(ledger,),
                              closers=[ledger.aclose], turn_cost=ledger.turn_spent)
    tracing = _tracing(project_root, initial, settings, observation.notices)
    if tracing is not None:
        observation.execution = (*observation.execution, tracing)
        if tracing.exporter is not None:
            observation.closers.append(tracing.exporter.aclose)
    return observation


def _tracing(project_root: Path, initial: ObserveSettings,
             settings: Callable[[], ObserveSettings], notices: list[str]) -> Tracing | None:
    """Return the tracing interceptor: the local store unless `tracing.enabled` is false, the
    OTLP export when the environment asks for it; None when neither."""
    import os

    from aimon_core.observe._otlp import otlp_problem, otlp_wanted
    from aimon_core.observe._spans import project_trace_store
    from aimon_core.observe._trace import Tracing

    store = project_trace_store(project_root) if initial.tracing.enabled else None
    exporter = None
    problem = otlp_problem(os.environ) if otlp_wanted(os.environ) else None
    if problem is not None:
        notices.append(problem)
    elif otlp_wanted(os.environ):
        from aimon_core.observe._otlp import OTLPSpanExport

        exporter = OTLPSpanExport()
    if store is None and exporter is None:
        return None
    return Tracing(store=store, exporter=exporter,
                   include_content=lambda: settings().tracing.include_content)
