"""The scheduling engine with a clock the tests set: nothing here waits for time to pass."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from aimon_core.scheduling import (
    EngineOptions,
    Every,
    MemoryRoutineStore,
    MemoryRunLog,
    Once,
    Routine,
    RoutineError,
    RoutineLimits,
    RoutineRun,
    RoutineState,
    RunOutcome,
    SchedulingEngine,
    SchedulingLimits,
    SQLiteRoutineStore,
    SQLiteRunLog,
    cron,
)


class Clock:
    """Seconds since the epoch, moved by the test."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Runner:
    """Carries out runs as told: each returns the next scripted result, or waits for a gate."""

    def __init__(self, *results: dict[str, Any]) -> None:
        self.results = list(results)
        self.calls: list[tuple[str, str | None]] = []
        self.gate: asyncio.Event | None = None
        self.started = asyncio.Event()

    async def __call__(self, routine: Routine, run: RoutineRun,
                       on_session: Callable[[str], None]) -> RoutineRun:
        self.calls.append((routine.name, routine.prompt))
        on_session(f"session-{len(self.calls)}")
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.results:
            return replace(run, **self.results.pop(0))
        return replace(run, outcome=RunOutcome.OK, message="done", cost_usd=0.01)


def _done(**fields: Any) -> dict[str, Any]:
    """Return what a scripted run ends with (fields of its RoutineRun)."""
    return fields


def _engine(runner: Runner, clock: Clock, *, limits: SchedulingLimits | None = None,
            stores: tuple[object, object] | None = None, holder: str = "here",
            ended: list[RoutineRun] | None = None) -> SchedulingEngine:
    routines, runs = stores or (MemoryRoutineStore(), MemoryRunLog())
    return SchedulingEngine(
        routines, runs, runner,  # type: ignore[arg-type]
        options=EngineOptions(clock=clock, limits=limits or SchedulingLimits(), holder=holder,
                              on_run_end=(lambda _, run: ended.append(run))
                              if ended is not None else None))


def _routine(name: str = "check", seconds: float = 60.0, **limits: object) -> Routine:
    return Routine(name=name, trigger=Every(seconds=seconds), prompt=f"{name} the build",
                   project="/tmp/p", limits=RoutineLimits(**limits))  # type: ignore[arg-type]


async def _tick(engine: SchedulingEngine) -> list[RoutineRun]:
    return [await task for task in await engine.tick()]


async def test_an_interval_routine_runs_when_due_and_not_before() -> None:
    clock, runner, ended = Clock(), Runner(), []
    engine = _engine(runner, clock, ended=ended)
    added = await engine.add(_routine())
    assert added.next_run == clock.now + 60 and added.state is RoutineState.ACTIVE
    clock.now += 59
    assert await engine.tick() == ()
    clock.now += 1
    [run] = await _tick(engine)
    assert run.outcome is RunOutcome.OK and run.session_id == "session-1"
    assert run.scheduled_for == added.next_run and run.message == "done"
    stored = engine.routines.get("check")
    assert stored is not None and stored.next_run == added.next_run + 60 and stored.runs == 1
    assert [r.id for r in engine.log.runs("check")] == [run.id]
    assert ended == [run]


async def test_max_runs_ends_the_routine() -> None:
    clock, runner = Clock(), Runner()
    engine = _engine(runner, clock)
    await engine.add(_routine(max_runs=2))
    for _ in range(4):
        clock.now += 60
        await _tick(engine)
    assert len(runner.calls) == 2
    stored = engine.routines.get("check")
    assert stored is not None and stored.state is RoutineState.DONE
    assert "max-runs" in stored.note and stored.next_run is None


async def test_a_one_shot_runs_once() -> None:
    clock, runner = Clock(), Runner()
    engine = _engine(runner, clock)
    await engine.add(replace(_routine(), trigger=Once(at=clock.now + 1200)))
    clock.now += 1200
    await _tick(engine)
    clock.now += 3600
    await _tick(engine)
    assert len(runner.calls) == 1
    stored = engine.routines.get("check")
    assert stored is not None and stored.state is RoutineState.DONE
    with pytest.raises(RoutineError, match="passed"):
        await engine.add(replace(_routine("late"), trigger=Once(at=clock.now - 1)))


