"""`/schedule` in a session, answered by an engine through the service's `schedule/*` methods;
the desktop notification and the lines people read."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from aimon_core.command import CommandOutcome
from aimon_core.live import CommandRan, LiveSessionEvent
from aimon_core.llm import script
from aimon_core.runtime import RuntimeParts, build_runtime
from aimon_core.scheduling import (
    EngineOptions,
    Every,
    MemoryRoutineStore,
    MemoryRunLog,
    Routine,
    RoutineRun,
    RunOutcome,
    SchedulingEngine,
    list_lines,
    routine_report,
    runs_lines,
)
from aimon_core.scheduling._notify import desktop_command, run_line
from aimon_core.service._schedule import register_schedule_command
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore


async def _ok(routine: Routine, run: RoutineRun, on_session: object) -> RoutineRun:
    return replace(run, outcome=RunOutcome.OK, message="fine", cost_usd=0.5)


def test_schedule_command_adds_lists_runs_pauses_and_removes(tmp_path: Path) -> None:
    outcomes: list[CommandOutcome] = []

    async def main() -> SchedulingEngine:
        engine = SchedulingEngine(MemoryRoutineStore(), MemoryRunLog(), _ok,
                                  options=EngineOptions(clock=lambda: 1_000_000.0))
        async with build_runtime(tmp_path, parts=RuntimeParts(client=script())) as assembly:
            register_schedule_command(engine, assembly)
            store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
            async with await assembly.open_session(store) as live:
                def on_event(event: LiveSessionEvent) -> None:
                    if isinstance(event, CommandRan):
                        outcomes.append(event.outcome)

                live.subscribe(on_event)
                for text in ("/schedule add nightly --cron '0 3 * * *' --tz UTC review "
                             "yesterday's commits", "/schedule", "/schedule run nightly",
                             "/schedule add nightly --every 1h again",
                             "/schedule add other --every 1h --in 5m two triggers",
                             "/schedule pause nightly", "/schedule pause --all",
                             "/schedule resume nightly", "/schedule rm nightly",
                             "/schedule rm nightly", "/schedule frobnicate"):
                    await live.submit(text)
                    if text == "/schedule run nightly":
                        for _, task in list(engine._running.values()):
                            await task
                        await live.submit("/schedule runs nightly")
        return engine

    engine = asyncio.run(main())
    texts = [(o.is_error, o.text) for o in outcomes]
    assert texts[0] == (False, "Added nightly: cron '0 3 * * *' (UTC); next run "
                        + texts[0][1].split("next run ")[1])
    assert texts[1][1].startswith("nightly  [active]  cron '0 3 * * *' (UTC)")
    assert texts[1][1].splitlines()[2] == "    review yesterday's commits"
    assert texts[2][1].startswith("Started a run of nightly")
    assert "ok" in texts[3][1] and "fine" in texts[3][1]
    assert texts[4] == (True, "a routine has this name already: 'nightly'")
    assert texts[5][0] and "give one of --cron, --every, --at, --in" in texts[5][1]
    assert texts[6] == (False, "nightly: paused.")
    assert texts[7] == (False, "Paused 0 routine(s) and stopped their runs.")
    assert texts[8] == (False, "nightly: resumed.")
    assert texts[9] == (False, "nightly: removed.")
    assert texts[10] == (True, "no such routine: 'nightly'")
    assert texts[11][0] and texts[11][1].startswith("usage: /schedule")
    assert engine.routines.all() == ()


def test_report_and_lines() -> None:
    routine = Routine(name="r", trigger=Every(seconds=3600), prompt="look\nat it", project="/p",
                      next_run=1_000_000.0)
    runs = [RoutineRun(id="2", routine="r", started=900.0, outcome=RunOutcome.SKIPPED,
                       message="the previous run was still running"),
            RoutineRun(id="1", routine="r", started=800.0, finished=850.0,
                       outcome=RunOutcome.FAILED, session_id="s-1", cost_usd=0.25,
                       input_tokens=1000, output_tokens=200, message="model error")]
    report = routine_report(routine, runs)
    assert report["last_run"]["id"] == "1"
    assert report["totals"] == {"runs": 1, "failed": 1, "cost_usd": 0.25, "tokens": 1200}
    lines = list_lines([report], now=1_000_000.0)
    assert lines[0] == "r  [active]  every 1h"
    assert "runs 1 (failed 1)   $0.2500   1,200 tokens" in lines[1]
    assert lines[2] == "    look at it"
    run_text = runs_lines([report["last_run"]], now=1_000_000.0)
    assert "failed" in run_text[0] and "s-1" in run_text[0] and run_text[1] == "    model error"
    assert list_lines([]) [0].startswith("No routines")
    assert runs_lines([]) == ["No runs yet."]
    assert run_line(routine, runs[1]) == "routine r: failed ($0.2500): model error"


def test_desktop_notification_only_where_a_desktop_is(tmp_path: Path) -> None:
    program = tmp_path / "notify-send"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    assert desktop_command("t", "b", {"PATH": str(tmp_path)}) is None  # no desktop session
    assert desktop_command("t", "b", {"PATH": "/nonexistent", "DISPLAY": ":0"}) is None
    assert desktop_command("t", "b", {"PATH": str(tmp_path), "DISPLAY": ":0"}) == [
        str(program), "--app-name=aimon", "--", "t", "b"]
