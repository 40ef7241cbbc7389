"""HostedSession: one live session the service holds for its clients.

It owns the live session (opened by the service, closed by it), passes every event to the
clients watching it, runs what the session's inbox receives as turns (one at a time, each
item taken only when its turn starts, so one delivered but not started survives a crash),
hears the signal bus (interrupt, close), and wakes the session when background work it
started finishes while it is idle (a rewake: `_rewake.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aimon_core.agent import (
    ApprovalAnswer,
    ExecutionResult,
    ToolCallFinished,
)
from aimon_core.live import CommandRan, LiveSession, LiveSessionEvent, TurnFinished, TurnId
from aimon_core.service._rewake import Rewakes
from aimon_core.service._stores import SessionInbox, Signal, SignalBus
from aimon_core.service._values import to_wire

if TYPE_CHECKING:
    from aimon_core.runtime import AgentAssembly

log = logging.getLogger(__name__)

# Told each event of the session, as wire data, once per watching client.
EventSink = Callable[[Mapping[str, Any]], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class HostedOptions:
    """How a hosted session runs.

    Args:
        unattended: started with `-p --bg`: what would ask is refused, as in print mode.
        rewake: wake the session when its background work finishes (the `service.rewake`
            setting).
    """

    unattended: bool = False
    rewake: bool = True


class HostedSession:
    """A live session held by the service: its watchers, inbox, signals and rewakes."""

    def __init__(self, live: LiveSession, assembly: AgentAssembly, *, inbox: SessionInbox,
                 signals: SignalBus, options: HostedOptions,
                 on_change: Callable[[], None] = lambda: None) -> None:
        self.live = live
        self.assembly = assembly
        self.options = options
        self._inbox = inbox
        self._on_change = on_change
        self._watchers: dict[int, EventSink] = {}
        self.last_result: ExecutionResult | None = None
        self.last_activity = time.time()
        self.started = time.time()
        self._wake = asyncio.Event()
        self._wake.set()  # what the inbox kept for the session (a crash before its turn)
        self._idle = asyncio.Event()
        self._idle.set()
        self._closed = False
        self._undelivered = 0  # inbox items delivered here whose turns have not started
        self._finished_turn: TurnId | None = None
        # An attended session's questions wait for a client to answer (its state says so);
        # an unattended one's are refused at once, as print mode refuses them.
        self._unsubscribe = live.subscribe(self._on_event, answers=not options.unattended)
        loop = asyncio.get_running_loop()

        def heard(signal: Signal) -> None:
            # A networked bus calls from its own thread: the session is the loop's to touch.
            if _on_loop(loop):
                self._on_signal(signal)
            else:
                loop.call_soon_threadsafe(self._on_signal, signal)

        self._unlisten = signals.subscribe(str(live.id), heard)
        self.rewakes = Rewakes(live, enabled=options.rewake, wake=self._wake.set)
        self._runner = asyncio.get_running_loop().create_task(self._run(),
                                                              name=f"hosted {live.id}")

    @property
    def id(self) -> str:
        """Return the session id."""
        return str(self.live.id)

    # -- what clients see

    def watch(self, key: int, sink: EventSink) -> Callable[[], None]:
        """Send every event from now on to `sink` (one client); return what stops it."""
        self._watchers[key] = sink
        self._on_change()

        def unwatch() -> None:
            if self._watchers.pop(key, None) is not None:
                self._on_change()

        return unwatch

    @property
    def watchers(self) -> int:
        """Return how many clients watch the session."""
        return len(self._watchers)

    def state(self) -> str:
        """Return running, waiting (for approval), idle, finished or failed."""
        status = self.live.status()
        if status.pending_approvals:
            return "waiting"
        # The turn that told its end is over, though its task is still returning.
        running = status.running_turn not in (None, self._finished_turn)
        if running or status.queued or not self._idle.is_set() or self._undelivered:
            return "running"
        if self.last_result is not None and not self.last_result.stop.ok:
            return "failed"
        if self.options.unattended and self.last_result is not None:
            return "finished"
        return "idle"

    def busy(self) -> bool:
        """Tell whether the session works or waits (an idle service keeps running for it)."""
        return self.state() in ("running", "waiting") or self.rewakes.watching() > 0

    def summary(self) -> dict[str, Any]:
        """Return the session's line of `aimon ps`, as wire data."""
        record, status = self.live.record, self.live.status()
        totals = record.totals
        first = next((m.first_text for m in record.transcript.messages if m.role == "user"),
                     "")
        return {
            "session_id": self.id, "project": str(self.live.project_root),
            "agent": status.agent, "model": status.model, "state": self.state(),
            "last_activity": self.last_activity, "started": self.started,
            "title": " ".join(first.split())[:80], "turns": totals.turns,
            "input_tokens": totals.input_tokens, "output_tokens": totals.output_tokens,
            "cost_usd": round(totals.cost_usd, 6), "attached": self.watchers,
            "unattended": self.options.unattended,
            "pending_approvals": status.pending_approvals,
            "rewakes_pending": self.rewakes.pending_count(),
            "background": self.rewakes.watching(),
        }

    def _on_event(self, event: LiveSessionEvent) -> None:
        self.last_activity = time.time()
        match event:
            case TurnFinished(result=result, turn_id=turn_id):
                self.last_result = result
                self._finished_turn = turn_id
                self._turn_over()
            case CommandRan() as ran if ran.prompt is None:
                self._turn_over()
            case ToolCallFinished() as finished:
                self.rewakes.saw_tool_call(finished)
        if self._watchers:
            data = {"session_id": self.id, "event": to_wire(event)}
            for sink in list(self._watchers.values()):
                sink(data)
        self._on_change()

    def _turn_over(self) -> None:
        """A turn ended: the session is idle from its subscribers' view at once (the next
        inbox item, if any, is still counted as delivered), and the runner looks again."""
        self._idle.set()
        self._wake.set()  # the inbox and rewakes wait for an idle session

    def _on_signal(self, signal: Signal) -> None:
        # CLOSE is the holder's to carry out: the service releases the session itself.
        if self._closed:
            return
        if signal is Signal.INTERRUPT:
            self.live.interrupt()
        elif signal is Signal.WAKE:
            self._wake.set()  # another service put text in the inbox

    # -- input

    def answer(self, request_id: str, answer: ApprovalAnswer) -> bool:
        """Answer a waiting approval; False if it was answered already (the first wins)."""
        return self.live.answer(request_id, answer)

    async def deliver(self, text: str, *, sender: str = "") -> str:
        """Put `text` in the session's inbox; return "started" or "queued"."""
        idle = self.state() not in ("running", "waiting")
        await asyncio.to_thread(self._inbox.deliver, self.id, text, sender=sender)
        self._undelivered += 1  # running from now on, though its turn has not started yet
        self._wake.set()
        return "started" if idle else "queued"

    def idle_now(self) -> bool:
        """Tell whether no turn runs or waits in the session."""
        status = self.live.status()
        return status.running_turn in (None, self._finished_turn) and status.queued == 0

    async def _run(self) -> None:
        """Run the inbox's items, then due rewakes, as turns, whenever the session is idle."""
        while not self._closed:
            await self._wake.wait()
            self._wake.clear()
            while not self._closed and self.idle_now():
                text = await self._next_input()
                if text is None:
                    break
                self._idle.clear()
                try:
                    task = self.live.submit_async(text)
                    with contextlib.suppress(Exception):
                        await asyncio.wait([task])
                finally:
                    self._idle.set()
                self._on_change()

    async def _next_input(self) -> str | None:
        """Take the next inbox item (at most once), else a due rewake's prompt."""
        for item in await asyncio.to_thread(self._inbox.pending, self.id):
            if await asyncio.to_thread(self._inbox.take, item.id):
                self._undelivered = max(0, self._undelivered - 1)
                return item.text
        return await self.rewakes.take_due()

    async def close(self) -> None:
        """Stop watching, end the running turn and close the live session (it stays stored)."""
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        self._unlisten()
        await self.rewakes.close()
        self._runner.cancel()
        await asyncio.gather(self._runner, return_exceptions=True)
        await self.live.close()
        self._unsubscribe()
        self._on_change()


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
