"""SessionCompactor: the engine as one session's executor and `/compact` drive it.

It implements `aimon_core.agent.Compactor`: measure each request against the window
(calibrated by the previous response's usage), compact past the threshold with PreCompact
and PostCompact hooks around the summary, compact once after "prompt is too long", and save
large tool results in the session's folder. The caller persists what `on_compacted` gets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from aimon_core.agent import Compacted, Notice
from aimon_core.compact._estimate import (
    RunningEstimate,
    TokenCalibration,
    is_prompt_too_long,
    messages_tokens,
    overhead_tokens,
    reported_prompt_tokens,
)
from aimon_core.compact._policy import (
    CompactionSettings,
    context_window,
    is_too_large,
    threshold_tokens,
)
from aimon_core.hook import HookDispatcher, HookEvent
from aimon_core.llm import (
    LLMClient,
    LLMError,
    LLMRequest,
    Message,
    ToolDefinition,
    ToolResultBlock,
    Usage,
)

if TYPE_CHECKING:
    from aimon_core.compact._report import Trigger
    from aimon_core.llm import PriceTable

# The engine itself (planning, summarising, shedding, spilling: ~15 ms of imports, mostly
# their dataclasses) loads when a session first compacts or spills, not on every start.


def _ignore(_: object) -> None:
    return None


class SessionCompactor:
    """Keeps one session's requests inside its model's context window.

    Args:
        failures: the session's compaction failure count, as stored.
        spill_dir: the session's folder; large tool results are saved under it (None: they
            are only cut down).
        on_compacted: called with every compaction, after `failures` is updated (persist the
            transcript snapshot and the count there).
        on_notice: hook messages and failures for the user.
        prices: what a summary call costs (the runtime's table; None: aimon's).
    """

    def __init__(
        self,
        *,
        client: LLMClient,
        model: str,
        settings: CompactionSettings | None = None,
        hooks: HookDispatcher | None = None,
        spill_dir: Path | None = None,
        failures: int = 0,
        on_compacted: Callable[[Compacted], None] = _ignore,
        on_notice: Callable[[Notice], None] = _ignore,
        prices: PriceTable | None = None,
    ) -> None:
        self.client = client
        self.prices = prices
        self.model = model
        self.settings = settings or CompactionSettings()
        self.hooks = hooks
        self.spill_dir = spill_dir
        self.failures = failures
        self.window = context_window(model, client.provider, self.settings)
        self.calibration = TokenCalibration()
        self._on_compacted = on_compacted
        self._on_notice = on_notice
        self._overhead: int | None = None
        # The requests of a session grow at the end: measure only what each one adds.
        self._estimate = RunningEstimate()

    # -- the executor's side (aimon_core.agent.Compactor)

    async def before_call(self, request: LLMRequest) -> Compacted | None:
        """Return a compaction if `request` would pass the threshold, else None."""
        self._overhead = self._estimate.overhead(request.system, request.tools)
        if len(request.messages) < 2:
            return None
        # needs_compaction(request, ...), measuring only what is new since the last call
        size = self.calibration.apply(self._estimate.request(request))
        if size < threshold_tokens(self.window, self.settings):
            return None
        return await self.compact(request.messages, trigger="auto")

    async def after_refusal(self, request: LLMRequest, error: LLMError) -> Compacted | None:
        """Return a compaction if the provider refused `request` as too long, else None."""
        if not is_prompt_too_long(error):
            return None
        stated = reported_prompt_tokens(error)
        if stated is not None:  # the provider's own count beats our estimate
            self.observe(request, Usage(input_tokens=stated))
        return await self.compact(request.messages, trigger="auto")

    def observe(self, request: LLMRequest, usage: Usage) -> None:
        """Learn from the usage of a response how far the size estimates are off."""
        self.calibration = self.calibration.observe(
            estimated=self._estimate.request(request), usage=usage
        )

    async def limit_result(self, block: ToolResultBlock) -> ToolResultBlock:
        """Return `block`, or if it is too large, its head and tail and the file with all."""
        if self.spill_dir is None or not is_too_large(block, self.settings):
            return block
        from aimon_core.compact._spill import spill_large_result

        return await spill_large_result(block, directory=self.spill_dir, settings=self.settings)

    # -- both sides

    def overhead(self, tools: Sequence[ToolDefinition] = ()) -> int:
        """Return the estimate of the system prompt and tools of the last request seen."""
        if self._overhead is None:
            return overhead_tokens("", tools)
        return self._overhead

    async def compact(
        self,
        messages: Sequence[Message],
        *,
        trigger: Trigger,
        instructions: str | None = None,
        tools: Sequence[ToolDefinition] = (),
    ) -> Compacted:
        """Compact `messages` between PreCompact and PostCompact hooks; report and persist.

        A PreCompact hook that blocks stops a manual compaction (nothing changes) and turns
        an automatic one into the fallback (old tool results shed), since the turn must go
        on. Text a hook adds joins the summary's instructions.
        """
        from aimon_core.compact._compact import compact, failure_advice
        from aimon_core.compact._plan import is_cut_point

        focus = instructions.strip() if instructions else ""
        overhead = self.overhead(tools)
        if trigger == "manual" and not any(
            is_cut_point(messages, i) for i in range(1, len(messages))
        ):
            # Too short to summarise: say so, change nothing, count no failure.
            return self._unchanged(messages, trigger, "there is nothing earlier to summarise yet",
                                   overhead)
        pre = None
        if self.hooks is not None and self.hooks.active(HookEvent.PRE_COMPACT, trigger):
            from aimon_core.hook import PreCompactInput  # the input types load when one fires

            pre = await self.hooks.fire(PreCompactInput(trigger=trigger,
                                                        custom_instructions=focus))
            self._notices(pre.errors, pre.system_message)
            if pre.additional_context.strip():
                focus = f"{focus}\n{pre.additional_context.strip()}".strip()
        if pre is not None and (pre.blocked or pre.stopped):
            why = pre.feedback or pre.stop_reason or "no reason given"
            return self._blocked(messages, trigger, f"a PreCompact hook blocked it: {why}",
                                 overhead)
        done = await compact(
            messages, client=self.client, model=self.model, window=self.window,
            trigger=trigger, instructions=focus or None, settings=self.settings,
            calibration=self.calibration, overhead_tokens=overhead, failures=self.failures,
        )
        self.failures = self.failures + 1 if done.failed else 0
        from aimon_core.llm import DEFAULT_PRICES

        prices = self.prices or DEFAULT_PRICES  # the runtime's, as the executor prices calls
        cost = prices.cost(self.model, self.client.provider, done.usage)
        event = Compacted(
            trigger=trigger, text=done.report.text, tokens_before=done.report.tokens_before,
            tokens_after=done.report.tokens_after, summarised=not done.failed,
            messages=done.messages, usage=done.usage, cost_usd=cost,
            advice=failure_advice(self.failures, self.settings) if done.failed else None,
        )
        self._on_compacted(event)
        if self.hooks is not None and self.hooks.active(HookEvent.POST_COMPACT, trigger):
            from aimon_core.hook import PostCompactInput

            post = await self.hooks.fire(PostCompactInput(
                trigger=trigger, custom_instructions=focus, compact_summary=done.summary or ""))
            self._notices(post.errors, post.system_message)
        return event

    def _blocked(
        self, messages: Sequence[Message], trigger: Trigger, why: str, overhead: int
    ) -> Compacted:
        if trigger == "manual":
            return self._unchanged(messages, trigger, why, overhead)
        from aimon_core.compact._compact import fallback

        shed = fallback(messages, window=self.window, trigger=trigger, error=why,
                        settings=self.settings, calibration=self.calibration,
                        overhead_tokens=overhead)
        event = Compacted(trigger=trigger, text=shed.report.text,
                          tokens_before=shed.report.tokens_before,
                          tokens_after=shed.report.tokens_after, summarised=False,
                          messages=shed.messages)
        self._on_compacted(event)
        return event

    def _unchanged(
        self, messages: Sequence[Message], trigger: Trigger, why: str, overhead: int
    ) -> Compacted:
        size = self.calibration.apply(overhead + messages_tokens(messages))
        return Compacted(trigger=trigger, text=f"Conversation not compacted: {why}.",
                         tokens_before=size, tokens_after=size, summarised=False,
                         messages=tuple(messages))

    def _notices(self, errors: Sequence[str], message: str) -> None:
        for text in (*errors, message):
            if text:
                self._on_notice(Notice(text=text, level="warning"))