@pytest.mark.parametrize("skip_missed", [False, True])
async def test_occurrences_missed_while_down_run_once_or_are_skipped(skip_missed: bool) -> None:
    clock, runner = Clock(), Runner()
    stores = (MemoryRoutineStore(), MemoryRunLog())
    first = _engine(runner, clock, stores=stores)
    added = await first.add(replace(_routine(), skip_missed=skip_missed))
    assert added.next_run is not None
    clock.now += 60 * 10 + 30  # ten occurrences pass with no engine running
    again = _engine(runner, clock, stores=stores)
    await _tick(again)
    assert len(runner.calls) == (0 if skip_missed else 1)
    stored = again.routines.get("check")
    assert stored is not None and stored.next_run == added.next_run + 60 * 10  # in rhythm
    await _tick(again)
    assert len(runner.calls) == (0 if skip_missed else 1)


async def test_cron_routine_after_downtime_runs_once_then_keeps_its_times() -> None:
    clock, runner = Clock(1_800_000_000.0), Runner()  # 2027-01-15T08:00:00Z
    engine = _engine(runner, clock)
    await engine.add(replace(_routine(), trigger=cron("0 9 * * *", "UTC")))
    clock.now += 3 * 86400  # three mornings pass
    await _tick(engine)
    assert len(runner.calls) == 1
    stored = engine.routines.get("check")
    assert stored is not None and stored.next_run == 1_800_000_000.0 + 3600 + 3 * 86400


async def test_runs_of_one_routine_never_overlap() -> None:
    clock, runner = Clock(), Runner()
    runner.gate = asyncio.Event()
    engine = _engine(runner, clock)
    await engine.add(_routine())
    clock.now += 60
    [task] = await engine.tick()
    await runner.started.wait()
    clock.now += 60
    assert await engine.tick() == ()
    [skipped, running] = engine.log.runs("check")
    assert skipped.outcome is RunOutcome.SKIPPED and "still running" in skipped.message
    assert running.outcome is RunOutcome.RUNNING and running.session_id == "session-1"
    runner.gate.set()
    assert (await task).outcome is RunOutcome.OK
    with pytest.raises(RoutineError, match="no such"):
        await engine.run_now("nothing")


async def test_concurrent_runs_wait_for_a_free_slot() -> None:
    clock, runner = Clock(), Runner()
    runner.gate = asyncio.Event()
    engine = _engine(runner, clock, limits=SchedulingLimits(max_concurrent=1))
    await engine.add(_routine("a"))
    await engine.add(_routine("b"))
    clock.now += 60
    [task] = await engine.tick()
    assert await engine.tick() == ()  # b waits, still due
    b = engine.routines.get("b")
    assert b is not None and b.next_run == clock.now
    runner.gate.set()
    await task
    [later] = await _tick(engine)
    assert later.routine == "b" and later.outcome is RunOutcome.OK


async def test_runs_per_day_and_cost_per_day_skip_occurrences() -> None:
    clock, runner = Clock(), Runner(*[_done(outcome=RunOutcome.OK, cost_usd=1.0)] * 9)
    # One run at a time, so each run's cost is known before the next one is checked.
    engine = _engine(runner, clock, limits=SchedulingLimits(cost_per_day_usd=2.5,
                                                             max_concurrent=1))
    await engine.add(_routine("a", 3600, runs_per_day=2))
    await engine.add(_routine("b", 3600))
    outcomes = []
    for _ in range(3):
        clock.now += 3600
        await _tick(engine)
        await _tick(engine)
        outcomes.append(sorted((r.routine, r.outcome.value) for r in engine.log.runs(
            since=clock.now)))
    assert outcomes[0] == [("a", "ok"), ("b", "ok")]
    assert outcomes[1] == [("a", "ok"), ("b", "skipped")]  # 3 dollars spent after a's run
    assert outcomes[2] == [("a", "skipped"), ("b", "skipped")]
    messages = {r.message for r in engine.log.runs() if r.outcome is RunOutcome.SKIPPED}
    assert any("its runs-per-day" in m for m in messages)
    assert any("the limit for all" in m for m in messages)
    clock.now += 86400  # a day later the quotas are free again
    assert len(await _tick(engine)) == 1


