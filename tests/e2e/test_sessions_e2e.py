"""End to end: print mode stores sessions; resume, continue, crash mid-turn, two holders."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from aimon_core.agent import repair_tool_pairs
from aimon_core.session import FileSessionRecordStore, parse_session_id
from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall, StallStream

from .conftest import AIMON, MODEL_ARGS, aimon_env, stored_session


def aimon(server: LoopbackModelServer, cwd: Path, *args: str
          ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AIMON, *MODEL_ARGS, *args], cwd=cwd, env=aimon_env(server),
                          capture_output=True, text=True, timeout=60, check=False)


def store() -> FileSessionRecordStore:
    return FileSessionRecordStore(Path(os.environ["AIMON_HOME"]) / "data")


def kill_orphans_in(folder: Path) -> None:
    """Kill what the killed aimon left running in `folder` (its Bash tool's process group)."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cwd").readlink() == folder:
                    os.kill(int(entry.name), signal.SIGKILL)
            except OSError:
                continue


def test_print_mode_sessions_resume_and_continue(tmp_path: Path,
                                                 server: LoopbackModelServer) -> None:
    server.add(Reply(text="first"), Reply(text="second"), Reply(text="third"))
    first = aimon(server, tmp_path, "-p", "one", "--output-format", "json")
    session_id = json.loads(first.stdout)["session_id"]
    second = aimon(server, tmp_path, "-p", "--resume", session_id, "two",
                   "--output-format", "json")
    assert json.loads(second.stdout)["session_id"] == session_id
    third = aimon(server, tmp_path, "-p", "--continue", "three")
    assert third.returncode == 0 and third.stdout.strip() == "third"
    sent = json.dumps(server.requests[-1].conversation())
    assert sent.count("first") == 1 and "second" in sent
    record = store().load(parse_session_id(session_id))
    assert record.totals.turns == 3
    assert [m.role for m in record.transcript.messages] == ["user", "assistant"] * 3
    listed = subprocess.run([AIMON, "sessions", "list"], cwd=tmp_path, env=aimon_env(server),
                            capture_output=True, text=True, check=True)
    assert session_id in listed.stdout


def test_kill_9_mid_turn_then_resume(tmp_path: Path, server: LoopbackModelServer) -> None:
    server.add(Reply(tool_calls=(ScriptedToolCall(name="Bash", input={
        "command": "sleep 30"}),)), Reply(text="recovered"))
    with subprocess.Popen([AIMON, *MODEL_ARGS, "-p", "start",
                           "--allowed-tools", "Bash(sleep:*)", "--output-format", "stream-json"],
                          cwd=tmp_path, env=aimon_env(server), stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True) as proc:
        assert proc.stdout is not None
        session_id = json.loads(proc.stdout.readline())["session_id"]
        for line in proc.stdout:
            if json.loads(line)["type"] == "tool_use":
                break
        time.sleep(0.3)  # let the tool start; the transcript already holds the tool_use
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    kill_orphans_in(tmp_path)
    record = store().load(parse_session_id(session_id))
    assert record.transcript.messages[-1].tool_uses  # the call never got its result
    done = aimon(server, tmp_path, "-p", "--resume", session_id, "go on")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "recovered"
    # One result for the call, marked as an error (OpenAI's wire: an "Error: " prefix).
    (result,) = server.requests[-1].tool_results().values()
    assert result.startswith("Error: ")
    record = store().load(parse_session_id(session_id))
    assert not record.load_warnings
    messages = list(record.transcript.messages)
    assert repair_tool_pairs(messages)[-1].text == "recovered"


def test_second_process_on_a_session_is_refused(tmp_path: Path,
                                                server: LoopbackModelServer) -> None:
    # The holder stalls mid-answer until the test ends, however slow the second start is.
    server.add(StallStream(reply=Reply(text="slow"), after_events=2, seconds=120,
                           released=True))
    session_id = stored_session(tmp_path)
    with subprocess.Popen([AIMON, *MODEL_ARGS, "-p", "--resume", session_id, "hold it"],
                          cwd=tmp_path, env=aimon_env(server), stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL) as holder:
        try:
            deadline = time.monotonic() + 60
            while not server.requests and time.monotonic() < deadline:
                time.sleep(0.05)
            size_before = store().path_of(parse_session_id(session_id)).stat().st_size
            second = aimon(server, tmp_path, "-p", "--resume", session_id, "me too")
            assert second.returncode == 1
            assert "pid" in second.stderr and str(holder.pid) in second.stderr
            assert store().path_of(parse_session_id(session_id)).stat().st_size == size_before
        finally:
            holder.kill()
            holder.wait(10)
    record = store().load(parse_session_id(session_id))
    assert not record.load_warnings


def test_an_unusable_data_folder_is_one_clear_error(tmp_path: Path,
                                                    server: LoopbackModelServer) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "data").write_text("a file where the data folder should be")
    env = aimon_env(server, AIMON_HOME=str(home))
    done = subprocess.run([AIMON, *MODEL_ARGS, "-p", "hi"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    assert "aimon: cannot use the session store" in done.stderr
    assert "Traceback" not in done.stderr
