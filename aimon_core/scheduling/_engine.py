"""SchedulingEngine: runs routines when due, within their limits, and never runs away.

The engine lives in an application scope (the service): made at start, closed at shutdown.
Each pass (`tick`) looks at the routines due, claims each occurrence in the store (one
engine of several sharing it wins), checks the guards, and starts the run as a task; the
loop sleeps until the next routine is due or something changes. Time comes from an injected
clock, so tests set it and call `tick` instead of waiting.

Guards: no two runs of one routine at once; at most `max_concurrent` runs in all (the rest
wait for a free slot); runs and cost per day, per routine and in all (an occurrence over a
limit is recorded as skipped); tokens and cost per run (the runner stops the run); after a
failed run the next occurrences wait out a backoff (doubling, capped), and after
`pause_after_failures` failures in a row the routine pauses; `pause_all` is the kill switch
(every routine paused, every run interrupted).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from types import TracebackType

from aimon_core.scheduling._routine import (
    Routine,
    RoutineError,
    RoutineRun,
    RoutineState,
    RunOutcome,
    UnknownRoutineError,
)
from aimon_core.scheduling._store import RoutineStore, RunLog, interrupted
from aimon_core.scheduling._trigger import catch_up, next_time

log = logging.getLogger(__name__)

DAY = 86400.0


# Carries out one run of a routine (told the session's id as soon as it has one) and returns
# the run it was given with how it went: outcome, session, tokens, cost, refusals, message.
RoutineRunner = Callable[[Routine, RoutineRun, Callable[[str], None]], Awaitable[RoutineRun]]
# Told each run that ended (finished, failed, interrupted or skipped), with its routine.
RunListener = Callable[[Routine, RoutineRun], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulingLimits:
    """Limits over all routines, and how the engine waits.

    Args:
        grace_seconds: an occurrence this late or less is on time; a later one was missed
            (while no engine ran) and runs once, coalesced, or is skipped (`skip_missed`).
        stale_run_seconds: how long another engine's run may show running before it is
            taken as interrupted (its engine died and never came back).
        max_sleep_seconds: the longest the loop sleeps between looks at the store (other
            engines may share it).
    """

    max_concurrent: int = 2
    runs_per_day: int | None = None
    cost_per_day_usd: float | None = None
    tokens_per_day: int | None = None
    backoff_seconds: float = 60.0
    max_backoff_seconds: float = 3600.0
    grace_seconds: float = 60.0
    max_sleep_seconds: float = 60.0
    # A run another engine (a service that died and did not come back) has shown running
    # for longer than this is taken as interrupted, so its routine is not blocked for ever.
    stale_run_seconds: float = 6 * 3600.0


_SETTING_NAMES = {"maxConcurrent": "max_concurrent", "runsPerDay": "runs_per_day",
                  "costPerDayUsd": "cost_per_day_usd", "tokensPerDay": "tokens_per_day"}


def limits_from_settings(block: object) -> tuple[SchedulingLimits, list[str]]:
    """Return the limits a settings block gives (`maxConcurrent`, `runsPerDay`,
    `costPerDayUsd`, `tokensPerDay`), and what in it was not understood (those keep their
    defaults)."""
    if not isinstance(block, dict):
        return SchedulingLimits(), ["must be an object; defaults apply"]
    values: dict[str, float | int] = {}
    problems: list[str] = []
    for key, value in block.items():
        name = _SETTING_NAMES.get(key)
        if name is None:
            problems.append(f"{key}: unknown key")
        elif isinstance(value, bool) or not isinstance(value, int | float) or value < 0 \
                or (name != "cost_per_day_usd" and (not isinstance(value, int) or value < 1)):
            problems.append(f"{key}: must be a number above 0")
        else:
            values[name] = value
    return replace(SchedulingLimits(), **values), problems  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineOptions:
    """How an engine runs.

    Args:
        holder: this engine's name in the run log (its runs left running at a crash are
            marked interrupted when an engine of the same name starts).
    """

    clock: Callable[[], float] = time.time
    limits: SchedulingLimits = field(default_factory=SchedulingLimits)
    holder: str = "aimon"
    on_run_end: RunListener | None = None
    # Tells why a due routine may not run ("": it may); such a routine is paused with that
    # note. The service's checks a file's routine against its file and its trust.
    vet: Callable[[Routine], str] | None = None


class SchedulingEngine:
    """Runs the routines of a store when they are due (see the module's doc)."""

    def __init__(self, routines: RoutineStore, runs: RunLog, runner: RoutineRunner, *,
                 options: EngineOptions | None = None) -> None:
        self.routines = routines
        self.log = runs
        self._runner = runner
        self.options = options or EngineOptions()
        self._running: dict[str, tuple[RoutineRun, asyncio.Task[RoutineRun]]] = {}
        self._wake = asyncio.Event()
        self._loop_task: asyncio.Task[None] | None = None
        self._closed = False
        self._scheduled = True  # until the first pass looked: some routine may be due

    # -- lifetime

    async def start(self) -> None:
        """Mark what this engine left running at a crash as interrupted; start the loop."""
        now = self._now()
        left = await asyncio.to_thread(self.log.interrupt_running, self.options.holder, now)
        if left:
            log.warning("%d routine run(s) were interrupted by the last stop", left)
        # Known before the service says it is ready: whether it must stay up for a routine
        # (a client that comes and goes at once must not find it busy for a first pass).
        self._scheduled = await asyncio.to_thread(self._any_scheduled)
        self._loop_task = asyncio.get_running_loop().create_task(self._loop(),
                                                                 name="scheduling engine")

    async def aclose(self) -> None:
        """Stop the loop and interrupt the runs (they are recorded as interrupted)."""
        self._closed = True
        if self._loop_task is not None:
            self._loop_task.cancel()
            await asyncio.gather(self._loop_task, return_exceptions=True)
        await self.interrupt_all()

    async def __aenter__(self) -> SchedulingEngine:
        await self.start()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    def _now(self) -> float:
        return self.options.clock()

    def wake(self) -> None:
        """Look at the routines again now (one was added, changed, or a run ended)."""
        self._wake.set()

    # -- what people and tools ask

    async def add(self, routine: Routine, *, replace_existing: bool = False) -> Routine:
        """Store a new routine, scheduled from now; raise RoutineError."""
        now = self._now()
        next_run = next_time(routine.trigger, now)
        if next_run is None:
            raise RoutineError(routine.name, "that time has passed")
        added = replace(routine, created=now, next_run=next_run, state=RoutineState.ACTIVE,
                        runs=0, failures=0, not_before=0.0, note="")
        await asyncio.to_thread(self.routines.put, added, replace_existing=replace_existing)
        self._scheduled = True
        self.wake()
        return added

    async def pause(self, name: str, note: str = "paused") -> Routine:
        """Pause a routine (a running run goes on); raise RoutineError if none."""
        return await self._set_state(name, RoutineState.PAUSED, note)

    async def resume(self, name: str) -> Routine:
        """Resume a paused routine from now (missed occurrences are not run)."""
        def change(stored: Routine) -> Routine | None:
            if stored.state is RoutineState.ACTIVE:
                return None
            now = self._now()
            next_run = next_time(stored.trigger, now)
            if next_run is None:
                return replace(stored, state=RoutineState.DONE, note="that time has passed")
            return replace(stored, state=RoutineState.ACTIVE, next_run=next_run, failures=0,
                           not_before=0.0, note="")

        return await self._change(name, change)

    async def _set_state(self, name: str, state: RoutineState, note: str) -> Routine:
        return await self._change(name, lambda stored: replace(stored, state=state, note=note)
                                  if stored.state is not state else None)

    async def _change(self, name: str, change: Callable[[Routine], Routine | None]
                      ) -> Routine:
        changed = await asyncio.to_thread(self.routines.change, name, change)
        found = changed or await asyncio.to_thread(self.routines.get, name)
        if found is None:
            raise UnknownRoutineError(name)
        self.wake()
        return found

    async def remove(self, name: str) -> bool:
        """Forget a routine and interrupt its run; False if there was none."""
        removed = await asyncio.to_thread(self.routines.remove, name)
        await self.interrupt(name)
        self.wake()
        return removed

    async def pause_all(self) -> tuple[str, ...]:
        """The kill switch: pause every active routine and interrupt every run."""
        paused = []
        for routine in await asyncio.to_thread(self.routines.all):
            if routine.state is RoutineState.ACTIVE:
                await self.pause(routine.name, "paused by the kill switch (pause --all)")
                paused.append(routine.name)
        await self.interrupt_all()
        return tuple(paused)

    async def interrupt(self, name: str) -> bool:
        """Interrupt the run of a routine; False if none runs here."""
        found = self._running.get(name)
        if found is None:
            return False
        found[1].cancel()
        await asyncio.gather(found[1], return_exceptions=True)
        return True

    async def interrupt_all(self) -> None:
        """Interrupt every run (each is recorded as interrupted)."""
        for name in list(self._running):
            await self.interrupt(name)

    def running(self) -> tuple[RoutineRun, ...]:
        """Return the runs going on in this engine."""
        return tuple(run for run, _ in self._running.values())

    def active(self) -> bool:
        """Tell whether any routine is scheduled or running (the service stays up for it)."""
        return bool(self._running) or self._scheduled

    async def run_now(self, name: str) -> asyncio.Task[RoutineRun]:
        """Start a run of `name` now, off its schedule; return its task."""
        if name in self._running:
            raise RoutineError(name, "the routine is running now")

        def change(stored: Routine) -> Routine | None:
            return replace(stored, runs=stored.runs + 1)

        routine = await asyncio.to_thread(self.routines.change, name, change)
        if routine is None:
            raise UnknownRoutineError(name)
        return self._start(routine, scheduled_for=None)

    # -- the schedule

    async def tick(self) -> tuple[asyncio.Task[RoutineRun], ...]:
        """Start the runs that are due now; return their tasks."""
        started = []
        now = self._now()
        for routine in await asyncio.to_thread(self.routines.all):
            if (routine.state is not RoutineState.ACTIVE or routine.next_run is None
                    or routine.next_run > now):
                continue
            if len(self._running) >= self.options.limits.max_concurrent:
                break  # the rest wait for a slot: the end of a run wakes the loop
            task = await self._occur(routine, now)
            if task is not None:
                started.append(task)
        return tuple(started)

    async def _occur(self, routine: Routine, now: float) -> asyncio.Task[RoutineRun] | None:
        """Claim the routine's due occurrence and run it, skip it, or end the routine."""
        due = routine.next_run
        assert due is not None
        limits = self.options.limits
        vet = self.options.vet
        why = await asyncio.to_thread(vet, routine) if vet is not None else ""
        if why:
            await asyncio.to_thread(self.routines.change, routine.name, lambda stored: replace(
                stored, state=RoutineState.PAUSED, note=why)
                if stored.state is RoutineState.ACTIVE else None)
            log.warning("routine %s: %s", routine.name, why)
            return None
        skip = await self._skip_reason(routine, now)
        decided: list[str] = []

        def claim(stored: Routine) -> Routine | None:
            if stored.state is not RoutineState.ACTIVE or stored.next_run != due:
                return None  # another engine claimed it, or a person changed it
            following = catch_up(stored.trigger, due, now)
            moved = replace(stored, next_run=following,
                            state=RoutineState.ACTIVE if following is not None
                            else RoutineState.DONE)
            cap = stored.limits.max_runs
            if cap is not None and stored.runs >= cap:
                decided.append("done")
                return replace(moved, state=RoutineState.DONE, next_run=None,
                               note=f"ran {stored.runs} time(s), its max-runs")
            if now < stored.not_before:
                decided.append("backoff")
                return moved
            if stored.skip_missed and now - due > limits.grace_seconds:
                decided.append("missed")
                return moved
            if skip:
                decided.append("skip")
                return moved
            decided.append("run")
            ran = replace(moved, runs=stored.runs + 1)
            if cap is not None and ran.runs >= cap:
                ran = replace(ran, state=RoutineState.DONE, next_run=None,
                              note=f"ran {ran.runs} time(s), its max-runs")
            return ran

        claimed = await asyncio.to_thread(self.routines.change, routine.name, claim)
        if claimed is None or not decided:
            return None
        match decided[0]:
            case "run":
                return self._start(claimed, scheduled_for=due)
            case "skip":
                await self._skipped(claimed, due, skip)
            case "missed":
                log.info("routine %s: skipped an occurrence missed while no service ran",
                         routine.name)
        return None

    async def _skip_reason(self, routine: Routine, now: float) -> str:
        """Return why a due occurrence may not run (a guard), or ""."""
        if routine.name in self._running:
            return "the previous run was still running"
        limits, own = self.options.limits, routine.limits
        day = await asyncio.to_thread(self.log.runs, None, since=now - DAY, limit=100_000)
        ran = [run for run in day if run.outcome is not RunOutcome.SKIPPED]
        mine = [run for run in ran if run.routine == routine.name]
        for run in mine:
            if run.outcome is not RunOutcome.RUNNING:
                continue
            if now - run.started < limits.stale_run_seconds:
                return "the previous run was still running (in another service)"
            await asyncio.to_thread(self.log.end, interrupted(
                replace(run, message=f"{run.holder} stopped while it ran"), now))
        tokens_mine = sum(run.input_tokens + run.output_tokens for run in mine)
        tokens_all = sum(run.input_tokens + run.output_tokens for run in ran)
        checks: tuple[tuple[float | None, float, str], ...] = (
            (own.runs_per_day, len(mine), "the routine ran {:.0f} time(s) in 24 hours, "
             "its runs-per-day"),
            (limits.runs_per_day, len(ran), "routines ran {:.0f} time(s) in 24 hours, the "
             "limit for all"),
            (own.cost_per_day_usd, sum(run.cost_usd for run in mine), "the routine spent "
             "${:.4f} in 24 hours, its cost-per-day"),
            (limits.cost_per_day_usd, sum(run.cost_usd for run in ran), "routines spent "
             "${:.4f} in 24 hours, the limit for all"),
            (own.tokens_per_day, tokens_mine, "the routine used {:,.0f} tokens in 24 hours, "
             "its tokens-per-day"),
            (limits.tokens_per_day, tokens_all, "routines used {:,.0f} tokens in 24 hours, "
             "the limit for all"),
        )
        for cap, used, text in checks:
            if cap is not None and used >= cap:
                return text.format(used)
        return ""

    async def _skipped(self, routine: Routine, due: float, reason: str) -> None:
        now = self._now()
        run = RoutineRun(id=_run_id(), routine=routine.name, started=now, scheduled_for=due,
                         finished=now, outcome=RunOutcome.SKIPPED, message=reason,
                         holder=self.options.holder)
        await asyncio.to_thread(self.log.begin, run)
        log.info("routine %s: skipped: %s", routine.name, reason)
        self._told(routine, run)

    def _start(self, routine: Routine, *, scheduled_for: float | None
               ) -> asyncio.Task[RoutineRun]:
        run = RoutineRun(id=_run_id(), routine=routine.name, started=self._now(),
                         scheduled_for=scheduled_for, holder=self.options.holder)
        task = asyncio.get_running_loop().create_task(self._run(routine, run),
                                                      name=f"routine {routine.name}")
        self._running[routine.name] = (run, task)
        return task

    async def _run(self, routine: Routine, run: RoutineRun) -> RoutineRun:
        await asyncio.to_thread(self.log.begin, run)

        def on_session(session_id: str) -> None:
            nonlocal run
            run = replace(run, session_id=session_id)
            self._running[routine.name] = (run, self._running[routine.name][1])
            self.log.end(run)  # quick: one row; the transcript is listed while it runs

        try:
            done = await self._runner(routine, run, on_session)
            run = replace(done, id=run.id, routine=run.routine, holder=run.holder,
                          session_id=done.session_id or run.session_id, finished=self._now())
        except asyncio.CancelledError:
            run = interrupted(replace(run, message="interrupted"), self._now())
            raise
        except Exception as exc:
            log.exception("routine %s: the run failed", routine.name)
            run = replace(run, finished=self._now(), outcome=RunOutcome.FAILED,
                          message=f"{type(exc).__name__}: {exc}")
        finally:
            # Plain calls, not threads: they must happen even when the run was cancelled,
            # and each is one short write.
            self._running.pop(routine.name, None)
            with contextlib.suppress(Exception):
                self.log.end(run)
            ended = self._after(routine.name, run) if not self._closed else routine
            self._told(ended or routine, run)
            self.wake()
        return run

    def _after(self, name: str, run: RoutineRun) -> Routine | None:
        """Count the run's failure (backoff, pause after too many) or reset the count."""
        limits = self.options.limits

        def change(stored: Routine) -> Routine | None:
            if run.outcome is RunOutcome.OK:
                return replace(stored, failures=0, not_before=0.0)
            if run.outcome is not RunOutcome.FAILED:
                return None
            failures = stored.failures + 1
            backoff = min(limits.backoff_seconds * 2 ** (failures - 1),
                          limits.max_backoff_seconds)
            changed = replace(stored, failures=failures, not_before=self._now() + backoff)
            if failures >= stored.limits.pause_after_failures \
                    and stored.state is RoutineState.ACTIVE:
                changed = replace(changed, state=RoutineState.PAUSED,
                                  note=f"paused after {failures} failed runs in a row")
            return changed

        try:
            return self.routines.change(name, change) or self.routines.get(name)
        except Exception:
            log.exception("routine %s: its state was not updated", name)
            return None

    def _told(self, routine: Routine, run: RoutineRun) -> None:
        listener = self.options.on_run_end
        if listener is not None:
            try:
                listener(routine, run)
            except Exception:
                log.exception("telling the end of a run of %s failed", routine.name)

    async def _loop(self) -> None:
        limits = self.options.limits
        while not self._closed:
            self._wake.clear()
            try:
                await self.tick()
                delay = await asyncio.to_thread(self._delay)
            except Exception:  # a store that failed once: try again later, never stop
                log.exception("the scheduling engine's pass failed")
                delay = limits.max_sleep_seconds
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    def _any_scheduled(self) -> bool:
        """Tell whether a routine is active with a next run (blocking)."""
        return any(routine.state is RoutineState.ACTIVE and routine.next_run is not None
                   for routine in self.routines.all())

    def _delay(self) -> float:
        """Return how long to sleep: until the next routine not running now is due."""
        now, longest = self._now(), self.options.limits.max_sleep_seconds
        soonest = [routine.next_run - now for routine in self.routines.all()
                   if routine.state is RoutineState.ACTIVE and routine.next_run is not None]
        self._scheduled = bool(soonest)
        if not soonest:
            return longest
        wait = min(soonest)
        if wait <= 0:  # due but waiting for a slot: the end of a run wakes the loop
            return longest if len(self._running) >= self.options.limits.max_concurrent \
                else 0.0
        return min(wait, longest)


def _run_id() -> str:
    """Return a run's id: an execution with no session of a person's has an ExecutionId."""
    from aimon_core.agent import new_execution_id

    return str(new_execution_id())