async def test_failures_back_off_then_pause_the_routine() -> None:
    failed = _done(outcome=RunOutcome.FAILED, message="model error")
    clock, runner = Clock(), Runner(failed, failed, failed)
    engine = _engine(runner, clock, limits=SchedulingLimits(backoff_seconds=100))
    await engine.add(_routine(pause_after_failures=3))
    clock.now += 60
    await _tick(engine)  # failure 1: backoff 100 s
    clock.now += 60
    assert await engine.tick() == ()  # inside the backoff: skipped quietly
    clock.now += 60
    await _tick(engine)  # failure 2: backoff 200 s
    stored = engine.routines.get("check")
    assert stored is not None and stored.failures == 2 and stored.not_before == clock.now + 200
    clock.now += 240
    await _tick(engine)  # failure 3: paused
    stored = engine.routines.get("check")
    assert stored is not None and stored.state is RoutineState.PAUSED
    assert "3 failed runs in a row" in stored.note
    assert len(runner.calls) == 3
    clock.now += 3600
    assert await engine.tick() == ()
    resumed = await engine.resume("check")
    assert resumed.failures == 0 and resumed.next_run == clock.now + 60


async def test_a_success_resets_the_failure_count() -> None:
    clock = Clock()
    runner = Runner(_done(outcome=RunOutcome.FAILED), _done(outcome=RunOutcome.OK))
    engine = _engine(runner, clock, limits=SchedulingLimits(backoff_seconds=10))
    await engine.add(_routine())
    for _ in range(2):
        clock.now += 60
        await _tick(engine)
    stored = engine.routines.get("check")
    assert stored is not None and stored.failures == 0 and stored.not_before == 0


async def test_the_kill_switch_pauses_all_and_interrupts_runs() -> None:
    clock, runner, ended = Clock(), Runner(), []
    runner.gate = asyncio.Event()
    engine = _engine(runner, clock, ended=ended)
    await engine.add(_routine("a"))
    await engine.add(_routine("b", 3600))
    clock.now += 60
    [task] = await engine.tick()
    await runner.started.wait()
    assert await engine.pause_all() == ("a", "b")
    assert task.cancelled()
    [run] = engine.log.runs("a")
    assert run.outcome is RunOutcome.INTERRUPTED and ended == [run]
    clock.now += 7200
    assert await engine.tick() == ()
    states = {r.name: (r.state, r.note) for r in engine.routines.all()}
    assert all(state is RoutineState.PAUSED and "kill switch" in note
               for state, note in states.values())


async def test_run_now_runs_off_schedule_and_refuses_an_overlap() -> None:
    clock, runner = Clock(), Runner()
    runner.gate = asyncio.Event()
    engine = _engine(runner, clock)
    added = await engine.add(_routine())
    task = await engine.run_now("check")
    await runner.started.wait()
    with pytest.raises(RoutineError, match="running now"):
        await engine.run_now("check")
    runner.gate.set()
    run = await task
    assert run.scheduled_for is None and run.outcome is RunOutcome.OK
    stored = engine.routines.get("check")
    assert stored is not None and stored.next_run == added.next_run and stored.runs == 1


async def test_a_runner_that_raises_fails_the_run() -> None:
    clock = Clock()

    async def broken(routine: Routine, run: RoutineRun, on_session: object) -> RoutineRun:
        raise OSError("disk full")

    engine = SchedulingEngine(MemoryRoutineStore(), MemoryRunLog(), broken,
                              options=EngineOptions(clock=clock))
    await engine.add(_routine())
    clock.now += 60
    [run] = await _tick(engine)
    assert run.outcome is RunOutcome.FAILED and "disk full" in run.message


async def test_a_restart_marks_runs_left_running_as_interrupted() -> None:
    clock, runner = Clock(), Runner()
    runner.gate = asyncio.Event()
    stores = (MemoryRoutineStore(), MemoryRunLog())
    first = _engine(runner, clock, stores=stores)
    await first.add(_routine())
    clock.now += 60
    await first.tick()
    await runner.started.wait()
    # The service dies: its run stays "running" in the log until the next start.
    async with _engine(Runner(), clock, stores=stores) as again:
        [run] = again.log.runs("check")
        assert run.outcome is RunOutcome.INTERRUPTED and run.session_id == "session-1"
    runner.gate.set()


async def twenty_occurrences_on_two_engines(stores: Callable[[], tuple[object, object]]
                                            ) -> None:
    """Two engines, each on its own connection to one database, tick together 20 times:
    each occurrence runs once."""
    clock, runner = Clock(), Runner()
    engines = [_engine(runner, clock, holder=f"node{n}", stores=stores()) for n in range(2)]
    await engines[0].add(_routine("shared", 60))
    for _ in range(20):
        clock.now += 60
        ticks = await asyncio.gather(*(engine.tick() for engine in engines))
        for tasks in ticks:
            for task in tasks:
                await task
    runs = engines[1].log.runs("shared")
    assert len(runs) == 20 and len(runner.calls) == 20
    assert len({run.scheduled_for for run in runs}) == 20
    assert all(run.outcome is RunOutcome.OK for run in runs)


