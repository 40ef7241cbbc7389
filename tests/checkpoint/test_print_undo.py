"""`aimon -p --resume ID "/undo"`: the real command, a loopback model, real files and git."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aimon_core.session import FileSessionRecordStore, user_data_dir
from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall
from tests.checkpoint.conftest import git_state, make_git_repo, make_project, tree_state

AIMON = str(Path(sys.executable).with_name("aimon"))


@pytest.fixture
def server() -> Iterator[LoopbackModelServer]:
    with LoopbackModelServer(provider="openai") as srv:
        yield srv


def aimon(server: LoopbackModelServer, cwd: Path, *args: str
          ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="k", OPENAI_BASE_URL=server.base_url, AIMON_NO_LOCAL_PROBE="1")
    return subprocess.run([AIMON, "--provider", "openai", "--model", "gpt-5.4", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=60, check=False)


def test_print_mode_undo_restores_and_says_what(tmp_path: Path,
                                                server: LoopbackModelServer) -> None:
    root = make_project(tmp_path / "proj")
    make_git_repo(root)
    before, git_before = tree_state(root), git_state(root)
    server.add(Reply(tool_calls=(ScriptedToolCall(name="Read", input={
        "file_path": str(root / "src" / "a.py")}),)),
        Reply(tool_calls=(ScriptedToolCall(name="Write", input={
        "file_path": str(root / "src" / "a.py"), "content": "gone = True\n"}),)),
        Reply(text="Rewrote it."))
    done = aimon(server, root, "--permission-mode", "acceptEdits", "-p", "rewrite a.py")
    assert done.returncode == 0, done.stderr
    assert (root / "src" / "a.py").read_text() == "gone = True\n"
    (session,) = FileSessionRecordStore(user_data_dir()).list_sessions(str(root.resolve()), 5)
    undone = aimon(server, root, "-p", "--resume", session.id, "/undo")
    assert undone.returncode == 0, undone.stderr
    assert "Restored the files as they were before prompt 1 ('rewrite a.py')" in undone.stdout
    assert "changed src/a.py" in undone.stdout
    assert tree_state(root) == before
    assert git_state(root) == git_before
