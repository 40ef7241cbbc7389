"""The model's scheduling tools: schedule_task asks first (showing the trigger and the
prompt), a refusal schedules nothing, nobody to ask means refused, and a routine's own run
cannot schedule routines."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aimon_core.agent import ApprovalAnswer, ApprovalRefused, ApprovalRequested
from aimon_core.live import LiveSessionEvent
from aimon_core.llm import ScriptedLLMClient, ToolResultBlock, reply, script
from aimon_core.runtime import Application, RuntimeFlags, RuntimeParts, build_runtime
from aimon_core.scheduling import (
    EngineOptions,
    Every,
    MemoryRoutineStore,
    MemoryRunLog,
    Routine,
    SchedulingEngine,
    SessionRoutineRunner,
    schedule_tools,
)
from aimon_core.service._schedule import call_schedule
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore

NOW = 1_000_000.0
SCHEDULE = ("schedule_task", {"name": "build", "every": "1h", "prompt": "check the build"})


def _engine() -> SchedulingEngine:
    async def never(*_: object) -> Any:
        raise AssertionError("no run in this test")

    return SchedulingEngine(MemoryRoutineStore(), MemoryRunLog(), never,
                            options=EngineOptions(clock=lambda: NOW))


def _tools(engine: SchedulingEngine) -> RuntimeParts:
    async def call(method: str, params: Mapping[str, Any]) -> Any:
        return await call_schedule(engine, method, params)

    return RuntimeParts(tools=schedule_tools(call))


def _results(client: ScriptedLLMClient) -> list[str]:
    return [block.text for message in client.requests[-1].messages
            for block in message.content if isinstance(block, ToolResultBlock)]


def _store() -> SessionStore:
    return SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())


def _session(tmp_path: Path, client: ScriptedLLMClient, engine: SchedulingEngine,
             answer: ApprovalAnswer | None) -> list[LiveSessionEvent]:
    seen: list[LiveSessionEvent] = []
    parts = _tools(engine)

    async def main() -> None:
        async with build_runtime(tmp_path, parts=RuntimeParts(
                client=client, tools=parts.tools)) as assembly:
            live = await assembly.open_session(_store())

            def on_event(event: LiveSessionEvent) -> None:
                seen.append(event)
                if isinstance(event, ApprovalRequested) and answer is not None:
                    live.answer(event.request.id, answer)

            async with live:
                live.subscribe(on_event, answers=answer is not None)
                await live.submit("check the build every hour")

    asyncio.run(main())
    return seen


def test_schedule_task_asks_with_the_trigger_and_prompt_then_schedules(tmp_path: Path) -> None:
    engine = _engine()
    client = script(reply("", SCHEDULE), reply("", ("list_scheduled_tasks", {})),
                    reply("scheduled"))
    seen = _session(tmp_path, client, engine, ApprovalAnswer(allowed=True))
    [asked] = [event for event in seen if isinstance(event, ApprovalRequested)]
    assert asked.request.tool_name == "schedule_task"
    assert asked.request.label == "schedule_task(build, every 1h: check the build)"
    [routine] = engine.routines.all()
    assert (routine.name, routine.trigger, routine.prompt) == ("build", Every(seconds=3600),
                                                             "check the build")
    assert routine.project == str(tmp_path.resolve())
    listed = _results(client)[-1]  # read-only: nobody was asked again
    assert listed.startswith("build  [active]  every 1h")


def test_a_refusal_schedules_nothing(tmp_path: Path) -> None:
    engine = _engine()
    client = script(reply("", SCHEDULE), reply("ok, not scheduled"))
    _session(tmp_path, client, engine, ApprovalAnswer(allowed=False))
    assert engine.routines.all() == ()


def test_with_nobody_to_ask_it_is_refused(tmp_path: Path) -> None:
    engine = _engine()
    client = script(reply("", SCHEDULE), reply("could not"))
    seen = _session(tmp_path, client, engine, None)
    assert any(isinstance(event, ApprovalRefused) and event.tool_name == "schedule_task"
               for event in seen)
    assert engine.routines.all() == ()


def test_cancel_asks_and_removes(tmp_path: Path) -> None:
    engine = _engine()
    asyncio.run(engine.add(Routine(name="build", trigger=Every(seconds=60), prompt="p",
                                   project=str(tmp_path))))
    client = script(reply("", ("cancel_scheduled_task", {"name": "build"})),
                    reply("", ("cancel_scheduled_task", {"name": "build"})), reply("done"))
    seen = _session(tmp_path, client, engine, ApprovalAnswer(allowed=True))
    assert sum(isinstance(event, ApprovalRequested) for event in seen) == 2
    assert engine.routines.all() == ()
    second = _results(client)[-1]
    assert second == "not cancelled: no such routine: 'build'"


def test_a_routine_run_cannot_schedule_routines(tmp_path: Path) -> None:
    """A run whose rules allow schedule_task is still refused by the service."""
    (tmp_path / ".aimon").mkdir()
    (tmp_path / ".aimon" / "settings.json").write_text(
        '{"permissions": {"allow": ["schedule_task"]}}')
    client = script(reply("", SCHEDULE), reply("tried"))

    async def main() -> tuple[SchedulingEngine, str]:
        app = Application(_store())
        engines: list[SchedulingEngine] = []

        async def call(method: str, params: Mapping[str, Any]) -> Any:
            return await call_schedule(engines[0], method, params)

        parts = RuntimeParts(client=client, tools=schedule_tools(call), trust_all=True)
        app.runtimes(tmp_path, RuntimeFlags(), parts=parts)
        clock = [NOW]
        engine = SchedulingEngine(MemoryRoutineStore(), MemoryRunLog(),
                                  SessionRoutineRunner(app, parts=parts),
                                  options=EngineOptions(clock=lambda: clock[0]))
        engines.append(engine)
        await engine.add(Routine(name="spawner", trigger=Every(seconds=60),
                                 prompt="schedule more", project=str(tmp_path)))
        clock[0] += 60
        [task] = await engine.tick()
        run = await task
        await app.aclose()
        return engine, run.message

    engine, message = asyncio.run(main())
    assert [r.name for r in engine.routines.all()] == ["spawner"]
    result = _results(client)[-1]
    assert result == "not scheduled: a routine's run cannot schedule or cancel routines"
    assert message == "tried"


def test_the_tools_traits_and_schemas() -> None:
    tools = {tool.name: tool for tool in _tools(_engine()).tools}
    assert list(tools) == ["schedule_task", "list_scheduled_tasks", "cancel_scheduled_task"]
    assert [tool.read_only for tool in tools.values()] == [False, True, False]
    for tool in tools.values():
        assert tool.input_schema["additionalProperties"] is False
    schedule = tools["schedule_task"].input_schema
    assert schedule["required"] == ["name", "prompt"]
    assert set(schedule["properties"]) == {"name", "prompt", "cron", "every", "at", "after",
                                           "timezone", "max_runs"}
