"""What aimon knows about models: context windows, parameters they accept, and prices."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from aimon_core.llm._messages import Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelInfo:
    """Limits, accepted parameters and prices (USD per million tokens) of one model.

    `adaptive_thinking` marks Anthropic models that take `thinking: {"type": "adaptive"}`
    instead of a `budget_tokens` budget. `takes_images` and `takes_pdfs` say whether a user
    message may hold image and PDF document blocks (unknown models: neither).
    """

    name: str
    provider: str
    context_window: int
    max_output_tokens: int
    accepts_temperature: bool = True
    supports_thinking: bool = False
    uses_max_completion_tokens: bool = False
    adaptive_thinking: bool = False
    takes_images: bool = False
    takes_pdfs: bool = False
    input_price: float = 0.0
    output_price: float = 0.0
    cache_read_price: float = 0.0
    cache_write_price: float = 0.0


# The day the prices below were last checked against the providers' price pages; `aimon
# usage` and `/cost` say it, and settings (`prices`) override them for other endpoints.
PRICES_AS_OF = "2026-11-30"

DEFAULT_MODELS: dict[str, str] = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-5.4"}

_K = 1_000
_M = 1_000_000


def _claude(
    name: str,
    *,
    context: int,
    output: int,
    prices: tuple[float, float, float, float],
    thinking: str = "budget",
    temperature: bool = True,
) -> ModelInfo:
    """Describe a Claude model; prices are (input, output, cache read, 5-minute cache write)."""
    input_price, output_price, read_price, write_price = prices
    return ModelInfo(
        name=name,
        provider="anthropic",
        context_window=context,
        max_output_tokens=output,
        accepts_temperature=temperature,
        supports_thinking=thinking != "none",
        adaptive_thinking=thinking == "adaptive",
        takes_images=True,
        takes_pdfs=True,
        input_price=input_price,
        output_price=output_price,
        cache_read_price=read_price,
        cache_write_price=write_price,
    )


def _gpt(
    name: str,
    *,
    context: int,
    output: int,
    prices: tuple[float, float, float],
    reasoning: bool,
    vision: bool = True,
) -> ModelInfo:
    """Describe an OpenAI model; prices are (input, output, cached input).

    Reasoning models reject `temperature` and `max_tokens` (they want `max_completion_tokens`).
    `vision`: it takes images and PDF files in user messages.
    """
    input_price, output_price, read_price = prices
    return ModelInfo(
        name=name,
        provider="openai",
        context_window=context,
        max_output_tokens=output,
        accepts_temperature=not reasoning,
        supports_thinking=reasoning,
        uses_max_completion_tokens=reasoning,
        takes_images=vision,
        takes_pdfs=vision,
        input_price=input_price,
        output_price=output_price,
        cache_read_price=read_price,
    )


_OPUS_45 = (5.0, 25.0, 0.5, 6.25)
_OPUS_41 = (15.0, 75.0, 1.5, 18.75)
_SONNET_4 = (3.0, 15.0, 0.3, 3.75)
_SONNET_5 = (2.0, 10.0, 0.2, 2.5)
_FABLE = (10.0, 50.0, 1.0, 12.5)

# Matched by the longest prefix, so an alias also covers its dated ids
# ("claude-haiku-4-5" covers "claude-haiku-4-5-20251001").
_REGISTRY: tuple[ModelInfo, ...] = (
    # Claude 5: adaptive thinking only; sampling parameters are rejected.
    _claude("claude-fable-5-1", context=_M, output=128 * _K,
            prices=(10.0, 50.0, 0.25, 12.5), thinking="adaptive", temperature=False),
    _claude("claude-fable-5", context=_M, output=128 * _K, prices=_FABLE,
            thinking="adaptive", temperature=False),
    _claude("claude-mythos-5-1", context=_M, output=128 * _K,
            prices=(10.0, 50.0, 0.25, 12.5), thinking="adaptive", temperature=False),
    _claude("claude-mythos-5", context=_M, output=128 * _K, prices=_FABLE,
            thinking="adaptive", temperature=False),
    _claude("claude-mythos-preview", context=_M, output=128 * _K, prices=_OPUS_41,
            thinking="adaptive", temperature=False),
    _claude("claude-opus-5-5", context=_M, output=128 * _K, prices=(4.0, 20.0, 0.2, 5.0),
            thinking="adaptive", temperature=False),
    _claude("claude-opus-5", context=_M, output=128 * _K, prices=_OPUS_45,
            thinking="adaptive", temperature=False),
    _claude("claude-sonnet-5-5", context=_M, output=128 * _K, prices=(2.0, 10.0, 0.1, 2.5),
            thinking="adaptive", temperature=False),
    _claude("claude-sonnet-5", context=_M, output=128 * _K, prices=_SONNET_5,
            thinking="adaptive", temperature=False),
    _claude("claude-haiku-5-5", context=_M, output=128 * _K, prices=(0.1, 0.5, 0.01, 0.125),
            thinking="adaptive", temperature=False),
    # Claude 4: Opus 4.7+ is adaptive-only and rejects temperature; 4.6 prefers adaptive.
    _claude("claude-opus-4-8", context=_M, output=128 * _K, prices=_OPUS_45,
            thinking="adaptive", temperature=False),
    _claude("claude-opus-4-7", context=_M, output=128 * _K, prices=_OPUS_45,
            thinking="adaptive", temperature=False),
    _claude("claude-opus-4-6", context=_M, output=128 * _K, prices=_OPUS_45, thinking="adaptive"),
    _claude("claude-sonnet-4-6", context=_M, output=64 * _K, prices=_SONNET_4,
            thinking="adaptive"),
    _claude("claude-opus-4-5", context=200 * _K, output=64 * _K, prices=_OPUS_45),
    _claude("claude-sonnet-4-5", context=200 * _K, output=64 * _K, prices=_SONNET_4),
    _claude("claude-haiku-4-5", context=200 * _K, output=64 * _K, prices=(1.0, 5.0, 0.1, 1.25)),
    _claude("claude-opus-4-1", context=200 * _K, output=32 * _K, prices=_OPUS_41),
    _claude("claude-opus-4", context=200 * _K, output=32 * _K, prices=_OPUS_41),
    _claude("claude-sonnet-4", context=200 * _K, output=64 * _K, prices=_SONNET_4),
    _claude("claude-3-7-sonnet", context=200 * _K, output=64 * _K, prices=_SONNET_4),
    _claude("claude-3-5-haiku", context=200 * _K, output=8 * _K, prices=(0.8, 4.0, 0.08, 1.0),
            thinking="none"),
    # An unknown Claude: assume a recent model's limits and Sonnet prices.
    _claude("claude", context=200 * _K, output=32 * _K, prices=_SONNET_4, temperature=False),
    # OpenAI
    _gpt("gpt-5.5", context=_M, output=128 * _K, prices=(5.0, 30.0, 0.5), reasoning=True),
    _gpt("gpt-5.4-mini", context=_M, output=128 * _K, prices=(0.75, 4.5, 0.075), reasoning=True),
    _gpt("gpt-5.4-nano", context=_M, output=128 * _K, prices=(0.2, 1.25, 0.02), reasoning=True),
    _gpt("gpt-5.4", context=_M, output=128 * _K, prices=(2.5, 15.0, 0.25), reasoning=True),
    _gpt("gpt-5.2", context=400 * _K, output=128 * _K, prices=(1.75, 14.0, 0.175),
         reasoning=True),
    _gpt("gpt-5.1", context=400 * _K, output=128 * _K, prices=(1.25, 10.0, 0.125),
         reasoning=True),
    _gpt("gpt-5-mini", context=400 * _K, output=128 * _K, prices=(0.25, 2.0, 0.025),
         reasoning=True),
    _gpt("gpt-5-nano", context=400 * _K, output=128 * _K, prices=(0.05, 0.4, 0.005),
         reasoning=True),
    _gpt("gpt-5", context=400 * _K, output=128 * _K, prices=(1.25, 10.0, 0.125), reasoning=True),
    _gpt("gpt-4.1-mini", context=1_047_576, output=32_768, prices=(0.4, 1.6, 0.1),
         reasoning=False),
    _gpt("gpt-4.1-nano", context=1_047_576, output=32_768, prices=(0.1, 0.4, 0.025),
         reasoning=False),
    _gpt("gpt-4.1", context=1_047_576, output=32_768, prices=(2.0, 8.0, 0.5), reasoning=False),
    _gpt("gpt-4o-mini", context=128 * _K, output=16_384, prices=(0.15, 0.6, 0.075),
         reasoning=False),
    _gpt("gpt-4o", context=128 * _K, output=16_384, prices=(2.5, 10.0, 1.25), reasoning=False),
    _gpt("o4-mini", context=200 * _K, output=100 * _K, prices=(1.1, 4.4, 0.275), reasoning=True),
    _gpt("o3-mini", context=200 * _K, output=100 * _K, prices=(1.1, 4.4, 0.55), reasoning=True,
         vision=False),
    _gpt("o3", context=200 * _K, output=100 * _K, prices=(2.0, 8.0, 0.5), reasoning=True),
)  # fmt: skip


def _normalize(name: str) -> str:
    """Strip a router prefix ("anthropic/", "openai/") and write Claude versions with dashes."""
    bare = name.strip().lower().rsplit("/", 1)[-1]
    if bare.startswith("claude"):
        bare = bare.replace(".", "-")
    return bare


def model_info(name: str, provider: str | None = None) -> ModelInfo:
    """Return what is known about a model, or conservative limits for an unknown one.

    An unknown model (a local Ollama model, say) gets a 32k context, 4096 output tokens,
    plain `max_tokens`, and a price of 0.
    """
    bare = _normalize(name)
    best: ModelInfo | None = None
    for info in _REGISTRY:
        if bare.startswith(info.name) and (best is None or len(info.name) > len(best.name)):
            best = info
    if best is None:
        return ModelInfo(
            name=name, provider=provider or "openai", context_window=32_768, max_output_tokens=4096
        )
    if provider is not None and provider != best.provider:
        # The same model behind another wire format (a Claude model through OpenRouter):
        # keep limits and prices, but the parameter rules belong to the other provider.
        return dataclasses.replace(best, name=name, provider=provider)
    return dataclasses.replace(best, name=name)


# Claude Code's model aliases name a rank of model, not a model: `haiku`, `sonnet`, `opus`
# (`sonnet[1m]` asks for the long context, which aimon's models have). For Anthropic an alias
# is a family and means its newest model in the registry (newest first), so `fable` works too;
# OpenAI's models of the same rank stand in for the three Claude Code names.
_OPENAI_RANKS = {"haiku": "gpt-5.4-mini", "sonnet": "gpt-5.4", "opus": "gpt-5.5"}
_ALIAS = re.compile(r"([a-z]+)(?:\[1m\])?")


def resolve_model_alias(name: str, provider: str) -> str | None:
    """Return the model an alias (`haiku`, `sonnet`, `opus`, a Claude family) means for
    `provider`; None when `name` is no alias there.

    The one place aliases are read: agents' `model:` and `/model NAME` both ask it.
    """
    match = _ALIAS.fullmatch(name.strip().lower())
    if match is None:
        return None
    alias = match.group(1)
    if provider == "openai":
        return _OPENAI_RANKS.get(alias)
    if provider != "anthropic":
        return None
    family = f"claude-{alias}-"
    return next((i.name for i in _REGISTRY if i.name.startswith(family)), None)


def implied_provider(model: str | None) -> str | None:
    """Return the provider a model name belongs to by its prefix; None when it does not say."""
    if not model:
        return None
    # No router prefix is stripped: `anthropic/claude-…` is a name for an OpenAI-compatible
    # router, not for Anthropic.
    if model.startswith("claude"):
        return "anthropic"
    if model.startswith(("gpt", "o1", "o3", "o4", "chatgpt")):
        return "openai"
    return None


def agent_model(wanted: str | None, provider: str, current: str) -> str:
    """Return the model an agent's `model:` runs on, given the session's provider and model.

    None and `inherit` keep `current`. An alias means the provider's current model of that
    rank, except on a model server aimon does not know (a local one), which keeps `current`.
    A full name of another provider keeps `current` (the session cannot reach it); any other
    name is taken as given.
    """
    if wanted is None or wanted.strip().lower() in ("", "inherit", "default"):
        return current
    alias = resolve_model_alias(wanted, provider)
    if alias is not None:
        return alias if _is_known(current) else current
    implied = implied_provider(wanted)
    return current if implied not in (None, provider) else wanted.strip()


def _is_known(name: str) -> bool:
    bare = _normalize(name)
    return any(bare.startswith(i.name) for i in _REGISTRY if i.name != "claude")


def known_models(provider: str) -> tuple[str, ...]:
    """Return the models the registry knows for `provider` (`/model` lists them), newest first.

    The catch-all entry of an unknown Claude is not a model one can name, so it is left out.
    """
    return tuple(i.name for i in _REGISTRY if i.provider == provider and i.name != "claude")


def cost_usd(usage: Usage, info: ModelInfo) -> float:
    """Return the price of `usage` in US dollars (input_tokens counts uncached input only)."""
    return (
        usage.input_tokens * info.input_price
        + usage.output_tokens * info.output_price
        + usage.cache_read_tokens * info.cache_read_price
        + usage.cache_write_tokens * info.cache_write_price
    ) / _M
