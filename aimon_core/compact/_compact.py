"""The compaction itself: plan, summarise, rebuild the transcript; the fallback on failure."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from aimon_core.compact._estimate import TokenCalibration, messages_tokens
from aimon_core.compact._fallback import shed_tool_results
from aimon_core.compact._plan import plan_compaction
from aimon_core.compact._policy import CompactionSettings, keep_recent_tokens, threshold_tokens
from aimon_core.compact._report import CompactionReport, Trigger, describe
from aimon_core.compact._summarise import SummaryError, summarise, summary_message
from aimon_core.llm import LLMClient, LLMError, Message, Usage, model_info

# After a fallback the request should sit this far under the threshold, so that the next
# few iterations do not fall back again at once.
_FALLBACK_TARGET = 0.75
# `/compact` keeps at most a fifth of the conversation verbatim.
_MANUAL_KEEP_DIVISOR = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class Compaction:
    """The new transcript, the report for the user, and what the summary call cost.

    When `failed`, no summary was made (the call failed, or automatic compaction is paused
    after repeated failures): the messages are the old ones with their oldest tool results
    shortened or removed, and the caller adds one to the session's compaction failure count.
    A successful compaction sets that count back to zero.
    """

    messages: tuple[Message, ...]
    report: CompactionReport
    usage: Usage = field(default_factory=Usage)
    summary: str | None = None

    @property
    def failed(self) -> bool:
        """Return whether the summary failed and the fallback was used."""
        return not self.report.summarised


async def compact(
    messages: Sequence[Message],
    *,
    client: LLMClient,
    model: str,
    window: int,
    trigger: Trigger = "auto",
    instructions: str | None = None,
    settings: CompactionSettings | None = None,
    calibration: TokenCalibration | None = None,
    overhead_tokens: int = 0,
    failures: int = 0,
) -> Compaction:
    """Replace the older part of `messages` with a summary; keep the newest verbatim.

    Args:
        window: the model's context window (`context_window(model, provider, settings)`).
        trigger: "auto" (the threshold was passed, or the provider said the prompt is too
            long) or "manual" (`/compact`).
        instructions: what the summary should focus on (`/compact` arguments and text
            added by PreCompact hooks).
        overhead_tokens: the uncalibrated estimate of the system prompt and tools
            (`overhead_tokens(system, tools)`), so the reported sizes are whole requests.
        failures: the session's compaction failure count; automatic compaction stops asking
            the model once it reaches `settings.max_failures` and only falls back.

    Never raises for a failed summary (the fallback runs); `asyncio.CancelledError` propagates.
    """
    settings = settings or CompactionSettings()
    calibration = calibration or TokenCalibration()

    def measure(transcript: Sequence[Message]) -> int:
        return calibration.apply(overhead_tokens + messages_tokens(transcript))

    def give_up(error: str, usage: Usage | None = None) -> Compaction:
        shed = fallback(messages, window=window, trigger=trigger, error=error, settings=settings,
                        calibration=calibration, overhead_tokens=overhead_tokens)
        return dataclasses.replace(shed, usage=usage or Usage())

    if trigger == "auto" and failures >= settings.max_failures:
        return give_up(f"automatic compaction is paused after {failures} failed summaries")
    keep = int(keep_recent_tokens(window, settings) / calibration.ratio)
    if trigger == "manual":
        # Asked for, a compaction replaces most of the conversation, however short it is.
        keep = min(keep, messages_tokens(messages) // _MANUAL_KEEP_DIVISOR)
    plan = plan_compaction(messages, keep_recent_tokens=keep)
    if plan is None:
        return give_up("there is no earlier part of the conversation to summarise")
    try:
        max_tokens = min(settings.summary_max_tokens, model_info(model).max_output_tokens)
        summary = await summarise(plan.older, client=client, model=model, window=window,
                                  max_tokens=max_tokens, instructions=instructions)
    except (LLMError, SummaryError) as exc:
        return give_up(f"the summary failed: {exc}",
                       exc.usage if isinstance(exc, SummaryError) else None)
    rebuilt = _join(summary_message(summary.text, plan.older), plan.recent)
    if measure(rebuilt) >= threshold_tokens(window, settings):
        # The recent part alone is too big (a few huge tool results): shorten those too.
        target = _target(window, settings, calibration, overhead_tokens)
        rebuilt = shed_tool_results(rebuilt, target_tokens=target, keep_last=0).messages
    report = describe(plan.older, trigger=trigger, tokens_before=measure(messages),
                      tokens_after=measure(rebuilt))
    if not report.saved:  # a summary as long as what it replaces is no use
        if trigger == "auto":  # the turn must go on: shed old tool results instead
            return give_up("a summary would not have saved anything", summary.usage)
        return Compaction(messages=tuple(messages), report=report, usage=summary.usage)
    return Compaction(messages=rebuilt, report=report, usage=summary.usage, summary=summary.text)


def fallback(
    messages: Sequence[Message],
    *,
    window: int,
    trigger: Trigger = "auto",
    error: str | None = None,
    settings: CompactionSettings | None = None,
    calibration: TokenCalibration | None = None,
    overhead_tokens: int = 0,
) -> Compaction:
    """Shorten, then remove, the oldest tool results until the request is well under the
    threshold; no model call. Also what a caller uses when a PreCompact hook blocks."""
    settings = settings or CompactionSettings()
    calibration = calibration or TokenCalibration()
    target = _target(window, settings, calibration, overhead_tokens)
    shed = shed_tool_results(messages, target_tokens=target)
    report = CompactionReport(
        trigger=trigger,
        tokens_before=calibration.apply(overhead_tokens + messages_tokens(messages)),
        tokens_after=calibration.apply(overhead_tokens + messages_tokens(shed.messages)),
        tool_results=shed.shortened + shed.dropped,
        summarised=False,
        error=error,
    )
    return Compaction(messages=shed.messages, report=report)


def failure_advice(failures: int, settings: CompactionSettings | None = None) -> str | None:
    """Return what to tell the user after `failures` failed compactions in a row, or None."""
    settings = settings or CompactionSettings()
    if failures < settings.max_failures:
        return None
    return (
        f"Compacting the conversation has failed {failures} times in a row, so aimon is now "
        "removing old tool results to stay within the model's context window, and the model "
        "no longer sees them. Run /compact to try a summary again (it may work once the "
        "provider recovers), /clear to start a new conversation, or switch to a model with "
        "a larger context window."
    )


def _target(
    window: int, settings: CompactionSettings, calibration: TokenCalibration, overhead: int
) -> int:
    """Return the uncalibrated message budget that puts a request well under the threshold."""
    goal = threshold_tokens(window, settings) * _FALLBACK_TARGET / calibration.ratio
    return max(0, int(goal) - overhead)


def _join(summary: Message, recent: Sequence[Message]) -> tuple[Message, ...]:
    """Put the summary before the recent messages, keeping user and assistant alternating."""
    if recent and recent[0].role == "user":
        # The recent part starts with a prompt (no tool results: the plan guarantees it);
        # one user message holding both keeps strict chat templates happy.
        first = Message(role="user", content=(*summary.content, *recent[0].content))
        return (first, *recent[1:])
    return (summary, *recent)
