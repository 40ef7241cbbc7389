"""The knowledge store: the SQLite backend passes the contract; KnowledgeSearch finds passages."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aimon_core.filesystem import LocalFileSystem
from aimon_core.knowledge import (
    KnowledgeStore,
    LazyKnowledge,
    SQLiteKnowledgeStore,
    knowledge_tools,
    project_knowledge,
)
from aimon_core.shell import LocalShell
from aimon_core.testing import KnowledgeStoreContract
from aimon_core.tools import ToolContext, ToolResult, ToolState, execute_tool


class TestSQLiteKnowledgeStore(KnowledgeStoreContract):
    @pytest.fixture(autouse=True)
    def _where(self, tmp_path: Path) -> None:
        self.path = tmp_path / "k" / "index.sqlite"

    def make_store(self) -> KnowledgeStore:
        return SQLiteKnowledgeStore(self.path)


def search(project: Path, data: Path, **tool_input: object) -> ToolResult:
    provider = knowledge_tools(LazyKnowledge(lambda: project_knowledge(project, data)))
    [tool] = provider.provided
    ctx = ToolContext(project_root=project, cwd=project, fs=LocalFileSystem(project),
                      shell=LocalShell(), state=ToolState())
    return asyncio.run(execute_tool(tool, tool_input, ctx))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "docs" / "deep").mkdir(parents=True)
    (root / "README.md").write_text("# Demo\n\nA demo project.\n")
    (root / "docs" / "deep" / "release.md").write_text(
        "# Intro\n\nSome words.\n\n# Releasing\n\nTag the commit, then the pipeline "
        "publishes the wheel to the registry.\n")
    (root / "docs" / "image.png").write_bytes(b"\x89PNG\0\0")
    return root


def test_knowledge_search_finds_a_passage_in_an_indexed_folder(tmp_path: Path,
                                                                project: Path) -> None:
    base = project_knowledge(project, tmp_path / "data")
    report = asyncio.run(base.add(("docs",)))
    assert report.documents == 1 and report.passages == 2
    result = search(project, tmp_path / "data", query="how is the wheel published?")
    assert not result.is_error
    assert result.text.startswith("docs/deep/release.md:5\n# Releasing")
    assert base.recorded() == ("docs",)


def test_index_reads_the_defaults_again_and_forgets_what_is_gone(tmp_path: Path,
                                                                 project: Path) -> None:
    base = project_knowledge(project, tmp_path / "data")
    asyncio.run(base.index())
    assert base.store.sources() == ("README.md", "docs/deep/release.md")
    (project / "docs" / "deep" / "release.md").unlink()
    asyncio.run(base.index())
    assert base.store.sources() == ("README.md",)


def test_the_wiki_is_searchable_as_soon_as_a_page_is_written(tmp_path: Path,
                                                             project: Path) -> None:
    assert "No passage matches" in search(project, tmp_path / "d", query="flaky").text
    wiki = project / ".aimon" / "wiki"
    wiki.mkdir(parents=True)
    (wiki / "tests.md").write_text("# Tests\n\nThe socket test is flaky under load.\n")
    result = search(project, tmp_path / "d", query="flaky")
    assert result.text.startswith(".aimon/wiki/tests.md:1\n")


def test_a_link_out_of_the_project_is_not_indexed(tmp_path: Path, project: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("TOP SECRET plans\n")
    (project / "docs" / "leak.md").symlink_to(secret)
    base = project_knowledge(project, tmp_path / "data")
    asyncio.run(base.add(("docs",)))
    assert base.store.search("secret plans", 5) == ()


def test_the_command_line(tmp_path: Path, project: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    aimon = str(Path(sys.executable).with_name("aimon"))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([aimon, "knowledge", *args], cwd=project, capture_output=True,
                              text=True, timeout=60, env=dict(os.environ), check=False)

    added = run("add", "docs", "README.md")
    assert added.returncode == 0 and "Indexed 2 documents, 3 passages." in added.stdout
    found = json.loads(run("search", "--json", "wheel", "registry").stdout)
    assert found[0]["source"] == "docs/deep/release.md" and found[0]["line"] == 5
    assert "docs, README.md" in run("list").stdout
    assert run("index").returncode == 0
