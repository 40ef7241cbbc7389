"""Class: git that aimon runs by itself, in a repository whose configuration runs code.

aimon describes the repository in the system prompt at every session start, before the user
has said anything, in every permission mode. The table is every hostile layout (`_hostile`)
by every folder it can be entered from by every git call aimon makes by itself (today the one
description; a new call site is one more row of `OWN_GIT_CALLS`). No marker may appear.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from aimon_core.agent import gather_environment_sync

from ._hostile import LAYOUTS, Layout, bare_config, bare_looking
from .conftest import make_repo

OWN_GIT_CALLS: tuple[tuple[str, Callable[[Path], object]], ...] = (
    ("describe_repository", lambda start: gather_environment_sync(start, start)),
)

CASES = [
    pytest.param(layout, start, call, id=f"{layout.id}-{start or 'root'}-{name}")
    for layout in LAYOUTS for start in layout.starts for name, call in OWN_GIT_CALLS
]


def _build(layout: Layout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project, outside, marks = tmp_path / "proj", tmp_path / "outside", tmp_path / "mark"
    for folder in (project, outside, marks):
        folder.mkdir()
    layout.build(project, outside, marks / "ran")
    for name, value in layout.env:
        monkeypatch.setenv(name, value.replace("@X@", str(outside)).replace("@P@", str(project)))
    return marks / "ran"


@pytest.mark.parametrize(("layout", "start", "call"), CASES)
def test_no_repository_configuration_runs(
    layout: Layout, start: str, call: Callable[[Path], object], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)
    marker = _build(layout, tmp_path, monkeypatch)
    call(tmp_path / "proj" / start)
    assert not marker.exists(), f"{layout.id}: git ran the repository's configuration"


def test_a_clean_repository_is_still_described(tmp_path: Path) -> None:
    project = make_repo(tmp_path / "proj", {"a.txt": "one\n", "src/b.txt": "two\n"})
    (project / "new.txt").write_text("new\n")
    for start in (project, project / "src"):
        env = gather_environment_sync(start, start)
        assert env.git_branch == "main"
        assert env.git_status is not None and env.git_status.startswith("1 untracked")


def test_a_hostile_repository_is_described_from_its_files(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    bare_looking(project / "sub", bare_config(tmp_path / "ran"))
    env = gather_environment_sync(project / "sub", project / "sub")
    assert env.git_branch == "main"
    assert env.git_status is None
    assert not (tmp_path / "ran").exists()


def test_no_repository(tmp_path: Path) -> None:
    env = gather_environment_sync(tmp_path, tmp_path)
    assert env.git_branch is None
