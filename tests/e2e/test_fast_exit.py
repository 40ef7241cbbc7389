"""End to end: print mode leaves without the interpreter's teardown, and loses nothing.

`aimon -p` ends with `os._exit` once the session is closed (aimon_cli/_exit.py). These runs
kill the process group the moment the process is reaped, then check that the output, the
SessionEnd hook's work and the whole session record were there: a resumed session shows the
model every message of the first turn.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall

from .conftest import AIMON, MODEL_ARGS, PROVIDER, aimon_env


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    return project


def run_and_kill(server: LoopbackModelServer, cwd: Path, *args: str) -> tuple[int, str, str]:
    """Run aimon in its own process group; SIGKILL the group as soon as aimon is reaped."""
    proc = subprocess.Popen([AIMON, *MODEL_ARGS, *args], cwd=cwd, env=aimon_env(server),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, text=True)
    out, err = proc.communicate(timeout=60)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, out, err


def session_end_hook(tmp_path: Path) -> Path:
    """Install a user SessionEnd hook that writes a file; return the file."""
    marker = tmp_path / "session-ended"
    config = Path(os.environ["AIMON_HOME"]) / "config"
    config.mkdir(parents=True, exist_ok=True)
    command = f"{sys.executable} -c \"open({str(marker)!r}, 'w').write('ended')\""
    (config / "settings.json").write_text(json.dumps({"hooks": {"SessionEnd": [
        {"hooks": [{"type": "command", "command": command}]}]}}))
    return marker


def test_print_mode_writes_everything_before_it_exits(repo: Path, tmp_path: Path) -> None:
    marker = session_end_hook(tmp_path)
    calc = str(repo / "calc.py")
    with LoopbackModelServer(provider=PROVIDER) as server:
        server.add(
            Reply(text="Looking.", tool_calls=(
                ScriptedToolCall(name="Read", input={"file_path": calc}),)),
            Reply(tool_calls=(ScriptedToolCall(name="Edit", input={
                "file_path": calc, "old_string": "a - b", "new_string": "a + b"}),)),
            Reply(text="Fixed the sign in `add`."),
            Reply(text="It adds now."),
        )
        code, out, err = run_and_kill(server, repo, "-p", "fix add", "--output-format", "json",
                                      "--allowed-tools", "Edit")
        assert code == 0, err
        result = json.loads(out)  # the whole output line, flushed before the exit
        assert result["result"] == "Fixed the sign in `add`."
        assert marker.read_text() == "ended"  # SessionEnd ran before the exit
        first_turn = server.requests[-1].conversation()

        code, out, err = run_and_kill(server, repo, "-p", "does it add?",
                                      "-r", result["session_id"])
        assert code == 0, err
        assert out == "It adds now.\n"
    resumed = server.requests[-1].conversation()
    # Everything the first turn sent, its final answer, then the new prompt: nothing missing.
    assert len(resumed) == len(first_turn) + 2
    assert [role for role, _ in resumed[: len(first_turn)]] == [role for role, _ in first_turn]
    assert resumed[len(first_turn)][0] == "assistant"
    assert "Fixed the sign" in resumed[len(first_turn)][1]
    assert "does it add?" in resumed[-1][1]
