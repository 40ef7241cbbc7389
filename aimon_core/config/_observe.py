"""The `budget`, `prices`, `tracing` and `footer` settings: hard caps on spending, price
overrides for endpoints aimon's table does not know, what traces keep, the REPL's footer.

Caps and prices decide when aimon stops spending, so a file that comes with a project cannot
loosen them: a cap is the lowest any layer sets, and a project's price for a model counts only
where it is higher than the price in force without it (the user's, or aimon's table).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NoReturn, Protocol

from aimon_core.observe import (
    BudgetCaps,
    ObserveSettings,
    PriceSetting,
    TracingSettings,
)

BUDGET_KEYS = ("perTurnUsd", "dailyUsd", "monthlyUsd")
PRICE_KEYS = ("input", "output", "cacheRead", "cacheWrite")
TRACING_KEYS = ("enabled", "includeContent")
_CAPS = (("perTurnUsd", "per_turn_usd"), ("dailyUsd", "daily_usd"),
         ("monthlyUsd", "monthly_usd"))
_PRICES = (("input", "input"), ("output", "output"), ("cacheRead", "cache_read"),
           ("cacheWrite", "cache_write"))


class _Reads(Protocol):
    """The parts of the settings checker this module uses (`_validate._Checker`)."""

    def fail(self, key: str, reason: str) -> NoReturn: ...

    def expected(self, key: str, what: str, value: Any) -> NoReturn: ...

    def mapping(self, value: Any, key: str, allowed: tuple[str, ...] | None
                ) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ObserveLayer:
    """What one settings file says in its `budget`, `prices` and `tracing` blocks."""

    caps: BudgetCaps | None = None
    prices: tuple[tuple[str, PriceSetting], ...] = ()
    tracing_enabled: bool | None = None
    include_content: bool | None = None
    footer: bool | None = None


def _money(reads: _Reads, value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        reads.expected(key, "a number of US dollars", value)
    if value < 0:
        reads.fail(key, "must not be negative")
    return float(value)


def _flag(reads: _Reads, value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        reads.expected(key, "true or false", value)
    return value


def check_observe(reads: _Reads, data: Mapping[str, Any]) -> ObserveLayer | None:
    """Check a settings file's `budget`, `prices` and `tracing` blocks (None: none there)."""
    if not {"budget", "prices", "tracing", "footer"} & data.keys():
        return None
    caps = None
    if "budget" in data:
        budget = reads.mapping(data["budget"], "budget", BUDGET_KEYS)
        caps = BudgetCaps(**{name: _money(reads, budget[key], f"budget.{key}")
                             for key, name in _CAPS if key in budget})
    prices: list[tuple[str, PriceSetting]] = []
    if "prices" in data:
        for model, value in reads.mapping(data["prices"], "prices", None).items():
            if not model.strip():
                reads.fail("prices", "a model name must not be empty")
            entry = reads.mapping(value, f"prices.{model}", PRICE_KEYS)
            prices.append((model.strip(), PriceSetting(**{
                name: _money(reads, entry[key], f"prices.{model}.{key}")
                for key, name in _PRICES if key in entry})))
    tracing = reads.mapping(data["tracing"], "tracing", TRACING_KEYS) if "tracing" in data else {}
    return ObserveLayer(
        caps=caps, prices=tuple(prices),
        tracing_enabled=(_flag(reads, tracing["enabled"], "tracing.enabled")
                         if "enabled" in tracing else None),
        include_content=(_flag(reads, tracing["includeContent"], "tracing.includeContent")
                         if "includeContent" in tracing else None),
        footer=(_flag(reads, data["footer"], "footer")
                if "footer" in data else None))


def merge_observe(layers: Iterable[tuple[str, bool, ObserveLayer]]) -> ObserveSettings:
    """Merge (where, from the project?, layer) in order: the lowest cap wins; a project's
    price counts only where it is higher than the one in force without it; a project cannot
    send the prompt and tool output to a trace exporter (`includeContent`)."""
    caps: dict[str, float] = {}
    sources: dict[str, str] = {}
    own: dict[str, dict[str, float]] = {}
    project: dict[str, dict[str, float]] = {}
    tracing = TracingSettings()
    footer = True
    for where, from_project, layer in layers:
        if layer.caps is not None:
            for key, name in _CAPS:
                value = getattr(layer.caps, name)
                if value is not None and (name not in caps or value < caps[name]):
                    caps[name] = value
                    sources[f"budget.{key}"] = where
        for model, setting in layer.prices:
            bucket = (project if from_project else own).setdefault(model, {})
            for _, name in _PRICES:
                value = getattr(setting, name)
                if value is not None:
                    bucket[name] = max(value, bucket.get(name, value)) if from_project else value
        if layer.tracing_enabled is not None:
            tracing = TracingSettings(enabled=layer.tracing_enabled,
                                      include_content=tracing.include_content)
        if layer.footer is not None:
            footer = layer.footer
        if layer.include_content is not None and not from_project:
            tracing = TracingSettings(enabled=tracing.enabled,
                                      include_content=layer.include_content)
    prices = {model: PriceSetting(**values) for model, values in own.items()}
    for model, values in project.items():
        prices[model] = PriceSetting(**_raised(prices.get(model), values))
    return ObserveSettings(caps=BudgetCaps(**caps), prices=MappingProxyType(prices),
                           tracing=tracing, cap_sources=MappingProxyType(sources),
                           raised_only=frozenset(project) - frozenset(own), footer=footer)


def _raised(base: PriceSetting | None, project: Mapping[str, float]) -> dict[str, float | None]:
    """Return the user's price with each of the project's higher values in its place.

    Where the user set nothing, the project's values stand only against aimon's table, which
    the price table keeps as a floor (`raised_only`).
    """
    values: dict[str, float | None] = {name: None for _, name in _PRICES}
    if base is not None:
        values.update({name: getattr(base, name) for _, name in _PRICES})
    for name, value in project.items():
        current = values[name]
        values[name] = value if current is None else max(current, value)
    return values
