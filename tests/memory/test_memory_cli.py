"""`aimon memory list|add|accept|rm [--json]` and `# text` in print mode, as a person runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from aimon_core.memory import (
    FileObservationStore,
    MemoryBook,
    MemoryScope,
    MemorySource,
    owner_for,
)
from aimon_core.testing import LoopbackModelServer

AIMON = str(Path(sys.executable).with_name("aimon"))


def aimon(project: Path, *args: str, env: dict[str, str] | None = None
          ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AIMON, *args], cwd=project, capture_output=True, text=True,
                          timeout=60, env={**os.environ, **(env or {})}, check=False)


def test_add_list_accept_rm(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    book = MemoryBook(FileObservationStore(Path(os.environ["AIMON_HOME"]) / "data" / "memory"),
                      owner_for(project.resolve(), "default"))
    proposal = book.propose("the parser is hand-written", MemoryScope.PROJECT,
                            MemorySource.MODEL)
    added = aimon(project, "memory", "add", "--scope", "user", "answer", "briefly")
    assert added.returncode == 0, added.stderr
    listed = json.loads(aimon(project, "memory", "list", "--json").stdout)
    assert [(e["text"], e["status"], e["scope"]) for e in listed] == [
        ("answer briefly", "accepted", "user"),
        ("the parser is hand-written", "proposed", "project")]
    assert aimon(project, "memory", "accept", proposal.id).returncode == 0
    assert book.inbox() == () and len(book.accepted()) == 2
    assert aimon(project, "memory", "rm", "nope").returncode == 1
    removed = aimon(project, "memory", "rm", "--json", proposal.id)
    assert json.loads(removed.stdout) == {"removed": [proposal.id], "missing": []}
    assert "the parser" not in aimon(project, "memory", "list").stdout


def test_hash_note_in_print_mode(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    with LoopbackModelServer(provider="openai") as server:  # asked nothing: no request
        done = aimon(project, "--provider", "openai", "--model", "gpt-5.4", "-p",
                     "# the CI runs on Debian",
                     env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.base_url,
                          "AIMON_NO_LOCAL_PROBE": "1"})
        assert server.requests == []
    assert done.returncode == 0, done.stderr
    assert "Remembered (project" in done.stdout
    assert "the CI runs on Debian" in aimon(project, "memory", "list").stdout
