"""PathValidator and LocalFileSystem on real files."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from aimon_core.filesystem import LocalFileSystem, PathError, PathValidator, VirtualFileSystem


def check(project: Path, path: str, cwd: Path | None = None) -> Path:
    return PathValidator([project]).check(path, cwd=cwd or project)


def test_relative_and_absolute_paths_inside_resolve(project: Path) -> None:
    (project / "src").mkdir()
    assert check(project, "src/a.py") == project / "src" / "a.py"
    assert check(project, str(project / "b.txt")) == project / "b.txt"
    assert check(project, "../c.txt", cwd=project / "src") == project / "c.txt"
    assert check(project, ".") == project


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../outside.txt", "outside the project"),
        ("src/../../outside.txt", "outside the project"),
        ("/etc/passwd", "outside the project"),
        ("~/.bashrc", "outside the project"),
        ("a\x00b", "NUL byte"),
        ("a\nb", "control characters"),
        ("a\x1bb", "control characters"),
        ("", "empty"),
    ],
)
def test_refused_paths(project: Path, path: str, reason: str) -> None:
    with pytest.raises(PathError) as info:
        check(project, path)
    assert reason in str(info.value)
    assert info.value.path == path
    assert reason in info.value.reason


def test_absolute_path_next_to_project_is_refused(project: Path, tmp_path: Path) -> None:
    # A sibling whose name starts with the project's name must not pass a prefix test.
    with pytest.raises(PathError, match="outside the project"):
        check(project, str(tmp_path / "project-other" / "x"))


def test_symlink_out_of_project_is_refused(project: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    (project / "link.txt").symlink_to(secret)
    (project / "dirlink").symlink_to(tmp_path)
    (project / "dangling").symlink_to(tmp_path / "missing.txt")
    for path in ("link.txt", "dirlink/secret.txt", "dirlink/new/file.txt", "dangling"):
        with pytest.raises(PathError, match="symbolic link"):
            check(project, path)


def test_symlink_inside_project_resolves_to_target(project: Path) -> None:
    (project / "real.txt").write_text("x")
    (project / "link.txt").symlink_to(project / "real.txt")
    assert check(project, "link.txt") == project / "real.txt"


def test_windows_device_names_refused_when_enabled(project: Path) -> None:
    validator = PathValidator([project], windows_names=True)
    with pytest.raises(PathError, match="reserved Windows device name"):
        validator.check("sub/NUL.txt", cwd=project)
    assert validator.check("nullable.txt", cwd=project) == project / "nullable.txt"


def test_extra_roots_are_allowed(project: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    fs = LocalFileSystem(project, extra_roots=[extra])
    assert isinstance(fs, VirtualFileSystem)
    assert fs.roots == (project, extra)
    assert asyncio.run(fs.resolve(str(extra / "a"), cwd=project)) == extra / "a"


def test_read_refuses_fifo_without_blocking(project: Path) -> None:
    fifo = project / "pipe"
    os.mkfifo(fifo)
    fs = LocalFileSystem(project)
    with pytest.raises(PathError, match="named pipe"):
        asyncio.run(fs.read_bytes(fifo))
    with pytest.raises(PathError, match="named pipe"):
        asyncio.run(fs.write_atomic(fifo, b"x"))
    info = asyncio.run(fs.stat(fifo))
    assert info is not None
    assert info.kind == "other"


def test_read_refuses_devices(project: Path) -> None:
    fs = LocalFileSystem(project, extra_roots=[Path("/dev")])
    with pytest.raises(PathError, match="device"):
        asyncio.run(fs.read_bytes(Path("/dev/null")))


def test_stat_missing_file_and_directory(project: Path) -> None:
    fs = LocalFileSystem(project)
    assert asyncio.run(fs.stat(project / "missing")) is None
    info = asyncio.run(fs.stat(project))
    assert info is not None
    assert info.kind == "directory"


def test_write_atomic_creates_parents_with_umask_mode(project: Path) -> None:
    fs = LocalFileSystem(project)
    target = project / "a" / "b" / "new.txt"
    asyncio.run(fs.write_atomic(target, b"hello\n"))
    assert target.read_bytes() == b"hello\n"
    umask = os.umask(0o022)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert sorted(p.name for p in target.parent.iterdir()) == ["new.txt"]


def test_write_atomic_keeps_mode_and_replaces_content(project: Path) -> None:
    fs = LocalFileSystem(project)
    script = project / "run.sh"
    script.write_text("old")
    script.chmod(0o750)
    asyncio.run(fs.write_atomic(script, b"new"))
    assert script.read_text() == "new"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert [p.name for p in project.iterdir()] == ["run.sh"]


def test_write_through_symlinked_dir_out_of_project_refused(project: Path, tmp_path: Path) -> None:
    (project / "out").symlink_to(tmp_path)
    fs = LocalFileSystem(project)
    with pytest.raises(PathError, match="outside the project"):
        asyncio.run(fs.write_atomic(project / "out" / "evil.txt", b"x"))
    assert not (tmp_path / "evil.txt").exists()
