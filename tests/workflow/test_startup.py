"""`aimon --version` and the print path never load the workflow package unless one is used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aimon_core.testing import LoopbackModelServer, Reply
from tests.workflow.conftest import SURVEY

# Runs aimon in-process and prints, where it would exit, which workflow modules it loaded.
NOTED = textwrap.dedent("""
    import json, sys
    from aimon_cli import _exit, app

    def noted_leave(code):
        loaded = sorted(m for m in sys.modules if m.startswith("aimon_core.workflow"))
        sys.stdout.write("\\n" + json.dumps({"loaded": loaded, "exit": code}) + "\\n")
        sys.stdout.flush()
        _exit.os._exit(0)

    _exit.leave = noted_leave
    app.main(sys.argv[1:])
    noted_leave(0)  # --version returns without leaving
""")


def loaded(cwd: Path, server: LoopbackModelServer | None, *args: str) -> list[str]:
    env = {**os.environ, "AIMON_NO_LOCAL_PROBE": "1"}
    if server is not None:
        env.update(OPENAI_API_KEY="k", OPENAI_BASE_URL=server.base_url)
    done = subprocess.run([sys.executable, "-c", NOTED, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    notes = json.loads(done.stdout.splitlines()[-1])
    assert notes["exit"] == 0, done.stderr
    return list(notes["loaded"])


def test_version_loads_nothing_of_workflows(tmp_path: Path) -> None:
    assert loaded(tmp_path, None, "--version") == []


@pytest.mark.parametrize("with_workflow", [False, True])
def test_the_print_path_loads_workflows_only_where_there_are_some(
        tmp_path: Path, with_workflow: bool) -> None:
    if with_workflow:
        (tmp_path / ".aimon" / "workflows").mkdir(parents=True)
        (tmp_path / ".aimon" / "workflows" / "survey.yaml").write_text(SURVEY)
    with LoopbackModelServer([Reply(text="one")], provider="openai") as server:
        modules = loaded(tmp_path, server, "--provider", "openai", "--model", "gpt-5.4",
                         "-p", "hello")
        tools = server.requests[0].tool_names()
    assert ("Workflow" in tools) is with_workflow
    assert bool(modules) is with_workflow
