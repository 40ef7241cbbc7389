"""What a model call costs: the model registry's price table, with the settings' overrides."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from aimon_core.llm._messages import Usage
from aimon_core.llm._models import PRICES_AS_OF, model_info

_M = 1_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelPrice:
    """US dollars per million tokens: input (uncached), output, cache read, cache write."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0

    def cost(self, usage: Usage) -> float:
        """Return the price of `usage` (its input_tokens are the uncached input only)."""
        return (usage.input_tokens * self.input + usage.output_tokens * self.output
                + usage.cache_read_tokens * self.cache_read
                + usage.cache_write_tokens * self.cache_write) / _M


def _no_overrides() -> Mapping[str, ModelPrice]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceTable:
    """The one place a call's cost comes from: overrides by model name, else the registry.

    `overrides` are keyed by a model name or a prefix of one ("qwen3" covers "qwen3-coder");
    the longest matching key wins. `as_of` is the date of the registry's prices.
    """

    overrides: Mapping[str, ModelPrice] = field(default_factory=_no_overrides)
    as_of: str = PRICES_AS_OF

    def price(self, model: str, provider: str | None = None) -> ModelPrice:
        """Return the price of `model` served by `provider`."""
        key = self.override_key(model)
        if key is not None:
            return self.overrides[key]
        info = model_info(model, provider)
        return ModelPrice(input=info.input_price, output=info.output_price,
                          cache_read=info.cache_read_price, cache_write=info.cache_write_price)

    def override_key(self, model: str) -> str | None:
        """Return the settings key whose price applies to `model`, or None (the table's)."""
        bare = model.strip().lower().rsplit("/", 1)[-1]
        keys = [k for k in self.overrides if bare.startswith(k.lower()) or model == k]
        return max(keys, key=len) if keys else None

    def cost(self, model: str, provider: str | None, usage: Usage) -> float:
        """Return what `usage` of `model` costs in US dollars."""
        return self.price(model, provider).cost(usage)

    def source(self, model: str) -> str:
        """Say where the price of `model` comes from, for a person."""
        key = self.override_key(model)
        return f"settings (prices.{key})" if key is not None else f"aimon's table of {self.as_of}"


DEFAULT_PRICES = PriceTable()
