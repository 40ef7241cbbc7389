"""End to end: skills and subagents through the `aimon` command against the loopback model."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall

from .conftest import AIMON, MODEL_ARGS, aimon_env


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    return project


def aimon(server: LoopbackModelServer | None, cwd: Path, *args: str
          ) -> subprocess.CompletedProcess[str]:
    if server is not None:
        env = aimon_env(server)
    else:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
        env.update(AIMON_NO_LOCAL_PROBE="1")
    return subprocess.run([AIMON, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def test_print_mode_review_forks_the_code_reviewer(repo: Path,
                                                   server: LoopbackModelServer) -> None:
    server.add(Reply(tool_calls=(ScriptedToolCall(name="Read", input={
                   "file_path": str(repo / "calc.py")}),)),
               Reply(text="1 bug: calc.py:2 subtracts instead of adding."))
    done = aimon(server, repo, *MODEL_ARGS, "-p", "/review calc.py")
    assert done.returncode == 0, done.stderr
    assert "1 bug: calc.py:2 subtracts instead of adding." in done.stdout
    first = server.requests[0]
    assert "reviewing a change" in first.system_text()
    assert "Review this change: calc.py" in first.conversation()[0][1]
    assert sorted(first.tool_names()) == ["Bash", "Glob", "Grep", "Read"]


def test_skills_and_agents_list_outside_the_repl(repo: Path) -> None:
    skill = repo / ".aimon" / "skills" / "hello"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: hello\ndescription: Say hello.\n---\nHello.\n")
    (repo / ".aimon" / "agents").mkdir()
    (repo / ".aimon" / "agents" / "broken.md").write_text("---\nname: [\n---\nbody\n")
    done = aimon(None, repo, "skills", "list", "--json")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout)
    by_name = {entry["name"]: entry for entry in listing["skills"]}
    assert by_name["hello"]["layer"] == "project"
    assert by_name["hello"]["path"] == str(skill / "SKILL.md")
    assert {"review", "commit", "init"} <= set(by_name)
    text = aimon(None, repo, "agents", "list")
    assert text.returncode == 0, text.stderr
    assert "code-reviewer" in text.stdout and "builtin" in text.stdout
    agents = json.loads(aimon(None, repo, "agents", "list", "--json").stdout)
    assert [f["path"] for f in agents["failures"]] == [str(repo / ".aimon/agents/broken.md")] or \
        any(e["name"] == "broken" and e["warnings"] for e in agents["agents"])
