"""The compaction engine: measure requests, summarise old messages, shed and spill results.

The executor calls it between iterations (see `compact` and `needs_compaction`); `/compact`
calls `compact` with `trigger="manual"`. The engine functions fire no hooks and write nothing;
`SessionCompactor` drives them for one session (it is the executor's `Compactor`): it fires
PreCompact / PostCompact and hands every compaction to the caller to persist.

Layering: the engine modules import only `aimon_core.llm`; `_session` also imports
`aimon_core.agent` (the Compactor protocol, events) and `aimon_core.hook`, so this package
sits above `agent` and below `live`, which wires it into each LiveSession.
"""

from typing import TYPE_CHECKING

from aimon_core._lazy import lazy_getattr
from aimon_core.compact._estimate import (
    RunningEstimate,
    TokenCalibration,
    TokenCounter,
    count_request_tokens,
    estimate_request_tokens,
    is_prompt_too_long,
    message_tokens,
    messages_tokens,
    overhead_tokens,
    reported_prompt_tokens,
    request_tokens,
    text_tokens,
)
from aimon_core.compact._policy import (
    WINDOW_ENV,
    CompactionSettings,
    compaction_settings,
    context_window,
    keep_recent_tokens,
    needs_compaction,
    threshold_tokens,
)
from aimon_core.compact._session import SessionCompactor

if TYPE_CHECKING:
    from aimon_core.compact._compact import Compaction, compact, failure_advice, fallback
    from aimon_core.compact._fallback import Shed, shed_tool_results
    from aimon_core.compact._plan import CompactionPlan, is_cut_point, plan_compaction
    from aimon_core.compact._report import CompactionReport, Trigger, describe
    from aimon_core.compact._spill import spill_large_result, spill_path
    from aimon_core.compact._summarise import (
        SUMMARY_PREAMBLE,
        Summary,
        SummaryError,
        render_transcript,
        summarise,
        summary_message,
    )

# The engine loads on first use: a session that never compacts (print mode, most turns)
# never pays for its modules (~15 ms of CPU on `aimon -p`).
_LAZY = {
    "Compaction": "_compact",
    "compact": "_compact",
    "failure_advice": "_compact",
    "fallback": "_compact",
    "Shed": "_fallback",
    "shed_tool_results": "_fallback",
    "CompactionPlan": "_plan",
    "is_cut_point": "_plan",
    "plan_compaction": "_plan",
    "CompactionReport": "_report",
    "Trigger": "_report",
    "describe": "_report",
    "spill_large_result": "_spill",
    "spill_path": "_spill",
    "SUMMARY_PREAMBLE": "_summarise",
    "Summary": "_summarise",
    "SummaryError": "_summarise",
    "render_transcript": "_summarise",
    "summarise": "_summarise",
    "summary_message": "_summarise",
}

__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "SUMMARY_PREAMBLE",
    "WINDOW_ENV",
    "Compaction",
    "CompactionPlan",
    "CompactionReport",
    "CompactionSettings",
    "RunningEstimate",
    "SessionCompactor",
    "Shed",
    "Summary",
    "SummaryError",
    "TokenCalibration",
    "TokenCounter",
    "Trigger",
    "compact",
    "compaction_settings",
    "context_window",
    "count_request_tokens",
    "describe",
    "estimate_request_tokens",
    "failure_advice",
    "fallback",
    "is_cut_point",
    "is_prompt_too_long",
    "keep_recent_tokens",
    "message_tokens",
    "messages_tokens",
    "needs_compaction",
    "overhead_tokens",
    "plan_compaction",
    "render_transcript",
    "reported_prompt_tokens",
    "request_tokens",
    "shed_tool_results",
    "spill_large_result",
    "spill_path",
    "summarise",
    "summary_message",
    "text_tokens",
    "threshold_tokens",
]
