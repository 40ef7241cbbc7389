"""LiveSession: the in-process handle that runs turns for one session and keeps it on disk."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import itertools
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NewType

from aimon_core.agent import (
    AgentEvent,
    AgentRuntime,
    Environment,
    ExecutionBudget,
    ExecutionFinished,
    ExecutionRequest,
    ExecutionResult,
    Executor,
    Notice,
    gather_environment,
)
from aimon_core.hook import HookEvent, HookInput, feedback_reminder
from aimon_core.llm import Message, TextBlock
from aimon_core.session._ids import SessionId
from aimon_core.session._record import BudgetOverride, SessionRecord, SessionTotals
from aimon_core.session._store import ClaimedSession, SessionStore
from aimon_core.tools import ToolContext

TurnId = NewType("TurnId", str)


class SubmitOutcome(enum.Enum):
    """What offer_async did with a prompt."""

    EXECUTED = "executed"
    QUEUED = "queued"


class LiveSessionClosedError(RuntimeError):
    """The LiveSession was closed; open it again to run more turns."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnQueued:
    """A prompt waits for the running turn to finish."""

    turn_id: TurnId
    prompt: str
    position: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnStarted:
    """A turn began."""

    turn_id: TurnId
    prompt: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnFinished:
    """A turn ended (answered, stopped by a limit or an error, or interrupted)."""

    turn_id: TurnId
    result: ExecutionResult
    totals: SessionTotals


LiveSessionEvent = AgentEvent | TurnQueued | TurnStarted | TurnFinished


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveSessionStatus:
    """A snapshot of a LiveSession, for display; changes nothing."""

    session_id: str
    agent: str
    model: str
    running_turn: TurnId | None
    queued: int
    message_count: int
    totals: SessionTotals
    budget: ExecutionBudget
    budget_override: BudgetOverride | None


