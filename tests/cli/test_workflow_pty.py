"""/workflow in the REPL, in a real pseudo-terminal, against the loopback model.

Every wait is on screen text, never a fixed sleep.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from aimon_core.testing import LoopbackModelServer, Reply, StallStream

from .conftest import Spawn, leave, wait_prompt, wait_until

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")

ONE = """\
name: one
stages:
  - name: look
    tasks:
      - {agent: explore, prompt: "Look at calc.py"}
  - name: tell
    tasks:
      - {agent: general-purpose, prompt: "Tell: {{stages.look.output}}"}
"""


def workflow(project: Path) -> None:
    folder = project / ".aimon" / "workflows"
    folder.mkdir(parents=True)
    (folder / "one.yaml").write_text(ONE)


def test_slash_workflow_shows_each_task_and_prints_the_outputs(
        spawn: Spawn, server: LoopbackModelServer, project: Path) -> None:
    workflow(project)
    server.add(Reply(text="LOOKED-AT-IT"), Reply(text="TOLD-YOU"))
    child = spawn()
    child.send("/workflow one\r")
    child.expect_exact("⚙ workflow one started")
    child.expect_exact("✓ one · look/0 (explore) completed")
    child.expect_exact("✓ one · tell/0 (general-purpose) completed")
    child.expect_exact("⚙ workflow one completed")
    child.expect_exact("TOLD-YOU")
    wait_prompt(child)
    leave(child)
    assert server.requests[1].conversation()[0] == ("user", "Tell: LOOKED-AT-IT")


def test_ctrl_c_stops_the_workflows_tasks(spawn: Spawn, server: LoopbackModelServer,
                                          project: Path) -> None:
    workflow(project)
    server.add(StallStream(reply=Reply(text="never seen"), after_events=1, seconds=60,
                           released=True))
    child = spawn()
    child.send("/workflow one\r")
    child.expect_exact("⚙ workflow one started")
    wait_until(lambda: bool(server.requests), "the task asked the model")
    child.sendcontrol("c")
    child.expect_exact("⚙ workflow one interrupted")
    child.expect_exact("Interrupted: every task of the run was stopped")
    wait_prompt(child)
    server.release()
    leave(child)
