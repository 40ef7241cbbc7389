"""End to end through `aimon -p`: deny rules hold against other spellings and other tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall

AIMON = str(Path(sys.executable).with_name("aimon"))


@pytest.fixture
def server() -> Iterator[LoopbackModelServer]:
    with LoopbackModelServer(provider="openai") as srv:
        yield srv


def _results(server: LoopbackModelServer) -> list[str]:
    return list(server.requests[-1].tool_results().values())


def test_print_mode_refuses_ways_around_deny_rules(tmp_path: Path,
                                                   server: LoopbackModelServer) -> None:
    repo = tmp_path / "proj"
    (repo / ".aimon").mkdir(parents=True)
    (repo / ".env").write_text("KEY=very-secret\n")
    (repo / "app.py").write_text("KEY = 'public'\n")
    (repo / ".aimon" / "settings.json").write_text(json.dumps(
        {"permissions": {"deny": ["Read(./.env)", "Bash(touch:*)"]}}))
    calls = (
        ScriptedToolCall(name="Grep", input={"pattern": "KEY", "output_mode": "content"}),
        ScriptedToolCall(name="Bash", input={"command": "echo 'touch y' | bash"}),
        ScriptedToolCall(name="Bash", input={"command": "cat .env"}),
        ScriptedToolCall(name="Bash", input={"command": "ls"}),
    )
    server.add(Reply(tool_calls=calls), Reply(text="done"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="k", OPENAI_BASE_URL=server.base_url,
               AIMON_NO_LOCAL_PROBE="1", AIMON_HOME=str(tmp_path / "home"))
    done = subprocess.run(
        [AIMON, "--provider", "openai", "--model", "gpt-5.4", "-p", "go", "--allowed-tools",
         "Bash"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    grep, piped, cat, ls = _results(server)
    assert "very-secret" not in grep and "app.py" in grep and "Skipped 1 path" in grep
    assert "Permission needed" in piped and not (repo / "y").exists()
    assert "Permission needed" in cat and "very-secret" not in cat
    assert "app.py" in ls
