"""A hard cap in the REPL: the turn stops before the model call that would pass it, says which
cap and how to raise it, and the session goes on well formed."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from aimon_core.agent import repair_tool_pairs
from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall, StallStream

from .conftest import MODEL, Spawn, expect_text, leave, stored, wait_prompt

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")


def test_the_daily_cap_stops_a_turn_in_the_repl(spawn: Spawn, server: LoopbackModelServer,
                                                home: Path) -> None:
    settings = home / "config" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"prices": {MODEL: {"input": 0, "output": 100}},
                                    "budget": {"dailyUsd": 0.25}}))
    server.add(*(Reply(text=f"step {n}", output_tokens=1000, tool_calls=(
        ScriptedToolCall(name="Glob", input={"pattern": f"*.{n}"}),)) for n in (1, 2)))
    child = spawn()
    child.send("go\r")
    expect_text(child, "daily cap of $0.25 (budget.dailyUsd)")
    expect_text(child, "raise budget.dailyUsd")
    wait_prompt(child)
    child.send("/cost\r")
    expect_text(child, "Today: $0.2000 of $0.2500 (budget.dailyUsd)")
    wait_prompt(child)
    session_id = leave(child)
    assert len(server.requests) == 2
    messages = stored(home, session_id).transcript.messages
    assert repair_tool_pairs(messages) == messages


def test_the_status_footer_shows_model_mode_context_and_cost(
        spawn: Spawn, server: LoopbackModelServer, home: Path) -> None:
    server.add(Reply(text="hello there", output_tokens=1000))
    child = spawn()
    expect_text(child, f"{MODEL} · default mode · context ")
    child.expect_exact("$0.0000")
    child.send("hi\r")
    expect_text(child, "hello there")
    # The session's cost, live: gpt-5.4 output is $15 a million tokens (aimon's table).
    expect_text(child, f"{MODEL} · default mode · context ")
    child.expect_exact("$0.0150")
    leave(child)


def test_the_status_footer_hides_when_the_settings_say_so(
        spawn: Spawn, server: LoopbackModelServer, home: Path) -> None:
    settings = home / "config" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"footer": False}))
    server.add(Reply(text="hello there"))
    child = spawn(first=None)
    screen = io.StringIO()
    child.logfile_read = screen
    wait_prompt(child)
    child.send("hi\r")
    expect_text(child, "hello there")
    wait_prompt(child)
    child.send("/cost\r")
    expect_text(child, "All sessions: aimon usage")
    wait_prompt(child)
    leave(child)
    assert "All sessions: aimon usage" in screen.getvalue()
    assert "default mode" not in screen.getvalue()


def test_the_footer_counts_the_running_turns_cost(spawn: Spawn, server: LoopbackModelServer,
                                                  home: Path) -> None:
    server.add(Reply(text="looking", output_tokens=1000, tool_calls=(
                   ScriptedToolCall(name="Glob", input={"pattern": "*.py"}),)),
               StallStream(reply=Reply(text="slow " * 40), after_events=2, seconds=60))
    child = spawn()
    child.send("go\r")
    expect_text(child, "Glob(")
    # The first call's $0.0150 shows while the turn still runs (the totals add it at its end).
    child.expect_exact("$0.0150")
    child.sendcontrol("c")
    wait_prompt(child)
    leave(child)
