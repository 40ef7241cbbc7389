"""End to end: permission modes, settings files, trust and hooks through the `aimon` command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall

from .conftest import AIMON, MODEL_ARGS, aimon_env


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "calc.py").write_text("x = 1\n")
    return project


def aimon(server: LoopbackModelServer, cwd: Path, *args: str
          ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AIMON, *MODEL_ARGS, "-p", "go", *args], cwd=cwd,
                          env=aimon_env(server), capture_output=True, text=True, timeout=60,
                          check=False)


def results(server: LoopbackModelServer) -> list[str]:
    """Tool result texts in the last request, in order."""
    return list(server.requests[-1].tool_results().values())


def edit_call(repo: Path) -> Reply:
    calc = str(repo / "calc.py")
    return Reply(tool_calls=(ScriptedToolCall(name="Read", input={"file_path": calc}),
                             ScriptedToolCall(name="Edit", input={
                                 "file_path": calc, "old_string": "x = 1",
                                 "new_string": "x = 2"})))


def test_accept_edits_mode_allows_edits_not_commands(repo: Path,
                                                      server: LoopbackModelServer) -> None:
    server.add(edit_call(repo),
               Reply(tool_calls=(ScriptedToolCall(name="Bash", input={"command": "touch y"}),)),
               Reply(text="ok"))
    done = aimon(server, repo, "--permission-mode", "acceptEdits")
    assert done.returncode == 0, done.stderr
    assert (repo / "calc.py").read_text() == "x = 2\n"
    assert not (repo / "y").exists()
    assert "--allowed-tools" in results(server)[-1]


def test_plan_mode_refuses_writes(repo: Path, server: LoopbackModelServer) -> None:
    server.add(edit_call(repo), Reply(text="Here is my plan."))
    done = aimon(server, repo, "--permission-mode", "plan", "--allowed-tools", "Edit")
    assert done.returncode == 0, done.stderr
    assert (repo / "calc.py").read_text() == "x = 1\n"
    assert "plan" in results(server)[-1].lower()


def test_untrusted_project_settings_are_held_back(repo: Path,
                                                  server: LoopbackModelServer) -> None:
    (repo / ".aimon").mkdir()
    (repo / ".aimon" / "settings.json").write_text(json.dumps(
        {"permissions": {"allow": ["Edit"], "deny": ["Read(./secret.txt)"]}}))
    (repo / "secret.txt").write_text("hunter2")
    server.add(edit_call(repo),
               Reply(tool_calls=(ScriptedToolCall(name="Read", input={
                   "file_path": str(repo / "secret.txt")}),)),
               Reply(text="ok"))
    done = aimon(server, repo)
    assert done.returncode == 0, done.stderr
    assert "not trusted" in done.stderr
    assert (repo / "calc.py").read_text() == "x = 1\n"
    last = results(server)[-1]
    assert "hunter2" not in last and "denied" in last.lower()


def test_broken_settings_stop_start_up(repo: Path, server: LoopbackModelServer) -> None:
    (repo / ".aimon").mkdir()
    (repo / ".aimon" / "settings.json").write_text('{"permissions": {"deny": [5]}}')
    done = aimon(server, repo)
    assert done.returncode == 2
    assert "settings.json" in done.stderr and "permissions.deny[0]" in done.stderr
    assert server.requests == []


def test_user_hook_blocks_rm_even_when_a_rule_allows_it(
    repo: Path, server: LoopbackModelServer, tmp_path: Path
) -> None:
    hook = tmp_path / "no_rm.py"
    hook.write_text("import json, sys\nevent = json.load(sys.stdin)\n"
                    "if event['tool_input']['command'].startswith('rm'):\n"
                    "    print('rm is blocked by policy', file=sys.stderr)\n    sys.exit(2)\n")
    config = Path(os.environ["AIMON_HOME"]) / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "command",
                                       "command": f"{sys.executable} {hook}"}]}]}}))
    server.add(Reply(tool_calls=(ScriptedToolCall(name="Bash", input={
        "command": "rm calc.py"}),)), Reply(text="I could not delete it."))
    done = aimon(server, repo, "--allowed-tools", "Bash(rm:*)")
    assert done.returncode == 0, done.stderr
    assert (repo / "calc.py").exists()
    assert "rm is blocked by policy" in results(server)[-1]


def test_disallowed_beats_allowed(repo: Path, server: LoopbackModelServer) -> None:
    server.add(Reply(tool_calls=(ScriptedToolCall(name="Bash", input={
        "command": "touch made"}),)), Reply(text="ok"))
    done = aimon(server, repo, "--allowed-tools", "Bash", "--disallowed-tools", "Bash(touch:*)")
    assert done.returncode == 0, done.stderr
    assert not (repo / "made").exists()
    assert "denied" in results(server)[-1].lower()