async def test_two_engines_on_one_database_run_each_occurrence_once() -> None:
    database = Path(tempfile.mkdtemp(prefix="aimon-cluster-")) / "service.sqlite3"
    await twenty_occurrences_on_two_engines(
        lambda: (SQLiteRoutineStore(database), SQLiteRunLog(database)))


def test_limits_for_all_routines_come_from_the_user_settings(tmp_path: Path) -> None:
    import json

    from aimon_core.scheduling import limits_from_settings
    from aimon_core.service import service_settings

    limits, problems = limits_from_settings({"maxConcurrent": 1, "runsPerDay": 48,
                                             "costPerDayUsd": 2.5})
    assert (limits.max_concurrent, limits.runs_per_day, limits.cost_per_day_usd) == (1, 48, 2.5)
    assert problems == []
    limits, problems = limits_from_settings({"maxConcurrent": 0, "runsPerDay": 1.5,
                                             "costPerDayUsd": True, "often": 3})
    assert limits == SchedulingLimits()
    assert problems == ["maxConcurrent: must be a number above 0",
                        "runsPerDay: must be a number above 0",
                        "costPerDayUsd: must be a number above 0", "often: unknown key"]
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"service": {"idleMinutes": 5,
                                            "routines": {"costPerDayUsd": 3}}}))
    settings, problems = service_settings(path)
    assert settings.idle_seconds == 300 and settings.routines.cost_per_day_usd == 3
    assert problems == []
    assert settings.routines_store == ""
    path.write_text(json.dumps({"service": {"routines": {"store": "postgresql://db/a"}}}))
    assert service_settings(path)[0].routines_store == "postgresql://db/a"
    path.write_text(json.dumps({"service": {"routines": {"store": 5}}}))
    settings, problems = service_settings(path)
    assert settings.routines_store == "" and "store: must be a PostgreSQL" in problems[0]


async def test_a_run_left_running_by_another_engine_blocks_until_it_is_stale() -> None:
    clock, runner = Clock(), Runner()
    stores = (MemoryRoutineStore(), MemoryRunLog())
    engine = _engine(runner, clock, stores=stores, holder="here",
                     limits=SchedulingLimits(stale_run_seconds=3600))
    await engine.add(_routine())
    # Another service started a run and died, and never came back to mark it.
    stores[1].begin(RoutineRun(id="theirs", routine="check", started=clock.now, holder="gone"))
    clock.now += 60
    assert await engine.tick() == ()
    [skipped, _] = engine.log.runs("check")
    assert skipped.outcome is RunOutcome.SKIPPED and "in another service" in skipped.message
    clock.now += 3600
    [run] = await _tick(engine)
    assert run.outcome is RunOutcome.OK
    theirs = next(r for r in engine.log.runs("check") if r.id == "theirs")
    assert theirs.outcome is RunOutcome.INTERRUPTED
    assert theirs.message == "gone stopped while it ran"


async def test_tokens_per_day_per_routine_and_for_all() -> None:
    used = _done(outcome=RunOutcome.OK, input_tokens=600, output_tokens=400)
    clock, runner = Clock(), Runner(*[used] * 9)
    engine = _engine(runner, clock, limits=SchedulingLimits(tokens_per_day=2500,
                                                             max_concurrent=1))
    await engine.add(_routine("a", 3600, tokens_per_day=1000))
    await engine.add(_routine("b", 3600))
    outcomes = []
    for _ in range(2):
        clock.now += 3600
        await _tick(engine)
        await _tick(engine)
        outcomes.append(sorted((r.routine, r.outcome.value, r.message)
                               for r in engine.log.runs(since=clock.now)))
    assert [(name, outcome) for name, outcome, _ in outcomes[0]] == [("a", "ok"), ("b", "ok")]
    assert outcomes[1][0] == ("a", "skipped", "the routine used 1,000 tokens in 24 hours, "
                              "its tokens-per-day")
    assert outcomes[1][1][:2] == ("b", "ok")  # 2,000 of all routines' 2,500
    clock.now += 3600
    await _tick(engine)
    await _tick(engine)
    assert [(r.routine, r.message) for r in engine.log.runs(since=clock.now)][-1] == (
        "b", "routines used 3,000 tokens in 24 hours, the limit for all")
