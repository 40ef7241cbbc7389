"""What aimon loads to start: `--version` next to nothing, a first prompt what it uses.

Every module and every dataclass loaded is executed, or compiled, again at each start (Python
3.11 compiles ~6 methods a dataclass): one loaded for nothing is paid by every `aimon -p`.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall
from tests.cli.conftest import MODEL, PROVIDER, provider_env

# Runs the command in-process and prints the modules loaded, where aimon would have exited.
LOADED = textwrap.dedent("""
    import json, sys
    from aimon_cli import _exit, app

    def noted_leave(code):
        sys.stdout.write("\\n" + json.dumps({"exit": code, "loaded": sorted(sys.modules)}))
        sys.stdout.flush()
        _exit.os._exit(0)

    _exit.leave = noted_leave
    app.main(sys.argv[1:])
    noted_leave(0)
""")


def _loaded(args: list[str], cwd: Path, env: dict[str, str]) -> list[str]:
    done = subprocess.run([sys.executable, "-c", LOADED, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    noted = json.loads(done.stdout.splitlines()[-1])
    assert noted["exit"] == 0, done.stderr
    loaded: list[str] = noted["loaded"]
    return loaded


def test_version_loads_no_typing_and_no_part_of_the_core(tmp_path: Path) -> None:
    # Nothing but the command itself imported around it (json, say, is not).
    code = ("import sys\nfrom aimon_cli import app\napp.main(['--version'])\n"
            "sys.stdout.write(repr(sorted(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, check=True)
    version, loaded = done.stdout.split("\n", 1)
    assert version.startswith("aimon ")
    assert "'typing'" not in loaded  # ~2 ms: most of `aimon --version` when it was imported
    assert [m for m in ast.literal_eval(loaded) if m.startswith("aimon_core.")] == [
        "aimon_core._lazy"]


def test_a_first_prompt_without_hooks_loads_no_hook_input_nor_the_other_provider(
        tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("one\n")
    script = [Reply(tool_calls=(ScriptedToolCall(name="Read", input={"file_path": "notes.txt"}),)),
              Reply(text="It says one.")]
    with LoopbackModelServer(script, provider=PROVIDER) as server:
        env = {**os.environ, **provider_env(server), "AIMON_NO_LOCAL_PROBE": "1"}
        loaded = _loaded(["--provider", PROVIDER, "--model", MODEL, "-p", "read notes.txt"],
                         tmp_path, env)
        assert server.requests[-1].tool_results()  # the Read ran (gate, hooks' checks, tool)
    assert "aimon_core.hook._events" not in loaded  # built only when a hook fires
    assert "aimon_core.hook._lifecycle" in loaded
    assert PROVIDER == "openai" and "aimon_core.llm._anthropic" not in loaded
