"""CostLedger: the interceptor that keeps every model call in the ledger and holds the caps.

Before each model call it adds up what is spent (this turn, today, this month) and estimates
the call; a call that would pass a cap (`budget.perTurnUsd`, `budget.dailyUsd`,
`budget.monthlyUsd`) is not made: `BudgetCapError` says which cap, and how to raise it. The
executor ends the turn on it like on any model error, so the transcript stays well formed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, TypeVar

from aimon_core.llm import (
    LLMError,
    LLMRequest,
    ModelCall,
    ModelProceed,
    PriceTable,
    ResponseCompleted,
    StreamEvent,
    StreamRestarted,
    TextDelta,
    ThinkingDelta,
    Usage,
    UsageReported,
)
from aimon_core.observe._chain import execution_kind
from aimon_core.observe._ledger import LedgerEntry, start_of_day, start_of_month
from aimon_core.observe._settings import BudgetCaps

if TYPE_CHECKING:
    from aimon_core.agent import AgentRuntime, ExecutionRequest, ExecutionResult
    from aimon_core.observe._chain import ExecutionProceed

Clock = Callable[[], float]
_T = TypeVar("_T")
log = logging.getLogger(__name__)


class LedgerStore(Protocol):
    """Where the ledger's rows live (`SQLiteLedgerStore`); blocking, called off the loop."""

    def add(self, entry: LedgerEntry) -> None:
        """Keep one call."""
        ...

    def spent_since(self, since: float) -> float:
        """Return what every call since `since` cost."""
        ...

    def entries(self, since: float = 0.0) -> tuple[LedgerEntry, ...]:
        """Return every call since `since`, oldest first."""
        ...

    def close(self) -> None:
        """Release the file."""
        ...


_CAP_WORDS = {
    "budget.perTurnUsd": ("per-turn", "this turn"),
    "budget.dailyUsd": ("daily", "today"),
    "budget.monthlyUsd": ("monthly", "this month"),
}


class BudgetCapError(LLMError):
    """A model call was not made: it would pass a hard cap on spending."""

    def __init__(self, *, cap: str, limit: float, spent: float, estimate: float,
                 where: str = "") -> None:
        adjective, period = _CAP_WORDS[cap]
        source = f" (set in the {where} settings)" if where else ""
        advice = (f"To go on, raise {cap} in your settings{source}"
                  + (", or wait until the next day" if cap == "budget.dailyUsd" else "")
                  + (", or wait until the next month" if cap == "budget.monthlyUsd" else "")
                  + ".")
        super().__init__(
            f"stopped before the model call: it would pass the {adjective} cap of "
            f"${limit:.2f} ({cap}): ${spent:.4f} spent {period}, this call about "
            f"${estimate:.4f}. {advice}", provider="aimon")
        self.cap = cap
        self.limit = limit
        self.spent = spent
        self.estimate = estimate

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerScope:
    """What every call of one runtime is kept under: its project and agent."""

    project: str
    agent: str


