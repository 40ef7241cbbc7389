"""End to end: no credentials reach the model; crash recovery tells the truth; clean faults."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from aimon_core.agent import MAY_HAVE_RUN_RESULT
from aimon_core.session import FileSessionRecordStore, parse_session_id
from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall

from .conftest import AIMON, MODEL_ARGS, aimon_env, stored_session

KEY = "sk-proj-e2e-0123456789abcdef0123"
KEY_VAR = "OPENAI_API_KEY"
"""The key of the provider aimon talks to (conftest.PROVIDER)."""


def env_for(server: LoopbackModelServer) -> dict[str, str]:
    env: dict[str, str] = aimon_env(server, **{KEY_VAR: KEY})
    return env


def aimon(server: LoopbackModelServer, cwd: Path, *args: str
          ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AIMON, *MODEL_ARGS, *args], cwd=cwd, env=env_for(server),
                          capture_output=True, text=True, timeout=60, check=False)


def store() -> FileSessionRecordStore:
    return FileSessionRecordStore(Path(os.environ["AIMON_HOME"]) / "data")


def user_settings(settings: dict[str, object]) -> None:
    config = Path(os.environ["AIMON_HOME"]) / "config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps(settings))


def test_the_key_never_reaches_the_model(tmp_path: Path, server: LoopbackModelServer) -> None:
    (tmp_path / ".env").write_text(f"{KEY_VAR}={KEY}\n")
    server.add(
        Reply(tool_calls=(ScriptedToolCall(name="Bash", input={"command": "printenv"}),
                          ScriptedToolCall(name="Read", input={
                              "file_path": str(tmp_path / ".env")}))),
        Reply(text="done"))
    done = aimon(server, tmp_path, "-p", "look", "--output-format", "stream-json",
                 "--allowed-tools", "Bash(printenv)")
    assert done.returncode == 0, done.stderr
    assert KEY not in done.stdout
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    results = [line for line in lines if line["type"] == "tool_result"]
    assert len(results) == 2
    redacted = f"[REDACTED:{KEY_VAR}]"
    assert "PATH=" in results[0]["content"] and KEY_VAR not in results[0]["content"]
    assert results[1]["content"].count(redacted) == 1

    sent = json.dumps(server.requests[-1].body)
    assert KEY not in sent and redacted in sent
    session_id = parse_session_id(lines[0]["session_id"])
    stored = store().path_of(session_id).read_text()
    assert KEY not in stored and redacted in stored


def test_passthrough_setting_passes_a_named_token(tmp_path: Path,
                                                  server: LoopbackModelServer) -> None:
    user_settings({"shellEnvPassthrough": ["MY_SERVICE_TOKEN", KEY_VAR]})
    calls = tuple(ScriptedToolCall(name="Bash", input={"command": f"printenv {name}"})
                  for name in ("MY_SERVICE_TOKEN", "OTHER_TOKEN", KEY_VAR))
    server.add(Reply(tool_calls=calls), Reply(text="done"))
    env = {**env_for(server), "MY_SERVICE_TOKEN": "t" * 12, "OTHER_TOKEN": "o" * 12}
    done = subprocess.run([AIMON, *MODEL_ARGS, "-p", "go",
                           "--allowed-tools", "Bash(printenv:*)"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    passed, scrubbed, key = server.requests[-1].tool_results().values()
    # Passed through to the command, and still redacted from what the model reads.
    assert passed.strip() == "[REDACTED:MY_SERVICE_TOKEN]"
    assert "o" * 12 not in scrubbed and "exit code 1" in scrubbed.lower()
    assert KEY not in key and "REDACTED" not in key  # a provider key never passes


def test_kill_9_after_write_then_resume_says_it_may_have_run(
    tmp_path: Path, server: LoopbackModelServer
) -> None:
    project, marker = tmp_path / "proj", tmp_path / "hook.pid"
    project.mkdir()
    # The PostToolUse hook runs after Write wrote the file and before its result is stored.
    user_settings({"hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [
        {"type": "command", "command": f"echo $$ > {marker}; exec sleep 60", "timeout": 120}]}]}})
    target = project / "out.txt"
    server.add(Reply(tool_calls=(ScriptedToolCall(name="Write", input={
        "file_path": str(target), "content": "written\n"}),)), Reply(text="checked"))
    with subprocess.Popen([AIMON, *MODEL_ARGS, "-p", "write it",
                           "--allowed-tools", "Write", "--output-format", "stream-json"],
                          cwd=project, env=env_for(server), stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as proc:
        assert proc.stdout is not None
        session_id = json.loads(proc.stdout.readline())["session_id"]
        deadline = time.monotonic() + 30
        while not (marker.exists() and marker.read_text().strip()):
            assert time.monotonic() < deadline, "the hook never ran"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    os.kill(int(marker.read_text()), signal.SIGKILL)
    assert target.read_text() == "written\n"

    done = aimon(server, project, "-p", "--resume", session_id, "go on")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "checked"
    (text,) = server.requests[-1].tool_results().values()
    assert text == f"Error: {MAY_HAVE_RUN_RESULT}"  # an error result on OpenAI's wire
    record = store().load(parse_session_id(session_id))
    assert record.started_tool_ids == () and not record.load_warnings


def test_a_fifo_session_file_is_an_error_not_a_hang(tmp_path: Path,
                                                    server: LoopbackModelServer) -> None:
    session_id = stored_session(tmp_path)
    path = store().path_of(session_id)
    path.unlink()
    os.mkfifo(path)
    resumed = aimon(server, tmp_path, "-p", "--resume", session_id, "again")
    assert resumed.returncode == 1
    assert "named pipe" in resumed.stderr and "Traceback" not in resumed.stderr
    listed = subprocess.run([AIMON, "sessions", "list"], cwd=tmp_path, env=env_for(server),
                            capture_output=True, text=True, timeout=60, check=False)
    assert listed.returncode == 0 and "Traceback" not in listed.stderr


def test_a_sessions_folder_that_is_a_file_is_one_message(tmp_path: Path,
                                                         server: LoopbackModelServer) -> None:
    data = Path(os.environ["AIMON_HOME"]) / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "projects").write_text("not a folder")
    done = aimon(server, tmp_path, "-p", "hi")
    assert done.returncode != 0
    assert "aimon: " in done.stderr and "Traceback" not in done.stderr


HOOK_FAILURES = {
    "echo boom >&2; exit 1": "failed with exit code 1: boom",
    "echo '{not json'": "invalid JSON",
    "sleep 30": "timed out",
}
"""A failing hook's command -> what print mode reports on stderr."""


def test_hook_failures_are_reported_in_print_mode(tmp_path: Path,
                                                  server: LoopbackModelServer) -> None:
    user_settings({"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": command, "timeout": 1} for command in HOOK_FAILURES]}]}})
    server.add(Reply(text="answer"))
    done = aimon(server, tmp_path, "-p", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "answer"
    assert done.stderr.count("aimon: hook") >= len(HOOK_FAILURES), done.stderr
    for command, expected in HOOK_FAILURES.items():
        assert expected in done.stderr, f"{command!r}: {done.stderr!r}"
