"""`aimon auth login|status|logout` and `--profile`, end to end against the loopback server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from aimon_core.session import user_data_dir
from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall
from tests.e2e.conftest import AIMON, MODEL, PROVIDER

KEY = "sk-work-0123456789abcdef"


def _aimon(*args: str, stdin: str = "", cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "OPENAI_", "AIMON_PROVIDER", "AIMON_MODEL"))}
    env["AIMON_NO_LOCAL_PROBE"] = "1"
    return subprocess.run([AIMON, *args], input=stdin, capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=60)


def test_a_profile_runs_with_its_stored_key_and_the_key_is_stored_nowhere_else(
        tmp_path: Path) -> None:
    with LoopbackModelServer(provider=PROVIDER) as server:
        # A file of the project holds the key and the model reads it: what the model is sent
        # back, and the session file, have the key redacted.
        (tmp_path / "notes.txt").write_text(f"the key is {KEY}\n")
        server.add(Reply(tool_calls=(ScriptedToolCall(
            name="Read", input={"file_path": str(tmp_path / "notes.txt")}),)),
                   Reply(text="hello from work"))
        login = _aimon("auth", "login", "work", "--provider", PROVIDER, "--base-url",
                       server.base_url, "--model", MODEL, stdin=KEY + "\n", cwd=tmp_path)
        assert login.returncode == 0, login.stderr
        assert KEY not in login.stdout + login.stderr
        status = _aimon("auth", "status", cwd=tmp_path)
        assert f"profile work: {PROVIDER}, {server.base_url}, {MODEL}; key stored" in status.stdout
        assert KEY not in status.stdout + status.stderr
        run = _aimon("--profile", "work", "-p", "hi", cwd=tmp_path)
        assert run.returncode == 0, run.stderr
        assert run.stdout.strip() == "hello from work"
        assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"
        assert "the key is" in json.dumps(server.requests[-1].body)
        assert KEY not in json.dumps(server.requests[-1].body)
    sessions = list((user_data_dir() / "projects").rglob("*.jsonl"))
    assert sessions and all(KEY not in path.read_text() for path in sessions)
    logout = _aimon("auth", "logout", "work", cwd=tmp_path)
    assert logout.returncode == 0 and "Removed work and its profile." in logout.stdout
    unknown = _aimon("--profile", "work", "-p", "hi", cwd=tmp_path)
    assert unknown.returncode != 0 and "profile 'work': no such profile" in unknown.stderr


def test_a_stored_provider_key_is_used_without_any_in_the_environment(tmp_path: Path) -> None:
    with LoopbackModelServer(provider=PROVIDER) as server:
        server.add(Reply(text="stored key works"))
        assert _aimon("auth", "login", PROVIDER, stdin=KEY + "\n", cwd=tmp_path).returncode == 0
        env_url = {"OPENAI_BASE_URL": server.base_url}
        run = subprocess.run([AIMON, "--model", MODEL, "-p", "hi"], capture_output=True,
                             text=True, cwd=tmp_path, timeout=60,
                             env={**{k: v for k, v in os.environ.items()
                                     if not k.startswith("OPENAI_")},
                                  **env_url, "AIMON_NO_LOCAL_PROBE": "1"})
        assert run.returncode == 0, run.stderr
        assert server.requests[-1].headers["authorization"] == f"Bearer {KEY}"


def test_login_refuses_a_profile_without_a_provider_and_an_empty_key(tmp_path: Path) -> None:
    assert "needs its provider" in _aimon("auth", "login", "work", stdin="k\n",
                                          cwd=tmp_path).stderr
    empty = _aimon("auth", "login", "openai", stdin="\n", cwd=tmp_path)
    assert empty.returncode == 1 and "no key given" in empty.stderr