class CostLedger:
    """Keeps each model call in the ledger; refuses a call that would pass a cap.

    It is a model-call interceptor (every call of the runtime's client: turns, forks and
    compaction summaries alike) and an execution interceptor (it marks where a session's turn
    starts, for the per-turn cap; a fork's calls count to the turn that started it).
    """

    def __init__(self, store: LedgerStore, scope: LedgerScope, *, prices: PriceTable,
                 caps: Callable[[], BudgetCaps] = BudgetCaps,
                 cap_sources: Callable[[], dict[str, str]] = dict, clock: Clock = time.time
                 ) -> None:
        self.store = store
        self.scope = scope
        self.prices = prices
        self._caps = caps
        self._cap_sources = cap_sources
        self._clock = clock
        self._turns: dict[str, float] = {}
        self._last_output: dict[str, int] = {}
        # One thread does the ledger's I/O in order: a row is written while the turn goes on
        # (not on the way from the model's answer to the next step), and a cap check, queued
        # behind the rows before it, sees them all.
        self._io = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="aimon ledger")

    async def around_execution(self, runtime: AgentRuntime, request: ExecutionRequest,
                               proceed: ExecutionProceed) -> ExecutionResult:
        """Count this turn's spending from zero (a fork's counts to the turn that started it)."""
        if execution_kind(request.turn) == "fork":
            return await proceed(runtime, request)
        key = request.turn.session_id
        self._turns[key] = 0.0
        try:
            return await proceed(runtime, request)
        finally:
            self._turns.pop(key, None)
            # The turn's rows are in the file before its end is told (`/cost` reads them).
            await asyncio.shield(asyncio.wrap_future(self._submit(_nothing)))

    async def around_model_call(self, call: ModelCall, proceed: ModelProceed
                                ) -> AsyncIterator[StreamEvent]:
        """Check the caps, make the call, keep what it cost."""
        await self._check(call)
        reported: Usage | None = None
        streamed = 0
        try:
            async for event in proceed(call.request):
                match event:
                    case ResponseCompleted(response=response):
                        self._keep(call, response.usage)
                        reported, streamed = None, 0  # kept whole: nothing left to estimate
                    case UsageReported(usage=usage):
                        reported = usage
                    case TextDelta(text=text) | ThinkingDelta(text=text):
                        streamed += len(text)
                    case StreamRestarted():
                        reported, streamed = None, 0
                    case _:
                        pass
                yield event
        except (asyncio.CancelledError, GeneratorExit):
            # Interrupted mid-stream: keep what the provider reported so far and estimate the
            # rest (~4 characters a token), as the executor counts it in the session's totals.
            if reported is not None or streamed:
                self._keep(call, _interrupted(call.request, reported, streamed))
            raise

    def turn_spent(self, session_id: str) -> float:
        """Return what the session's running turn has spent so far (0 when none runs)."""
        return self._turns.get(session_id, 0.0)

    def estimate(self, call: ModelCall) -> float:
        """Return what the call may cost: its input (~4 characters a token, uncached) and as
        much output as the session's previous call gave."""
        price = self.prices.price(call.request.model, call.provider)
        output = self._last_output.get(call.session_id, 0)
        return (_input_tokens(call.request) * price.input + output * price.output) / 1e6

    async def _check(self, call: ModelCall) -> None:
        caps = self._caps()
        if caps.per_turn_usd is None and caps.daily_usd is None and caps.monthly_usd is None:
            return
        estimate = self.estimate(call)
        now = self._clock()
        checks: list[tuple[str, float, Callable[[], float]]] = []
        if caps.per_turn_usd is not None and call.session_id in self._turns:
            spent = self._turns[call.session_id]
            checks.append(("budget.perTurnUsd", caps.per_turn_usd, lambda: spent))
        if caps.daily_usd is not None:
            day = start_of_day(now)
            checks.append(("budget.dailyUsd", caps.daily_usd,
                           lambda: self.store.spent_since(day)))
        if caps.monthly_usd is not None:
            month = start_of_month(now)
            checks.append(("budget.monthlyUsd", caps.monthly_usd,
                           lambda: self.store.spent_since(month)))
        for cap, limit, spent_now in checks:
            spent = await asyncio.wrap_future(self._submit(spent_now))
            if spent + estimate > limit:
                raise BudgetCapError(cap=cap, limit=limit, spent=spent, estimate=estimate,
                                     where=self._cap_sources().get(cap, ""))

    def _keep(self, call: ModelCall, usage: Usage) -> None:
        cost = self.prices.cost(call.request.model, call.provider, usage)
        session = call.session_id
        if session in self._turns:
            self._turns[session] += cost
        self._last_output[session] = usage.output_tokens
        agent = call.request.metadata.get("agent")  # a subagent's calls say so
        entry = LedgerEntry(at=self._clock(), session_id=session, project=self.scope.project,
                            agent=agent if isinstance(agent, str) else self.scope.agent,
                            model=call.request.model,
                            provider=call.provider, usage=usage, cost_usd=cost)
        self._submit(self.store.add, entry).add_done_callback(_log_failure)

    def _submit(self, work: Callable[..., _T], *args: object) -> concurrent.futures.Future[_T]:
        """Queue `work` on the ledger's thread; once closed, run it here (work that outlived
        its runtime, such as a background subagent's last call, is still kept)."""
        try:
            return self._io.submit(work, *args)
        except RuntimeError:  # shut down
            done: concurrent.futures.Future[_T] = concurrent.futures.Future()
            try:
                done.set_result(work(*args))
            except Exception as exc:
                done.set_exception(exc)
            return done

    async def aclose(self) -> None:
        """Write the rows still queued, then release the file."""
        await asyncio.to_thread(self._io.shutdown, wait=True)
        self.store.close()


def _nothing() -> None:
    return None


def _log_failure(future: concurrent.futures.Future[None]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("the cost ledger could not keep a call", exc_info=future.exception())


def _interrupted(request: LLMRequest, reported: Usage | None, streamed: int) -> Usage:
    usage = reported or Usage()
    output = (streamed + 3) // 4
    if output > usage.output_tokens:
        usage = replace(usage, output_tokens=output)
    if reported is None:  # OpenAI reports usage only at the end
        usage = replace(usage, input_tokens=_input_tokens(request))
    return usage


def _input_tokens(request: LLMRequest) -> int:
    from aimon_core.compact import request_tokens

    return request_tokens(request)
