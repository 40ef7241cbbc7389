"""What the settings say about spending and traces: caps, price overrides, tracing.

Plain values: `aimon_core.config` reads them from the settings files (config/_observe.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aimon_core.llm import PriceTable


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetCaps:
    """Hard caps in US dollars (None: no cap): per turn, per calendar day, per month."""

    per_turn_usd: float | None = None
    daily_usd: float | None = None
    monthly_usd: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceSetting:
    """A model's price in a settings file, USD per million tokens (None: not said)."""

    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TracingSettings:
    """What traces keep: `enabled` the local trace store; `include_content` the prompt and
    tool output in spans (kept out, and never exported, unless set)."""

    enabled: bool = True
    include_content: bool = False


def _empty_prices() -> Mapping[str, PriceSetting]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class ObserveSettings:
    """The merged caps, price overrides (by model name or prefix) and tracing settings.

    `cap_sources` names the file that set each cap in force, by its settings key;
    `raised_only` the models a project file priced, whose prices never go below aimon's table.
    """

    caps: BudgetCaps = field(default_factory=BudgetCaps)
    prices: Mapping[str, PriceSetting] = field(default_factory=_empty_prices)
    tracing: TracingSettings = field(default_factory=TracingSettings)
    cap_sources: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    raised_only: frozenset[str] = frozenset()
    # The REPL's status footer (`footer`): shown unless a settings file says false.
    footer: bool = True


def price_table(settings: ObserveSettings) -> PriceTable:
    """Return aimon's price table with the settings' overrides (a field not set: the table's;
    a model a project priced: never below the table)."""
    from aimon_core.llm import DEFAULT_PRICES, ModelPrice, PriceTable

    overrides: dict[str, ModelPrice] = {}
    for model, setting in settings.prices.items():
        base = DEFAULT_PRICES.price(model)
        values = {}
        for name in ("input", "output", "cache_read", "cache_write"):
            value, floor = getattr(setting, name), getattr(base, name)
            if value is None:
                value = floor
            elif model in settings.raised_only:
                value = max(value, floor)
            values[name] = value
        overrides[model] = ModelPrice(**values)
    return PriceTable(overrides=MappingProxyType(overrides))
