"""Approvals, folder trust and settings reload in a real pseudo-terminal, against `aimon`.

The model is a loopback server; every wait is on screen text, never a fixed sleep.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pexpect
import pytest

from aimon_core.agent import INTERRUPTED_RESULT, repair_tool_pairs
from aimon_core.llm import ToolResultBlock
from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall, StallStream

from .conftest import (
    Spawn,
    expect_text,
    leave,
    screen_text,
    stored,
    wait_prompt,
    wait_until,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")

ASKED = "needs your approval"
KEYS = "] ↑/↓ Enter"  # the question is ready: a key answers


def edit(project: Path, old: str, new: str, *, read: bool = False, text: str = "") -> Reply:
    calc = str(project / "calc.py")
    calls = [ScriptedToolCall(name="Read", input={"file_path": calc})] if read else []
    calls.append(ScriptedToolCall(name="Edit", input={"file_path": calc, "old_string": old,
                                                      "new_string": new}))
    return Reply(text=text, tool_calls=tuple(calls))


def bash(command: str) -> Reply:
    return Reply(tool_calls=(ScriptedToolCall(name="Bash", input={
        "command": command, "description": "Run it"}),))


def tool_results(server: LoopbackModelServer, index: int = -1) -> list[str]:
    """The tool result texts of one request the server received."""
    return list(server.requests[index].tool_results().values())


def answer(child: pexpect.spawn, key: str) -> None:
    """Wait for an approval question to be ready, then press `key` (a letter answers)."""
    child.expect_exact(KEYS)
    child.send(key)


def finished(child: pexpect.spawn, text: str) -> str:
    """Wait for `text` and the status line after it; return everything shown before it."""
    child.expect_exact(text)
    seen = str(child.before)
    child.expect_exact("session ")
    return seen


def test_edit_shows_a_diff_and_enter_allows_it_for_this_turn_only(
        spawn: Spawn, server: LoopbackModelServer, project: Path) -> None:
    server.add(edit(project, "a + b", "a - b", read=True), edit(project, "a - b", "a * b"),
               Reply(text="Edited twice."),
               edit(project, "a * b", "a / b"), Reply(text="Not edited."))
    child = spawn()
    child.send("change calc\r")
    child.expect_exact(ASKED)
    child.expect_exact("Update calc.py with 1 addition and 1 removal")
    child.expect_exact("2 -     return a + b")
    child.expect_exact("2 +     return a - b")
    child.expect_exact("don't ask again for edits to calc.py in this session")
    answer(child, "\r")
    child.expect_exact("✓ allowed for this turn: edits to calc.py")
    seen = finished(child, "Edited twice.")
    assert ASKED not in seen  # the second edit of the turn was not asked about
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a * b\n"

    child.send("once more\r")
    child.expect_exact(ASKED)  # a new turn asks again
    answer(child, "n")
    child.expect_exact("Why?")
    child.send("\r")
    child.expect_exact("✗ denied: Edit(calc.py)")
    finished(child, "Not edited.")
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a * b\n"
    assert "The user denied this tool call." in tool_results(server)[-1]
    leave(child)


def test_y_allows_for_the_session_until_revoke(spawn: Spawn, server: LoopbackModelServer,
                                              project: Path) -> None:
    server.add(bash("touch one.txt"), Reply(text="First."), bash("touch one.txt"),
               Reply(text="Second."), bash("touch one.txt"), Reply(text="Third."))
    child = spawn()
    child.send("make a file\r")
    child.expect_exact(ASKED)
    answer(child, "y")
    child.expect_exact("✓ allowed for this session: `touch one.txt`")
    finished(child, "First.")
    child.send("again\r")
    assert ASKED not in finished(child, "Second.")
    child.send("/revoke\r")
    child.expect_exact("Forgot 1 approval of this session: Bash(touch one.txt)")
    wait_prompt(child)
    child.send("and again\r")
    child.expect_exact(ASKED)
    answer(child, "n")
    child.expect_exact("Why?")
    child.send("not now\r")
    child.expect_exact("✗ denied: Bash(touch one.txt) (not now)")
    finished(child, "Third.")
    leave(child)


def test_a_survives_clear_and_a_new_process(spawn: Spawn, server: LoopbackModelServer,
                                            project: Path, home: Path) -> None:
    server.add(edit(project, "a + b", "a - b", read=True), Reply(text="One."),
               edit(project, "a - b", "a * b", read=True), Reply(text="Two."),
               edit(project, "a * b", "a / b", read=True), Reply(text="Three."))
    child = spawn()
    child.send("edit\r")
    answer(child, "a")
    expect_text(child, "✓ allowed for this agent: edits to calc.py")
    finished(child, "One.")
    child.send("/clear\r")
    child.expect_exact("Started a new session")
    wait_prompt(child)
    child.send("edit in the new session\r")
    assert ASKED not in finished(child, "Two.")
    leave(child)
    assert list((home / "data" / "approvals").glob("*.json"))

    again = spawn()
    again.send("edit in a new process\r")
    assert ASKED not in finished(again, "Three.")
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a / b\n"
    again.send("/revoke --agent\r")
    again.expect_exact("Forgot 1 approval of this agent")
    wait_prompt(again)
    assert not list((home / "data" / "approvals").glob("*.json"))
    leave(again)


def test_a_denial_reason_reaches_the_model(spawn: Spawn, server: LoopbackModelServer,
                                           project: Path) -> None:
    server.add(edit(project, "a + b", "a - b", read=True), Reply(text="Understood."))
    child = spawn()
    child.send("edit\r")
    answer(child, "n")
    child.expect_exact("Why?")
    child.send("keep it additive\r")
    child.expect_exact("✗ denied: Edit(calc.py) (keep it additive)")
    finished(child, "Understood.")
    assert 'The user said: "keep it additive"' in tool_results(server)[-1]
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    leave(child)


def test_a_session_approval_survives_resume(spawn: Spawn, server: LoopbackModelServer,
                                            project: Path) -> None:
    server.add(bash("touch two.txt"), Reply(text="Made it."), bash("touch two.txt"),
               Reply(text="Made it again."))
    child = spawn()
    child.send("make\r")
    answer(child, "y")
    finished(child, "Made it.")
    session_id = leave(child)
    resumed = spawn("--resume", session_id)
    resumed.expect_exact(f"Resumed session {session_id}")
    wait_prompt(resumed)
    resumed.send("make again\r")
    assert ASKED not in finished(resumed, "Made it again.")
    assert leave(resumed) == session_id


def test_ctrl_c_while_asked_interrupts_the_turn(spawn: Spawn, server: LoopbackModelServer,
                                                project: Path, home: Path) -> None:
    server.add(edit(project, "a + b", "a - b", read=True), Reply(text="After."))
    child = spawn()
    child.send("edit\r")
    child.expect_exact(ASKED)
    child.sendcontrol("c")
    child.expect_exact("Interrupted. Partial output is kept")
    child.send("go on\r")
    finished(child, "After.")
    record = stored(home, leave(child))
    assert repair_tool_pairs(record.transcript.messages) == record.transcript.messages
    results = [b for m in record.transcript.messages for b in m.content
               if isinstance(b, ToolResultBlock)]
    assert results[-1].text == INTERRUPTED_RESULT
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"


def test_a_put_off_approval_is_answered_with_commands_and_the_draft_comes_back(
        spawn: Spawn, server: LoopbackModelServer, project: Path) -> None:
    stalled = StallStream(reply=edit(project, "a + b", "a - b", read=True), after_events=2,
                          seconds=1.5)
    server.add(stalled, Reply(text="Edited."), Reply(text="Drafted."))
    child = spawn()
    child.send("edit\r")
    child.expect_exact("Esc/Ctrl-C to interrupt")
    child.send("my draft")  # typed while the model is still answering
    answer(child, "\x1b")  # Esc: answer later
    child.expect_exact("The approval waits")
    child.expect_exact("1 approval waiting")
    child.send("\x15")  # Ctrl-U: the restored draft goes; a command takes its place
    child.send("/pending\r")
    child.expect_exact("Waiting for your answer")
    child.expect_exact("Edit(")
    wait_prompt(child)
    child.send("/approve\r")
    child.expect_exact("✓ allowed for this turn: edits to calc.py")
    finished(child, "Edited.")
    assert (project / "calc.py").read_text() == "def add(a, b):\n    return a - b\n"
    leave(child)


def test_text_typed_as_a_question_appears_stays_in_the_draft(
        spawn: Spawn, server: LoopbackModelServer, project: Path) -> None:
    stalled = StallStream(reply=edit(project, "a + b", "a - b", read=True), after_events=2,
                          seconds=1.5)
    server.add(stalled, Reply(text="Edited."), Reply(text="Got the draft."))
    child = spawn()
    child.send("edit\r")
    child.expect_exact("Esc/Ctrl-C to interrupt")
    child.send("any")  # a, n, y are answers, but not while the user is typing
    child.expect_exact(ASKED)
    child.send("way")
    answer(child, "o")
    child.expect_exact("✓ allowed for this turn: edits to calc.py")
    finished(child, "Edited.")
    child.send("\r")  # sends the draft the question interrupted
    finished(child, "Got the draft.")
    leave(child)
    assert "anyway" in server.requests[-1].conversation()[-1][1]


def test_editing_settings_reloads_them_and_the_new_rule_applies(
        spawn: Spawn, server: LoopbackModelServer, project: Path, home: Path) -> None:
    server.add(bash("touch three.txt"), Reply(text="Refused."))
    settings = home / "config" / "settings.json"
    # The folder exists, as it does for users: a watch started while it is being created
    # could miss it (watch_settings plans, then watches).
    settings.parent.mkdir(parents=True, exist_ok=True)
    child = spawn()
    child.send("/status\r")  # the runtime is built, so settings are watched
    child.expect_exact("Totals")
    wait_prompt(child)
    hooks = {"ConfigChange": [{"hooks": [{"type": "command",
                                          "command": "cat > config-change.json"}]}]}
    for attempt in range(20):  # the watch may start just after the first write
        settings.write_text(json.dumps({"permissions": {"deny": ["Bash(touch:*)"]},
                                        "env": {"ATTEMPT": str(attempt)}, "hooks": hooks}))
        try:
            child.expect_exact("settings reloaded", timeout=1)
            break
        except pexpect.TIMEOUT:
            continue
    else:
        pytest.fail("the settings were not reloaded")
    told = project / "config-change.json"
    events: list[dict[str, object]] = []

    def hook_ran() -> bool:
        # A write that reloaded late (after its 1 s) was followed by another: that reload's
        # hook run may be rewriting the file, so read it whole once and keep what parsed.
        try:
            events.append(json.loads(told.read_text()))
        except (OSError, ValueError):
            return False
        return True

    wait_until(hook_ran, "the hook ran")
    event = events[-1]
    assert event["hook_event_name"] == "ConfigChange" and event["source"] == "user_settings"
    assert event["file_path"] == str(settings)
    child.send("touch it\r")
    assert ASKED not in finished(child, "Refused.")
    assert "denied by rule Bash(touch:*)" in tool_results(server)[-1]
    assert not (project / "three.txt").exists()
    child.send("/permissions\r")
    expect_text(child, f"deny   Bash(touch:*)  user settings ({settings})")
    wait_prompt(child)
    settings.write_text('{"permissions": {"deny": [5]}}')
    child.expect_exact("Settings not reloaded")
    leave(child)


def write_hook_settings(project: Path) -> None:
    (project / ".aimon").mkdir()
    (project / ".aimon" / "settings.json").write_text(json.dumps({"hooks": {
        # Written by a redirection: a file the hook writes is no script it runs, so its
        # coming into being does not change what was trusted.
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo > hook-ran"}]}]}}))


def test_trusting_a_folder_runs_its_hooks(spawn: Spawn, server: LoopbackModelServer,
                                          project: Path) -> None:
    write_hook_settings(project)
    server.add(Reply(text="Hooked."))
    child = spawn(first="echo > hook-ran")  # what the settings would do, then the question
    child.expect_exact("Trust this folder?")
    child.expect_exact("[y/N]")
    child.send("y")
    child.expect_exact("Trusted: this folder's settings are in effect.")
    wait_prompt(child)
    child.send("hello\r")
    finished(child, "Hooked.")
    assert (project / "hook-ran").exists()
    leave(child)
    again = spawn()  # trusted now: not asked again
    again.send("/status\r")  # answered once the settings are read (a question would come first)
    again.expect_exact("Totals")
    wait_prompt(again)
    assert "Trust this folder?" not in screen_text(again)
    leave(again)


def test_not_trusting_a_folder_holds_its_hooks_back(spawn: Spawn, server: LoopbackModelServer,
                                                    project: Path) -> None:
    write_hook_settings(project)
    server.add(Reply(text="Not hooked."))
    child = spawn(first="Trust this folder?")
    child.expect_exact("[y/N]")
    child.send("\r")
    child.expect_exact("Not trusted: those settings stay held back")
    wait_prompt(child)
    child.send("hello\r")
    finished(child, "Not hooked.")
    assert not (project / "hook-ran").exists()
    leave(child)
