"""When to compact: the settings, the model's window, and the threshold check."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aimon_core.compact._estimate import TokenCalibration, estimate_request_tokens, text_tokens
from aimon_core.llm import LLMRequest, ModelInfo, ToolResultBlock, model_info

# What `model_info` answers for a model it does not know; such a model gets the configured
# `unknown_window` instead (an OpenAI-compatible server's model, a local model).
_UNKNOWN_WINDOW = 32_768
_UNKNOWN_OUTPUT = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionSettings:
    """How compaction behaves; every field has a default that suits a 200k-token model.

    Args:
        threshold: compact when the next request would pass this share of the window.
        keep_recent_share: the share of the window the newest messages may keep verbatim.
        unknown_window: the window assumed for a model the registry does not know.
        window_override: a window that wins over the registry (a server's real limit).
        summary_max_tokens: the summary call's output limit.
        max_failures: failed summaries in a row after which automatic compaction stops
            calling the model and the user is told what to do.
        result_limit_tokens: a tool result past this is saved to a file (head and tail kept).
        spill_head_chars, spill_tail_chars: how much of a spilled result the model still sees.
    """

    threshold: float = 0.8
    keep_recent_share: float = 0.25
    unknown_window: int = _UNKNOWN_WINDOW
    window_override: int | None = None
    summary_max_tokens: int = 8_000
    max_failures: int = 3
    result_limit_tokens: int = 25_000
    spill_head_chars: int = 8_000
    spill_tail_chars: int = 4_000

    def __post_init__(self) -> None:
        if not 0.1 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must be between 0.1 and 1, not {self.threshold!r}")
        if not 0.0 <= self.keep_recent_share < self.threshold:
            raise ValueError(
                f"keep_recent_share must be at least 0 and below the threshold "
                f"({self.threshold!r}), not {self.keep_recent_share!r}"
            )


# The environment variable that sets `unknown_window` (a local model's real context).
WINDOW_ENV = "AIMON_CONTEXT_WINDOW"
# The recent part kept verbatim stays well below the threshold, whatever the threshold.
_KEEP_SHARE_OF_THRESHOLD = 0.3


def compaction_settings(
    *,
    threshold: float | None = None,
    context_window: int | None = None,
    result_limit_tokens: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> CompactionSettings:
    """Return the settings from the `compaction` settings keys (None: the default) and
    `AIMON_CONTEXT_WINDOW` in `environ`, the window of models the registry does not know."""
    base = CompactionSettings()
    unknown = (environ or {}).get(WINDOW_ENV, "").strip()
    keep = base.keep_recent_share
    if threshold is not None:
        keep = min(keep, threshold * _KEEP_SHARE_OF_THRESHOLD)
    return CompactionSettings(
        threshold=base.threshold if threshold is None else threshold,
        keep_recent_share=keep,
        unknown_window=int(unknown) if unknown.isdigit() and int(unknown) > 0
        else base.unknown_window,
        window_override=context_window,
        result_limit_tokens=result_limit_tokens or base.result_limit_tokens,
    )


def is_known_model(info: ModelInfo, name: str, provider: str | None) -> bool:
    """Return whether `info` came from the registry rather than the unknown-model fallback."""
    fallback = ModelInfo(
        name=name,
        provider=provider or "openai",
        context_window=_UNKNOWN_WINDOW,
        max_output_tokens=_UNKNOWN_OUTPUT,
    )
    return info != fallback


def context_window(model: str, provider: str | None, settings: CompactionSettings) -> int:
    """Return the model's context window in tokens: override, registry, or unknown_window."""
    if settings.window_override is not None:
        return settings.window_override
    info = model_info(model, provider)
    if is_known_model(info, model, provider):
        return info.context_window
    return settings.unknown_window


def threshold_tokens(window: int, settings: CompactionSettings) -> int:
    """Return the request size at which compaction starts."""
    return int(window * settings.threshold)


def keep_recent_tokens(window: int, settings: CompactionSettings) -> int:
    """Return how many tokens of the newest messages a compaction keeps verbatim."""
    return int(window * settings.keep_recent_share)


def needs_compaction(
    request: LLMRequest,
    *,
    window: int,
    settings: CompactionSettings | None = None,
    calibration: TokenCalibration | None = None,
) -> bool:
    """Return whether `request` would pass the compaction threshold of `window`."""
    settings = settings or CompactionSettings()
    return estimate_request_tokens(request, calibration) >= threshold_tokens(window, settings)


def is_too_large(block: ToolResultBlock, settings: CompactionSettings) -> bool:
    """Return whether a tool result's text passes the size limit."""
    # Cheap test first: a result under the limit in characters is under it in tokens.
    if len(block.text) <= settings.result_limit_tokens:
        return False
    return text_tokens(block.text) > settings.result_limit_tokens
