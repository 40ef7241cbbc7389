"""The REPL in a real pseudo-terminal: the `aimon` command against a loopback model server.

Every wait is on screen text (or on a process appearing or going away), never a fixed sleep.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from aimon_core.agent import INTERRUPTED_RESULT, repair_tool_pairs
from aimon_core.llm import ToolResultBlock
from aimon_core.session import SessionRecord
from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall, StallStream

from .conftest import (
    AIMON,
    MODEL,
    PROVIDER,
    RESUME_HINT,
    TIMEOUT,
    Spawn,
    expect_screen,
    expect_text,
    leave,
    stored,
    wait_prompt,
    wait_until,
)

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")


def assert_valid_transcript(record: SessionRecord) -> None:
    """Every tool_use is answered by the next message and nothing needed repair."""
    assert repair_tool_pairs(record.transcript.messages) == record.transcript.messages


def processes_running(argv: list[str]) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().split(b"\0")[:-1]
            except OSError:
                continue
            if [part.decode(errors="replace") for part in cmdline] == argv:
                found.append(int(entry.name))
    return found


def test_streams_an_answer_and_shows_tool_calls(spawn: Spawn, server: LoopbackModelServer,
                                                project: Path, home: Path) -> None:
    server.add(
        Reply(text="Let me look.", tool_calls=(
            ScriptedToolCall(name="Read", input={"file_path": str(project / "calc.py")}),)),
        Reply(text="It adds **two** numbers.\n\nNothing else to see."),
    )
    child = spawn()
    child.send("what does calc.py do?\r")
    child.expect_exact("Let me look.")
    child.expect_exact("Read(calc.py)")
    child.expect_exact("Read 2 lines")
    child.expect_exact("Nothing else to see.")
    child.expect(r"─ 20 in · 10 out · \$0\.\d{4} · session ")
    session_id = leave(child)
    record = stored(home, session_id)
    assert [m.role for m in record.transcript.messages] == ["user", "assistant", "user",
                                                            "assistant"]
    assert record.totals.turns == 1 and record.totals.iterations == 2


def test_ctrl_c_mid_stream_keeps_the_prompt_and_a_valid_transcript(
        spawn: Spawn, server: LoopbackModelServer, home: Path) -> None:
    partial = "Partial answer.\n\n" + "x" * 20  # the first half holds the first paragraph
    server.add(StallStream(reply=Reply(text=partial), after_events=4, seconds=60),
               Reply(text="Back again."))
    child = spawn()
    child.send("tell me a long story\r")
    child.expect_exact("Partial answer.")
    child.expect_exact("Esc/Ctrl-C to interrupt")
    child.sendcontrol("c")
    child.expect_exact("Interrupted. Partial output is kept")
    child.send("go on\r")
    child.expect_exact("Back again.")
    record = stored(home, leave(child))
    assert_valid_transcript(record)
    texts = [(m.role, m.content[0].text if m.role == "user" else m.text)
             for m in record.transcript.messages]
    kept = texts[1][1]  # what had streamed when the stream stalled: the wires cut it differently
    assert kept.startswith("Partial answer.") and partial.startswith(kept)
    assert texts == [("user", "tell me a long story"), ("assistant", kept),
                     ("user", "go on"), ("assistant", "Back again.")]


def test_ctrl_c_mid_bash_kills_the_command_and_answers_the_tool_call(
        spawn: Spawn, server: LoopbackModelServer, home: Path) -> None:
    seconds = f"{600 + secrets.randbelow(9000)}.{secrets.randbelow(1000):03d}"
    server.add(Reply(tool_calls=(ScriptedToolCall(name="Bash", input={
        "command": f"sleep {seconds}", "description": "Wait"}),)))
    child = spawn("--allowed-tools", "Bash(sleep:*)")
    child.send("wait a while\r")
    # The live header shows "Bash(…)" as soon as the call is named; the screen's update
    # then writes only what changed, the input.
    child.expect_exact(f"sleep {seconds})")
    wait_until(lambda: bool(processes_running(["sleep", seconds])), "sleep runs")
    expect_screen(child, "running Bash")
    child.sendcontrol("c")
    child.expect_exact("Interrupted")
    child.expect_exact("Interrupted. Partial output is kept")
    wait_until(lambda: not processes_running(["sleep", seconds]), "sleep is killed")
    record = stored(home, leave(child))
    assert_valid_transcript(record)
    last = record.transcript.messages[-1]
    assert last.role == "user"
    (block,) = last.content
    assert isinstance(block, ToolResultBlock) and block.is_error
    assert block.text == INTERRUPTED_RESULT


def test_budget_and_totals_survive_exit_and_resume(spawn: Spawn, server: LoopbackModelServer,
                                                   home: Path) -> None:
    server.add(Reply(text="Hi there, first answer."))
    child = spawn()
    child.send("/budget iterations 7\r")
    child.expect_exact("Budget set: each turn gets at most 7 iterations")
    child.send("hello\r")
    child.expect_exact("Hi there, first answer.")
    child.expect_exact("session ")
    child.send("/exit\r")
    child.expect(RESUME_HINT)
    session_id = child.match.group(1)
    child.expect(pexpect.EOF)

    again = spawn("--resume", session_id)
    again.expect_exact(f"Resumed session {session_id} (2 messages)")
    again.expect_exact("Hi there, first answer.")
    again.send("/status\r")
    again.expect_exact(f"Session   {session_id} (2 messages)")
    again.expect_exact("Totals    1 turn · 1 iteration")
    again.expect_exact("Tokens    10 in · 5 out")
    again.expect_exact("Budget    at most 7 iterations")
    again.expect_exact("Override  iterations 7")
    wait_prompt(again)
    assert leave(again) == session_id
    assert stored(home, session_id).budget_override is not None


def test_text_typed_during_a_turn_is_queued_and_runs_next(
        spawn: Spawn, server: LoopbackModelServer) -> None:
    server.add(StallStream(reply=Reply(text="Slow answer."), after_events=3, seconds=30,
                           released=True),
               Reply(text="Queued answer."))
    child = spawn()
    child.send("first\r")
    child.expect_exact("Esc/Ctrl-C to interrupt")
    child.send("second\r")
    child.expect_exact("queued: second")
    server.release()  # the first answer ends (its text may be on screen already)
    child.expect_exact("session ")
    child.expect_exact("› second")
    child.expect_exact("Queued answer.")
    leave(child)
    assert len(server.requests) == 2
    second = server.requests[1].conversation()
    assert [role for role, _ in second] == ["user", "assistant", "user"]
    assert "second" in second[2][1]


def test_unknown_commands_get_a_suggestion(spawn: Spawn) -> None:
    child = spawn()
    child.send("/stauts\r")
    child.expect_exact("Unknown command /stauts. Did you mean /status?")
    child.send("/nonsense\r")
    child.expect_exact("Unknown command /nonsense. Type /help to see the commands.")
    child.send("/help\r")
    child.expect_exact("Esc-Enter, Alt-Enter")
    child.expect_exact("for a command's arguments.")
    wait_prompt(child)
    leave(child)


def test_ctrl_d_and_double_ctrl_c_exit_with_the_resume_hint(
        spawn: Spawn, server: LoopbackModelServer) -> None:
    assert leave(spawn()) == ""  # nothing was said: no session is stored, no hint
    server.add(Reply(text="Hi."))
    child = spawn()
    child.send("hello\r")
    child.expect_exact("session ")
    child.sendcontrol("c")
    child.expect_exact("Press Ctrl-C again to exit")
    child.sendcontrol("c")
    child.expect(RESUME_HINT)
    child.expect(pexpect.EOF)


def test_esc_enter_inserts_a_newline_and_enter_sends_it_all(
        spawn: Spawn, server: LoopbackModelServer) -> None:
    server.add(Reply(text="Got both lines."))
    child = spawn()
    child.send("line one")
    child.send("\x1b\r")
    child.send("line two\r")
    child.expect_exact("Got both lines.")
    leave(child)
    assert server.requests[0].conversation()[0] == ("user", "line one\nline two")


def test_a_pasted_block_stays_whole(spawn: Spawn, server: LoopbackModelServer) -> None:
    server.add(Reply(text="Got the paste."))
    child = spawn()
    child.send("\x1b[200~first line\rsecond line\r\x1b[201~")
    child.send(" please\r")
    child.expect_exact("Got the paste.")
    leave(child)
    (request,) = server.requests
    assert request.conversation()[0] == ("user", "first line\nsecond line\n please")


def test_esc_interrupts_a_running_turn(spawn: Spawn, server: LoopbackModelServer) -> None:
    server.add(StallStream(reply=Reply(text="Never finished."), after_events=3, seconds=60))
    child = spawn()
    child.send("go\r")
    child.expect_exact("Esc/Ctrl-C to interrupt")
    child.send("\x1b")
    child.expect_exact("Interrupted. Partial output is kept")
    leave(child)


def test_an_initial_prompt_runs_first(spawn: Spawn, server: LoopbackModelServer) -> None:
    server.add(Reply(text="Answer to the initial prompt."))
    child = spawn("say hello")
    child.expect_exact("Answer to the initial prompt.")
    leave(child)
    assert "say hello" in server.requests[0].conversation()[0][1]


def test_resume_without_an_id_offers_a_numbered_list(
        spawn: Spawn, server: LoopbackModelServer) -> None:
    server.add(Reply(text="Stored answer."))
    child = spawn()
    child.send("remember this\r")
    child.expect_exact("Stored answer.")
    session_id = leave(child)
    picker = pexpect.spawn(AIMON, ["--provider", PROVIDER, "--model", MODEL, "-r"],
                           cwd=child.cwd, env=child.env, dimensions=(40, 120),
                           encoding="utf-8", timeout=TIMEOUT)
    picker.expect_exact("❯ ")  # the first session is highlighted: arrow keys move it
    picker.expect_exact(session_id)
    expect_text(picker, "Resume which session? [1 · Esc cancels]")  # as /resume's
    picker.send("\x1b[B\x1b[A\r")  # down, up (there is one session), Enter
    picker.expect_exact(f"Resumed session {session_id}")
    assert leave(picker) == session_id


def test_the_repl_module_imports_no_provider_sdk() -> None:
    code = ("import sys, aimon_cli.repl, aimon_cli._picker; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('anthropic', 'openai', 'httpx', 'aimon_core')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    loaded = eval(done.stdout)
    assert not [m for m in loaded if not m.startswith("aimon_core")]
    assert "aimon_core.session" not in loaded and "aimon_core.llm" not in loaded


def test_resume_in_the_repl_opens_another_agents_session_on_its_runtime(
        spawn: Spawn, server: LoopbackModelServer, project: Path, home: Path) -> None:
    agents = project / ".aimon" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews diffs\ntools: [Read]\n---\n"
        "You are the reviewer of this project.\n")
    server.add(Reply(text="Default agent here."), Reply(text="Reviewer again."))
    child = spawn("--agent", "reviewer")
    child.send("hello reviewer\r")
    child.expect_exact("Default agent here.")
    child.expect_exact("session ")
    reviewer_session = leave(child)

    child = spawn()  # the default agent
    child.send(f"/resume {reviewer_session}\r")
    child.expect_exact(f"Resumed session {reviewer_session}")
    child.send("and now?\r")
    child.expect_exact("Reviewer again.")
    child.expect_exact("session ")
    assert leave(child) == reviewer_session
    record = stored(home, reviewer_session)
    assert record.agent_ref.startswith("agent:reviewer:")  # agent scope is per project
    assert [m.content[0].text for m in record.transcript.messages if m.role == "user"] == [
        "hello reviewer", "and now?"]
    assert "You are the reviewer of this project." in server.requests[-1].system_text()
    assert server.requests[-1].tool_names() == ["Read"]
