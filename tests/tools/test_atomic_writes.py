"""The one atomic-write helper: whole-or-nothing writes, modes, and stale temp removal."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aimon_core._atomic import (
    STALE_SECONDS,
    private_dir,
    remove_stale_temps,
    stale_temps,
    temp_path,
    write_atomic,
)

from .conftest import RunTool


def dead_pid() -> int:
    """Return the pid of a process that has exited (and been reaped)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    return int(proc.stdout)


def leftover(folder: Path, name: str, pid: int) -> Path:
    """Make the temp file a process with `pid` would leave when killed mid-write."""
    path = folder / f".{name}.aimon-tmp-{pid}-0badcafe"
    path.write_bytes(b"half a file")
    return path


def test_write_atomic_replaces_whole_with_exact_mode(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    write_atomic(target, b"one", mode=0o640)
    write_atomic(target, b"two", mode=0o600)
    assert target.read_bytes() == b"two"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_exclusive_write_refuses_an_existing_target(tmp_path: Path) -> None:
    target = tmp_path / "f.txt"
    write_atomic(target, b"first", exclusive=True)
    with pytest.raises(FileExistsError):
        write_atomic(target, b"second", exclusive=True)
    assert target.read_bytes() == b"first"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def test_a_failed_write_leaves_no_temp_file(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    with pytest.raises(IsADirectoryError):
        write_atomic(tmp_path / "dir", b"data")  # rename over a directory fails
    assert [p.name for p in tmp_path.iterdir()] == ["dir"]


def test_temp_names_are_recognisable(tmp_path: Path) -> None:
    temp = temp_path(tmp_path / "notes.md")
    assert temp.name.startswith(f".notes.md.aimon-tmp-{os.getpid()}-")
    temp.write_text("x")
    assert stale_temps(tmp_path) == []  # this process is alive and the file is fresh


def test_stale_temps_are_those_of_dead_processes_or_old(tmp_path: Path) -> None:
    dead = leftover(tmp_path, "a.py", dead_pid())
    alive = leftover(tmp_path, "b.py", os.getppid())
    old = leftover(tmp_path, "c.py", os.getppid())
    hour_ago = time.time() - STALE_SECONDS - 60
    os.utime(old, (hour_ago, hour_ago))
    (tmp_path / ".d.py.tmp").write_text("not ours")
    (tmp_path / "e.aimon-tmp-1-2").write_text("not our pattern")

    assert sorted(remove_stale_temps(tmp_path)) == sorted([dead, old])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [alive.name, ".d.py.tmp", "e.aimon-tmp-1-2"])


def test_write_tool_removes_a_killed_writes_temp_file(project: Path, run_tool: RunTool) -> None:
    stale = leftover(project, "big.txt", dead_pid())
    result = run_tool("Write", file_path=str(project / "big.txt"), content="whole\n")
    assert not result.is_error, result.text
    assert not stale.exists()
    assert sorted(p.name for p in project.iterdir()) == ["big.txt"]


def test_edit_tool_removes_stale_temp_files_next_to_its_target(project: Path,
                                                              run_tool: RunTool) -> None:
    (project / "src").mkdir()
    stale = leftover(project / "src", "other.py", dead_pid())
    result = run_tool("Edit", file_path=str(project / "src" / "new.py"), old_string="",
                      new_string="x = 1\n")
    assert not result.is_error, result.text
    assert not stale.exists()


@pytest.mark.parametrize("path", ["newdir/", "newdir/.", "."])
def test_write_to_a_folder_path_is_refused(project: Path, run_tool: RunTool, path: str) -> None:
    result = run_tool("Write", file_path=path, content="x")
    assert result.is_error
    assert "names a directory" in result.text
    assert list(project.iterdir()) == []


def test_write_over_an_existing_directory_is_refused(project: Path, run_tool: RunTool) -> None:
    (project / "pkg").mkdir()
    result = run_tool("Write", file_path=str(project / "pkg"), content="x")
    assert result.is_error
    assert "directory" in result.text
    assert (project / "pkg").is_dir()


def test_private_dir_creates_0700_and_tightens_only_when_asked(tmp_path: Path) -> None:
    made = private_dir(tmp_path / "a" / "b")
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    private_dir(shared)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755
    private_dir(shared, tighten=True)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o700
