"""How a routine runs: its prompt as one turn of a session, with print mode's permissions.

`SessionRoutineRunner` opens a session in an application (the service's) for the routine's
project and agent, a new one each run or the routine's named session, and submits the
prompt (a slash command, such as a skill, runs as the command). Nobody answers questions: a
call that would ask is refused and counted, as in print mode, so a routine never runs with
wider permissions than its agent and project give. The run's tokens are capped by its
budget and its cost by watching each model response; a run over its cost is stopped.
At the end a Notification hook fires in the run's session (`notification_type`
"routine_finished" or "routine_failed"), so a user's hook can post it anywhere.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from aimon_core.scheduling._routine import Routine, RoutineRun, RunOutcome

if TYPE_CHECKING:
    from aimon_core.agent import ExecutionResult
    from aimon_core.live import LiveSession, LiveSessionEvent
    from aimon_core.runtime import Application, RuntimeParts

log = logging.getLogger(__name__)

# How much of the answer a run keeps as its message.
MESSAGE_CHARS = 400


class SessionRoutineRunner:
    """Runs routines as sessions of an application (a RoutineRunner)."""

    def __init__(self, app: Application, *, holder: str = "aimon routine",
                 parts: RuntimeParts | None = None) -> None:
        self._app = app
        self._holder = holder
        self._parts = parts

    async def __call__(self, routine: Routine, run: RoutineRun,
                       on_session: Callable[[str], None]) -> RoutineRun:
        """Run the routine's prompt once; return how it went."""
        from aimon_core.runtime import RuntimeFlags, RuntimeParts, RuntimeSetupError
        from aimon_core.session import SessionError

        flags = RuntimeFlags(agent=routine.agent)
        registry = self._app.runtimes(Path(routine.project), flags,
                                      parts=self._parts or RuntimeParts(),
                                      on_notice=lambda text: log.info("%s", text))
        try:
            assembly = await registry.get()
            if assembly.mcp is not None:
                assembly.start_background(lambda text: log.info("%s", text))
                await assembly.mcp.wait_ready(assembly.mcp.options.connect_timeout)
            live = await assembly.open_session(self._app.store, session_id=routine.session,
                                               holder=f"{self._holder} {routine.name}")
        except (RuntimeSetupError, SessionError, ValueError) as exc:
            return replace(run, outcome=RunOutcome.FAILED, message=f"not started: {exc}")
        on_session(str(live.id))
        async with live:
            watch = _RunWatch(live, routine, run)
            unsubscribe = live.subscribe(watch.on_event)  # answers nothing: asks are refused
            try:
                budget = live.budget().with_overrides(max_tokens=routine.limits.max_tokens)
                result = await _awaited(live.submit_async(routine.prompt, budget=budget), watch)
            finally:
                unsubscribe()
            done = watch.result(result)
            await _tell_hooks(live, routine, done)
        return done


async def _awaited(task: asyncio.Task[ExecutionResult], watch: _RunWatch
                ) -> ExecutionResult | None:
    """Wait for the run's turn; None if it was interrupted before it told its result.

    An interrupted turn re-raises its cancellation: that ends the turn, not the run's task.
    When the run itself is cancelled (the kill switch, a shutdown), its turn is stopped too.
    """
    try:
        await asyncio.wait([task])
    except asyncio.CancelledError:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise
    if task.cancelled():
        return watch.finished
    return task.result()


class _RunWatch:
    """Counts a run's refusals and cost; stops it when it passes its max cost."""

    def __init__(self, live: LiveSession, routine: Routine, run: RoutineRun) -> None:
        self.live = live
        self.routine = routine
        self.run = replace(run, session_id=str(live.id))
        self.refusals = 0
        self.cost = 0.0
        self.over_cost = ""
        self.finished: ExecutionResult | None = None

    def on_event(self, event: LiveSessionEvent) -> None:
        from aimon_core.agent import ApprovalRefused, AssistantMessageCompleted
        from aimon_core.live import TurnFinished

        match event:
            case TurnFinished(result=result):
                self.finished = result
            case ApprovalRefused():
                self.refusals += 1
            case AssistantMessageCompleted(cost_usd=cost):
                self.cost += cost
                cap = self.routine.limits.max_cost_usd
                if cap is not None and self.cost > cap and not self.over_cost:
                    self.over_cost = (f"stopped: the run cost ${self.cost:.4f}, over its "
                                      f"max-cost ${cap:.4f}")
                    self.live.interrupt()

    def result(self, result: ExecutionResult | None) -> RoutineRun:
        from aimon_core.agent import StopCause

        if result is None:
            return replace(self.run, outcome=RunOutcome.FAILED if self.over_cost
                           else RunOutcome.INTERRUPTED, cost_usd=self.cost,
                           refusals=self.refusals, message=self.over_cost or "interrupted")
        if self.over_cost:
            outcome, message = RunOutcome.FAILED, self.over_cost
        elif result.stop.ok:
            outcome, message = RunOutcome.OK, result.text.strip()[-MESSAGE_CHARS:]
        elif result.stop is StopCause.INTERRUPTED:
            outcome, message = RunOutcome.INTERRUPTED, result.reason
        else:
            outcome, message = RunOutcome.FAILED, result.reason or result.stop.value
        if self.refusals:
            message = f"{message} ({self.refusals} tool call(s) refused: they would have asked)"
        usage = result.usage
        return replace(self.run, outcome=outcome, input_tokens=usage.input_tokens,
                       output_tokens=usage.output_tokens,
                       cost_usd=max(result.cost_usd, self.cost), refusals=self.refusals,
                       message=message.strip())


async def _tell_hooks(live: LiveSession, routine: Routine, done: RoutineRun) -> None:
    """Fire the Notification hook of the run's end in its session."""
    from aimon_core.hook import NotificationInput

    kind = "routine_finished" if done.outcome is RunOutcome.OK else "routine_failed"
    text = f"routine {routine.name}: {done.outcome.value}"
    if done.message:
        text += f": {done.message[:200]}"
    try:
        await live.hooks.fire(NotificationInput(message=text, notification_type=kind,
                                                title=f"aimon routine {routine.name}"))
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("the Notification hook of routine %s failed", routine.name)
