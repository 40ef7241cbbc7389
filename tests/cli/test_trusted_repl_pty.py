"""The REPL a person trusts (issue 9, must fix), in a real pseudo-terminal against `aimon`.

Each test was written to fail on the behaviour the issue reports. The model is a loopback
server; every wait is on screen text or on a file, never a fixed sleep.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import sys
from pathlib import Path

import pexpect
import pytest

from aimon_core.session import FileSessionRecordStore
from aimon_core.testing import Fault, LoopbackModelServer, Reply, ScriptedToolCall, StallStream

from .conftest import (
    AIMON,
    Spawn,
    editor_live,
    expect_text,
    leave,
    stored,
    wait_prompt,
    wait_until,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")

KEYS = "] ↑/↓ Enter"


def finished(child: pexpect.spawn, text: str) -> str:
    child.expect_exact(text)
    seen = str(child.before)
    child.expect_exact("session ")
    return seen


def sent_messages(server: LoopbackModelServer, index: int = -1) -> list[tuple[str, str]]:
    return server.requests[index].conversation()


def roles(messages: list[tuple[str, str]]) -> list[str]:
    return [role for role, _ in messages]


def no_two_user_turns(messages: list[tuple[str, str]]) -> bool:
    return all(a != b for a, b in itertools.pairwise(roles(messages)))


def test_a_sentence_typed_at_an_approval_answers_nothing_and_is_kept(
        spawn: Spawn, server: LoopbackModelServer, project: Path, home: Path) -> None:
    server.add(Reply(tool_calls=(ScriptedToolCall(name="Bash", input={
        "command": "touch made.txt", "description": "Make it"}),)), Reply(text="Done."))
    child = spawn()
    child.send("make a file\r")
    # The agent choice says where it applies (wrapped between words on a long tmp path).
    gap = r"(?:\s|\x1b\[[0-9;?]*[A-Za-z])+"
    child.expect(f"not{gap}other{gap}projects")
    child.expect_exact(KEYS)
    child.send("wait, what does this do?\r")
    child.expect_exact("Enter answers nothing while you type")
    assert not (project / "made.txt").exists()
    child.send("\x1b")  # Esc: answer later; the sentence comes back as the draft
    child.expect_exact("The approval waits")
    child.expect_exact("wait, what does this do?")
    child.send("\x15/deny\r")  # Ctrl-U, then deny with a command
    child.expect_exact("✗ denied")
    finished(child, "Done.")
    assert not (project / "made.txt").exists()
    assert not list((home / "data" / "approvals").glob("*.json"))  # no "a" was taken
    assert all("/permissions" not in json.dumps(m) for m in sent_messages(server))
    child.send("/permissions\r")  # says where agent approvals apply
    expect_text(child, "(for agent default in ")  # lines wrap between words
    expect_text(child, f"{project.resolve().name} only)")
    wait_prompt(child)
    leave(child)


def test_a_settings_change_mid_session_asks_nothing_until_trust(
        spawn: Spawn, server: LoopbackModelServer, project: Path) -> None:
    settings = project / ".aimon" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{}")
    server.add(Reply(text="Not hooked."), Reply(text="Hooked."))
    child = spawn()
    child.send("/status\r")  # the runtime is built, so settings are watched
    child.expect_exact("Totals")
    wait_prompt(child)
    hooks = {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "touch hook-ran"}]}]}
    for attempt in range(20):  # the watch may start just after the first write
        settings.write_text(json.dumps({"hooks": hooks, "env": {"ATTEMPT": str(attempt)}}))
        try:
            child.expect_exact("held back until you run /trust", timeout=1)
            break
        except pexpect.TIMEOUT:
            continue
    else:
        pytest.fail("the settings change was not announced")
    assert "Trust this folder?" not in str(child.before)
    child.send("hello\r")
    assert "Trust this folder?" not in finished(child, "Not hooked.")
    assert not (project / "hook-ran").exists()
    child.send("/trust\r")
    expect_text(child, "its settings are in effect now")
    wait_prompt(child)
    child.send("again\r")
    finished(child, "Hooked.")
    wait_until(lambda: (project / "hook-ran").exists(), "the hook ran")
    leave(child)


def test_streamed_text_is_on_screen_before_the_stream_ends(
        spawn: Spawn, server: LoopbackModelServer) -> None:
    # The first half (sent before a long stall) ends mid-paragraph: no Markdown block is
    # complete, yet the text must show.
    text = "Streaming shows this now and " + "z" * 29
    server.add(StallStream(reply=Reply(text=text), after_events=4, seconds=60),
               Reply(text="Afterwards."))
    child = spawn()
    child.send("stream please\r")
    child.expect_exact("Streaming shows this now")
    child.sendcontrol("c")
    child.expect_exact("Interrupted")
    child.send("more\r")
    finished(child, "Afterwards.")
    leave(child)


def test_a_start_with_no_prompt_leaves_no_session(spawn: Spawn, home: Path) -> None:
    child = spawn()
    editor_live(child)
    assert leave(child) == ""  # no resume hint: there is nothing to resume
    assert FileSessionRecordStore(home / "data").list_sessions() == ()
    again = spawn("--continue", first=None)
    again.expect_exact("no session to continue")
    again.expect(pexpect.EOF)


def test_a_failed_turn_leaves_a_well_formed_transcript(
        spawn: Spawn, server: LoopbackModelServer, home: Path) -> None:
    server.add(Fault(status=400, message="scripted bad request"), Reply(text="Second answer."))
    child = spawn()
    child.send("first prompt\r")
    child.expect_exact("scripted bad request")
    wait_prompt(child)
    child.send("second prompt\r")
    child.expect_exact("is not sent again")
    finished(child, "Second answer.")
    sent = sent_messages(server)
    assert no_two_user_turns(sent) and roles(sent) == ["user"]
    assert "first prompt" not in json.dumps(sent) and "second prompt" in json.dumps(sent)
    leave(child)


def test_a_kill_mid_turn_resumes_with_a_well_formed_request(
        spawn: Spawn, server: LoopbackModelServer, home: Path) -> None:
    server.add(Reply(text="One."),
               StallStream(reply=Reply(text="Never seen " + "q" * 40), after_events=2,
                           seconds=60),
               Reply(text="After the crash."))
    child = spawn()
    child.send("one\r")
    finished(child, "One.")
    child.send("two\r")
    wait_until(lambda: len(server.requests) == 2, "the second request")
    child.kill(signal.SIGKILL)
    child.close()
    [summary] = FileSessionRecordStore(home / "data").list_sessions()
    resumed = spawn("--resume", summary.id)
    resumed.send("three\r")
    finished(resumed, "After the crash.")
    sent = sent_messages(server)
    assert no_two_user_turns(sent) and roles(sent) == ["user", "assistant", "user"]
    assert '"two"' not in json.dumps(sent)
    leave(resumed)


def test_edit_after_resume_works_on_a_file_read_before(
        spawn: Spawn, server: LoopbackModelServer, project: Path, home: Path) -> None:
    calc = str(project / "calc.py")
    server.add(Reply(tool_calls=(ScriptedToolCall(name="Read", input={"file_path": calc}),)),
               Reply(text="Read it."),
               Reply(tool_calls=(ScriptedToolCall(name="Edit", input={
                   "file_path": calc, "old_string": "a + b", "new_string": "a - b"}),)),
               Reply(text="Edited."))
    child = spawn()
    child.send("read calc\r")
    finished(child, "Read it.")
    session_id = leave(child)
    resumed = spawn("--resume", session_id, "--permission-mode", "acceptEdits")
    resumed.send("edit calc\r")
    finished(resumed, "Edited.")
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    record = stored(home, leave(resumed))
    assert "has not been read" not in json.dumps([m.text for m in record.transcript.messages])


def test_the_command_line_takes_short_ids(spawn: Spawn, server: LoopbackModelServer,
                                          project: Path, home: Path) -> None:
    server.add(Reply(text="Stored."))
    child = spawn()
    child.send("keep me\r")
    finished(child, "Stored.")
    session_id = leave(child)
    resumed = spawn("--resume", session_id[-6:], first=f"Resumed session {session_id}")
    leave(resumed)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env["AIMON_HOME"] = str(home)
    env["OPENAI_API_KEY"] = "test-key"  # a provider: without one the REPL stops before the id
    shown = pexpect.run(f"{AIMON} sessions show {session_id[-6:]}", cwd=str(project), env=env,
                        encoding="utf-8", withexitstatus=True)
    assert shown[1] == 0 and f"session {session_id}" in shown[0]
    bad = pexpect.run(f"{AIMON} --resume {session_id[-6:-1]}x", cwd=str(project), env=env,
                      encoding="utf-8", withexitstatus=True)
    assert bad[1] == 2 and "nearest" in bad[0] and session_id in bad[0]
    listed = pexpect.run(f"{AIMON} sessions", cwd=str(project), env=env, encoding="utf-8",
                         withexitstatus=True)
    assert listed[1] == 0 and session_id in listed[0]
