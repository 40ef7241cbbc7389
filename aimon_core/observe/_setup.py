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


@dataclass(slots=True, kw_only=True)
class Observation:
    """The interceptors of one runtime: around its model calls, around its executions."""

    prices: PriceTable
    model: tuple[ModelCallInterceptor, ...] = ()
    execution: tuple[ExecutionInterceptor, ...] = ()
    closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)


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
    return Observation(prices=prices, model=(ledger,), execution=(ledger,))