class LiveSession:
    """Runs turns for one session: one at a time, queued in order, each kept on disk as it goes.

    Closing releases the session's lease and background shells; the AgentRuntime stays open.
    """

    def __init__(
        self,
        *,
        runtime: AgentRuntime,
        store: SessionStore,
        claimed: ClaimedSession,
        tool_context: ToolContext,
        environment: Environment,
        executor: Executor | None = None,
    ) -> None:
        self.runtime = runtime
        self._store = store
        self._claimed = claimed
        self._record = claimed.record
        self._context = replace(tool_context, session_id=claimed.record.id)
        self._environment = environment
        self._executor = executor or Executor()
        self._lock = asyncio.Lock()
        self._subscribers: list[Callable[[LiveSessionEvent], None]] = []
        self._running: tuple[TurnId, asyncio.Task[ExecutionResult]] | None = None
        self._waiting = 0
        self._closed = False
        self._closers: list[Callable[[], None]] = []
        self._pending_context: list[str] = []
        self._turns = itertools.count(1)

    @classmethod
    async def open(
        cls,
        runtime: AgentRuntime,
        store: SessionStore,
        tool_context: ToolContext,
        *,
        session_id: str | None = None,
        holder: str | None = None,
        environment: Environment | None = None,
    ) -> LiveSession:
        """Claim a session (new when `session_id` is None) and return its live handle."""
        claimed = await asyncio.to_thread(
            store.claim, session_id, project_root=str(tool_context.project_root),
            agent_ref=str(runtime.runtime_id), holder=holder,
        )
        try:
            env = environment or await gather_environment(
                tool_context.project_root, tool_context.cwd)
        except BaseException:
            store.release(claimed)
            raise
        live = cls(runtime=runtime, store=store, claimed=claimed, tool_context=tool_context,
                   environment=env)
        await live._session_hook(HookEvent.ON_SESSION_START,
                                 source="startup" if session_id is None else "resume")
        return live

    @property
    def id(self) -> SessionId:
        """Return the session id."""
        return self._record.id

    @property
    def record(self) -> SessionRecord:
        """Return the session record as of the last committed message."""
        return self._record

    @property
    def project_root(self) -> Path:
        """Return the project the session works in."""
        return self._context.project_root

    def budget(self) -> ExecutionBudget:
        """Return the budget a turn gets: the agent's default with the session's override."""
        base = ExecutionBudget(max_iterations=self.runtime.agent.max_iterations or 100)
        override = self._record.budget_override
        if override is None:
            return base
        return base.with_overrides(max_iterations=override.max_iterations,
                                   max_tokens=override.max_tokens,
                                   max_seconds=override.max_seconds)

    def status(self) -> LiveSessionStatus:
        """Return what the session is doing now."""
        return LiveSessionStatus(
            session_id=self.id, agent=self.runtime.agent.name, model=self.runtime.model,
            running_turn=self._running[0] if self._running else None, queued=self._waiting,
            message_count=len(self._record.transcript.messages), totals=self._record.totals,
            budget=self.budget(), budget_override=self._record.budget_override,
        )

    def subscribe(self, callback: Callable[[LiveSessionEvent], None]) -> Callable[[], None]:
        """Call `callback` with every event; return a function that unsubscribes."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback)

    async def events(self) -> AsyncIterator[LiveSessionEvent]:
        """Yield every event from now on, until the session closes."""
        queue: asyncio.Queue[LiveSessionEvent | None] = asyncio.Queue()
        unsubscribe = self.subscribe(queue.put_nowait)
        self._closers.append(lambda: queue.put_nowait(None))
        try:
            while (event := await queue.get()) is not None:
                yield event
        finally:
            unsubscribe()

    async def submit(self, prompt: str, *, budget: ExecutionBudget | None = None
                     ) -> ExecutionResult:
        """Run a turn (after any running or queued ones) and return its result."""
        return await self.submit_async(prompt, budget=budget)

    def submit_async(self, prompt: str, *, budget: ExecutionBudget | None = None
                     ) -> asyncio.Task[ExecutionResult]:
        """Start a turn in the background (queued behind running ones); return its task."""
        return self.offer_async(prompt, budget=budget)[1]

    def offer_async(self, prompt: str, *, budget: ExecutionBudget | None = None
                    ) -> tuple[SubmitOutcome, asyncio.Task[ExecutionResult]]:
        """Run the prompt now if the session is idle, else queue it; say which.

        `budget` replaces the session's budget for this one turn.
        """
        if self._closed:
            raise LiveSessionClosedError(f"session {self.id} is closed")
        turn_id = TurnId(f"{self.id}#{next(self._turns)}-{uuid.uuid4().hex[:6]}")
        busy = self._running is not None or self._lock.locked() or self._waiting > 0
        self._waiting += 1
        task = asyncio.get_running_loop().create_task(self._turn(turn_id, prompt, budget))
        if busy:
            position = self._waiting - (0 if self._running is not None else 1)
            self._publish(TurnQueued(turn_id=turn_id, prompt=prompt, position=position))
            return SubmitOutcome.QUEUED, task
        return SubmitOutcome.EXECUTED, task

    def interrupt(self, turn_id: TurnId | None = None) -> bool:
        """Cancel the running turn (only if it is `turn_id`, when given); True if one was."""
        if self._running is None:
            return False
        running_id, task = self._running
        if turn_id is not None and turn_id != running_id:
            return False
        task.cancel()
        return True

    def set_budget_override(self, override: BudgetOverride | None) -> None:
        """Store a budget override on the record (it survives resume)."""
        self._record = replace(self._record, budget_override=override)
        self._write_side(sync=True)

    def set_approvals(self, approvals: tuple[str, ...]) -> None:
        """Store the session-scope approval rules on the record."""
        self._record = replace(self._record, approvals=approvals)
        self._write_side(sync=True)

    async def close(self) -> None:
        """Stop any running turn, kill background shells and release the lease."""
        if self._closed:
            return
        self._closed = True
        if self._running is not None:
            self._running[1].cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._running[1]
        with contextlib.suppress(Exception):
            await self._context.shell.close()
        with contextlib.suppress(Exception):
            await self._session_hook(HookEvent.ON_SESSION_END, reason="exit")
        for closer in self._closers:
            closer()
        self._store.release(self._claimed)

    async def _session_hook(self, event: HookEvent, *, source: str | None = None,
                            reason: str | None = None) -> None:
        """Run SessionStart / SessionEnd hooks; SessionStart context joins the next prompt."""
        hooks = self.runtime.hooks
        if hooks is None or not hooks.has_hooks(event, source or reason):
            return
        result = await hooks.dispatch(event, HookInput(
            event=event, session_id=self.id, cwd=self._context.cwd,
            transcript_path=self.transcript_path, source=source, reason=reason))
        for note in (*result.errors, result.system_message):
            if note:
                self._publish(Notice(text=note, level="warning"))
        if result.additional_context:
            self._pending_context.append(feedback_reminder(result.additional_context))

    @property
    def transcript_path(self) -> str | None:
        """Return where the transcript is stored, when the store keeps files."""
        path_of = getattr(self._store.records, "path_of", None)
        return str(path_of(self.id)) if callable(path_of) else None

    async def _turn(self, turn_id: TurnId, prompt: str, budget: ExecutionBudget | None
                    ) -> ExecutionResult:
        try:
            await self._lock.acquire()
        finally:
            self._waiting -= 1
        try:
            if self._closed:
                raise LiveSessionClosedError(f"session {self.id} is closed")
            task = asyncio.current_task()
            assert task is not None
            self._running = (turn_id, task)
            return await self._execute(turn_id, prompt, budget or self.budget())
        finally:
            self._running = None
            self._lock.release()

    async def _execute(self, turn_id: TurnId, prompt: str, budget: ExecutionBudget
                       ) -> ExecutionResult:
        self._publish(TurnStarted(turn_id=turn_id, prompt=prompt))
        finished: list[ExecutionResult] = []

        def on_event(event: AgentEvent) -> None:
            if isinstance(event, ExecutionFinished):
                finished.append(event.result)
            self._publish(event)

        message = Message.user(prompt)
        if self._pending_context:
            extra = tuple(TextBlock(text=text) for text in self._pending_context)
            message = Message(role="user", content=(*message.content, *extra))
            self._pending_context.clear()
        request = ExecutionRequest(
            prompt=message, tool_context=self._context, transcript_path=self.transcript_path,
            history=self._record.transcript.messages, budget=budget,
            environment=self._environment, on_event=on_event, on_message=self._persist,
            execution_id=turn_id,
        )
        try:
            result = await self._executor.execute(self.runtime, request)
        finally:
            if finished:
                self._count_turn(finished[-1])
            self._write_side(sync=True)
            if finished:
                self._publish(TurnFinished(turn_id=turn_id, result=finished[-1],
                                           totals=self._record.totals))
        return result

    def _count_turn(self, result: ExecutionResult) -> None:
        totals = self._record.totals.add_turn(
            iterations=result.iterations, usage=result.usage, cost_usd=result.cost_usd)
        self._record = replace(self._record, totals=totals)

    def _persist(self, message: Message) -> None:
        self._store.records.append(self.id, [message], lease=self._claimed.lease)
        self._record = replace(self._record,
                               transcript=self._record.transcript.appended([message]))

    def _write_side(self, *, sync: bool) -> None:
        record = self._record
        self._store.records.write_side(
            self.id, totals=record.totals, budget_override=record.budget_override,
            compaction_failure_count=record.compaction_failure_count,
            approvals=record.approvals, lease=self._claimed.lease, sync=sync,
        )

    def _publish(self, event: LiveSessionEvent) -> None:
        for callback in list(self._subscribers):
            callback(event)
