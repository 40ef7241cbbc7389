"""/rewind and Esc Esc in a real pseudo-terminal: pick a prompt, choose what to restore.

Every wait is on screen text, never a fixed sleep.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall

from .conftest import Spawn, leave, stored, wait_prompt

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")


def write_step(project: Path, text: str) -> tuple[Reply, Reply]:
    return (Reply(tool_calls=(ScriptedToolCall(name="Write", input={
        "file_path": str(project / "step.txt"), "content": f"{text}\n"}),)),
        Reply(text=f"Wrote {text}."))


def test_esc_esc_opens_rewind_and_restores_the_code(
        spawn: Spawn, server: LoopbackModelServer, project: Path, home: Path) -> None:
    server.add(*write_step(project, "one"), *write_step(project, "two"))
    child = spawn("--permission-mode", "acceptEdits")
    child.send("first prompt\r")
    child.expect_exact("Wrote one.")
    child.send("second prompt\r")
    child.expect_exact("Wrote two.")
    wait_prompt(child)
    assert (project / "step.txt").read_text() == "two\n"
    child.send("\x1b\x1b")  # Esc Esc at the empty prompt
    child.expect_exact("prompt 1: 'first prompt'")
    child.expect_exact("since then: 1 added (+1 -0)")
    child.expect_exact("Rewind to which prompt?")
    child.expect_exact("[1/2 · Esc cancels]")  # drawn once the keys answer
    child.send("1")  # the key answers
    child.expect_exact("restore what?")
    child.expect_exact("[c/v/b/n · Esc cancels]")
    child.send("c")
    child.expect_exact("-two")  # the diff is shown before the question
    child.expect_exact("[y/n · Esc cancels]")
    child.send("y")
    child.expect_exact("Restored the files as they were before prompt 1")
    wait_prompt(child)
    assert not (project / "step.txt").exists()
    leave(child)


def test_rewind_forks_the_conversation_and_switches_to_it(
        spawn: Spawn, server: LoopbackModelServer, project: Path, home: Path) -> None:
    server.add(*write_step(project, "one"), *write_step(project, "two"))
    child = spawn("--permission-mode", "acceptEdits")
    child.send("first prompt\r")
    child.expect_exact("Wrote one.")
    child.send("second prompt\r")
    child.expect_exact("Wrote two.")
    wait_prompt(child)
    child.send("/rewind\r")
    child.expect_exact("Rewind to which prompt?")
    child.expect_exact("[1/2 · Esc cancels]")  # drawn once the keys answer
    child.send("2")  # the key answers
    child.expect_exact("restore what?")
    child.expect_exact("[c/v/b/n · Esc cancels]")
    child.send("v")
    child.expect_exact("(switched to it)")
    wait_prompt(child)
    assert (project / "step.txt").read_text() == "two\n"  # the code stays
    fork = stored(home, leave(child))
    assert [m.content[0].text for m in fork.transcript.messages if m.role == "user" and m.text] == [
        "first prompt"]
