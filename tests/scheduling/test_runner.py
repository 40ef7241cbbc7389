"""Routines run as sessions of an application: a scripted model, print mode's permissions."""

from __future__ import annotations

import asyncio
from pathlib import Path

from aimon_core.hook import HookEvent, HookInput, HookResult, NotificationInput
from aimon_core.llm import ScriptedLLMClient, Usage, reply, script
from aimon_core.runtime import Application, RuntimeFlags, RuntimeParts
from aimon_core.scheduling import (
    EngineOptions,
    Every,
    MemoryRoutineStore,
    MemoryRunLog,
    Routine,
    RoutineLimits,
    RoutineRun,
    RunOutcome,
    SchedulingEngine,
    SessionRoutineRunner,
)
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def _runs(project: Path, client: ScriptedLLMClient, routine: Routine, count: int = 1,
                *, model: str | None = None) -> tuple[list[RoutineRun], Application,
                                                       list[NotificationInput]]:
    app = Application(SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore()))
    registry = app.runtimes(project, RuntimeFlags(agent=routine.agent),
                            parts=RuntimeParts(client=client, model=model))
    told: list[NotificationInput] = []

    async def on_notification(event: HookInput) -> HookResult:
        assert isinstance(event.data, NotificationInput)
        told.append(event.data)
        return HookResult()

    (await registry.get()).hooks.register(HookEvent.NOTIFICATION, on_notification,
                                          matcher="routine_*")
    clock = Clock()
    engine = SchedulingEngine(MemoryRoutineStore(), MemoryRunLog(), SessionRoutineRunner(app),
                              options=EngineOptions(clock=clock))
    await engine.add(routine)
    runs = []
    for _ in range(count):
        clock.now += 60
        runs.extend([await task for task in await engine.tick()])
    return runs, app, told


def _routine(project: Path, **changes: object) -> Routine:
    return Routine(name="check", trigger=Every(seconds=60), prompt="check the build",
                   project=str(project), **changes)  # type: ignore[arg-type]


def test_each_run_is_a_new_session_with_its_transcript(tmp_path: Path) -> None:
    client = script(reply("the build is green"), reply("still green"))

    async def main() -> None:
        runs, app, told = await _runs(tmp_path, client, _routine(tmp_path), count=2)
        assert [run.outcome for run in runs] == [RunOutcome.OK, RunOutcome.OK]
        assert runs[0].message == "the build is green"
        assert runs[0].session_id != runs[1].session_id
        record = app.store.records.load(runs[0].session_id)  # type: ignore[arg-type]
        texts = [message.content[0].text for message in record.transcript.messages]
        assert texts == ["check the build", "the build is green"]
        assert runs[0].input_tokens == 10 and runs[0].output_tokens == 5
        assert [(n.notification_type, n.message) for n in told] == [
            ("routine_finished", "routine check: ok: the build is green"),
            ("routine_finished", "routine check: ok: still green")]
        await app.aclose()

    asyncio.run(main())


def test_runs_appended_to_a_named_session(tmp_path: Path) -> None:
    client = script(reply("first"), reply("second"), reply("third"))

    async def main() -> None:
        app = Application(SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore()))
        registry = app.runtimes(tmp_path, RuntimeFlags(), parts=RuntimeParts(client=client))
        async with await (await registry.get()).open_session(app.store) as live:
            await live.submit("hello")
            session_id = str(live.id)
        runner = SessionRoutineRunner(app)
        routine = _routine(tmp_path, session=session_id)
        for _ in range(2):
            run = RoutineRun(id="r", routine="check", started=0.0)
            done = await runner(routine, run, lambda _: None)
            assert done.outcome is RunOutcome.OK and done.session_id == session_id
        record = app.store.records.load(live.id)
        assert [m.content[0].text for m in record.transcript.messages] == [
            "hello", "first", "check the build", "second", "check the build", "third"]
        await app.aclose()

    asyncio.run(main())


def test_what_would_ask_is_refused_and_reported(tmp_path: Path) -> None:
    client = script(reply("", ("Bash", {"command": "touch made-by-routine"})),
                    reply("could not make it"))

    async def main() -> None:
        runs, app, _ = await _runs(tmp_path, client, _routine(tmp_path))
        [run] = runs
        assert run.outcome is RunOutcome.OK and run.refusals == 1
        assert "1 tool call(s) refused" in run.message
        await app.aclose()

    asyncio.run(main())
    assert not (tmp_path / "made-by-routine").exists()


def test_a_run_over_its_max_cost_is_stopped(tmp_path: Path) -> None:
    costly = Usage(input_tokens=1_000_000, output_tokens=10)
    client = script(reply("", ("Read", {"file_path": str(tmp_path / "x")}), usage=costly),
                    reply("never reached", usage=costly))

    async def main() -> None:
        routine = _routine(tmp_path, limits=RoutineLimits(max_cost_usd=1.0))
        runs, app, told = await _runs(tmp_path, client, routine, model="claude-sonnet-4-5")
        [run] = runs
        assert run.outcome is RunOutcome.FAILED, run
        assert "over its max-cost $1.0000" in run.message and run.cost_usd > 1.0
        assert [n.notification_type for n in told] == ["routine_failed"]
        await app.aclose()

    asyncio.run(main())


def test_a_setup_error_fails_the_run(tmp_path: Path) -> None:
    async def main() -> None:
        app = Application(SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore()))
        runner = SessionRoutineRunner(app)
        routine = _routine(tmp_path, session="not-a-session-id")
        done = await runner(routine, RoutineRun(id="r", routine="check", started=0.0),
                            lambda _: None)
        assert done.outcome is RunOutcome.FAILED and done.message.startswith("not started")
        await app.aclose()

    asyncio.run(main())
