"""Hook spans: the execution's hook dispatcher, watched, one span per event some hook runs for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING

from aimon_core.hook import HookDispatcher

if TYPE_CHECKING:
    from aimon_core.hook import HookEventInput, HookResult
    from aimon_core.observe._trace import _Recorder


@dataclass(frozen=True, slots=True)
class TracedHookDispatcher(HookDispatcher):
    """A HookDispatcher that tells `spans` of each event it fires hooks for.

    It is the execution's own dispatcher with the same bound facts (`bound` keeps the
    watching), so every hook input carries what it carried before.
    """

    spans: _Recorder | None = field(default=None, kw_only=True)

    async def fire(self, data: HookEventInput, *, env: Mapping[str, str] | None = None
                   ) -> HookResult:
        """Fire the event's hooks; a span covers them when any runs."""
        spans = self.spans
        # Most events have no hook at all (a None subject matches every matcher): tell that
        # before building the hook input (its module: ~9 ms of import on a run with no hooks).
        if spans is None or not self.active(data.event) or not self.active(
                data.event, self.input(data).match_subject()):
            return await HookDispatcher.fire(self, data, env=env)
        use_id = getattr(data, "tool_use_id", None)
        parent = (spans.tools[use_id].span_id if isinstance(use_id, str) and use_id in spans.tools
                  else spans.calling())
        span = spans.open(f"hook {data.event.value}", parent,
                          **{"aimon.hook.event": data.event.value})
        try:
            result = await HookDispatcher.fire(self, data, env=env)
        except BaseException as exc:
            spans.close(span, error=str(exc) or type(exc).__name__)
            raise
        span.attributes["aimon.hook.outcome"] = (
            "blocked" if result.blocked else "denied" if result.denied
            else "stopped" if result.stop_reason else "continued")
        if result.source:
            span.attributes["aimon.hook.source"] = result.source[:200]
        spans.close(span, error="; ".join(result.errors)[:200])
        return result


def traced_hooks(hooks: HookDispatcher | None, spans: _Recorder) -> HookDispatcher | None:
    """Return `hooks` watched by `spans` (None stays None: no hooks fire)."""
    if hooks is None:
        return None
    bound = {f.name: getattr(hooks, f.name) for f in fields(HookDispatcher) if f.init}
    return TracedHookDispatcher(**bound, spans=spans)
