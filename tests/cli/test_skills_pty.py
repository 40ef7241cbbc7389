"""Skills and subagents in the REPL, in a real pseudo-terminal, against the loopback model.

Every wait is on screen text, never a fixed sleep.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall

from .conftest import Spawn, expect_text, leave, wait_prompt

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")


def tool_results(server: LoopbackModelServer, index: int) -> list[str]:
    return list(server.requests[index].tool_results().values())


def test_slash_review_forks_the_code_reviewer_and_prints_its_answer(
        spawn: Spawn, server: LoopbackModelServer, project: Path) -> None:
    server.add(Reply(tool_calls=(ScriptedToolCall(name="Read", input={
                   "file_path": str(project / "calc.py")}),)),
               Reply(text="REVIEW-VERDICT: no findings in calc.py"))
    child = spawn()
    child.send("/review calc.py\r")
    expect_text(child, "● code-reviewer(Review this change: calc.py)")  # then its steps
    expect_text(child, "⎿ Read(calc.py)")
    child.expect_exact("REVIEW-VERDICT: no findings in calc.py")
    wait_prompt(child)
    leave(child)
    first = server.requests[0]
    assert "reviewing a change" in first.system_text()
    assert "Review this change: calc.py" in first.conversation()[0][1]


def test_the_model_calls_skill_then_task(spawn: Spawn, server: LoopbackModelServer,
                                         project: Path) -> None:
    skill = project / ".aimon" / "skills" / "hello"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: hello\ndescription: Greets people. Use to say hello.\n---\n"
        "Greet $ARGUMENTS warmly, then ask the explore subagent to list the files.\n")
    server.add(
        Reply(tool_calls=(ScriptedToolCall(name="Skill", input={"skill": "hello",
                                                                 "args": "Ada"}),)),
        Reply(tool_calls=(ScriptedToolCall(name="Task", input={
            "description": "list files", "prompt": "List the files of the project.",
            "subagent_type": "explore"}),)),
        Reply(text="SUBAGENT-FOUND calc.py"),
        Reply(text="Hello Ada! The project holds calc.py. ALL-DONE"),
    )
    child = spawn("--allowed-tools", "Skill(hello)")
    child.send("say hello to Ada\r")
    child.expect_exact("ALL-DONE")
    wait_prompt(child)
    leave(child)
    assert "- hello: Greets people." in json.dumps(server.requests[0].body["tools"])
    assert "Greet Ada warmly" in tool_results(server, 1)[0]
    assert "codebase search specialist" in server.requests[2].system_text()
    assert tool_results(server, 3)[-1] == "SUBAGENT-FOUND calc.py"
