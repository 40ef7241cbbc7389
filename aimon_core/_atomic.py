"""Atomic file writes for the whole code base, and the removal of their stale temp files.

A file is written whole or not at all: the data goes to a temp file in the same folder, is
fsync-ed, and is renamed over the target (or linked, to create without replacing). The temp
file is named `.NAME.aimon-tmp-PID-RAND` so that a later run can recognise one a killed
process left behind and remove it: when that process is gone, or the file is old.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import time
from collections.abc import Callable
from pathlib import Path

TEMP_MARK = ".aimon-tmp-"
# A temp file older than this is stale even if its pid is alive again (pid reuse).
STALE_SECONDS = 15 * 60
_TEMP_NAME = re.compile(r"^\.(?P<name>.+)\.aimon-tmp-(?P<pid>\d+)-[0-9a-f]{8}$")


def temp_path(target: Path) -> Path:
    """Return a fresh temp file path next to `target`, recognisable by `stale_temps`."""
    return target.with_name(f".{target.name}{TEMP_MARK}{os.getpid()}-{secrets.token_hex(4)}")


def write_atomic(
    target: Path,
    data: bytes,
    *,
    mode: int = 0o600,
    exclusive: bool = False,
    sync_dir: bool = True,
    durable: bool = True,
    clean: bool = True,
) -> None:
    """Write `target` whole or not at all, with permission bits `mode`.

    With `exclusive`, raise FileExistsError instead of replacing an existing target. Stale
    temp files of earlier runs in the same folder are removed first (unless not `clean`: a
    caller writing many files to one folder removes them once). Without `durable` nothing is
    fsync-ed: for data that can be made again (caches, content-addressed copies). OSErrors
    (ENOSPC, EROFS, EACCES) propagate; the temp file never stays behind.
    """
    if clean:
        remove_stale_temps(target.parent)
    temp = temp_path(target)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        try:
            write_all(fd, data)
            os.fchmod(fd, mode)  # exact bits, whatever the umask
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        if exclusive:
            os.link(temp, target)  # link() fails if the target exists; rename() would not
        else:
            temp.replace(target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
    if sync_dir and durable:
        fsync_dir(target.parent)


def private_dir(path: Path, *, tighten: bool = False) -> Path:
    """Create `path` and its missing parents with mode 0700; return `path`.

    Folders that exist keep their mode unless `tighten` (for folders only aimon uses, such as
    its sessions and locks folders), which makes `path` itself 0700.
    """
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700)
    if tighten and not missing:
        info = path.stat()
        if info.st_mode & 0o077 and info.st_uid == os.getuid():
            path.chmod(0o700)
    return path


def fsync_dir(path: Path) -> None:
    """Make the entries of a folder (a created, renamed or removed file) durable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return  # some platforms and file systems cannot open a folder; nothing to sync then
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def pid_alive(pid: int) -> bool:
    """Return True if a process with this id exists (on this machine)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stale_temps(
    folder: Path,
    *,
    max_age: float = STALE_SECONDS,
    now: float | None = None,
    alive: Callable[[int], bool] = pid_alive,
) -> list[Path]:
    """Return the temp files in `folder` left by a dead process or older than `max_age`."""
    now = time.time() if now is None else now
    found: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return found
    for entry in entries:
        if TEMP_MARK not in entry.name:
            continue
        match = _TEMP_NAME.match(entry.name)
        if match is None:
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        pid = int(match["pid"])
        mine = pid == os.getpid()
        if (not mine and not alive(pid)) or now - info.st_mtime > max_age:
            found.append(Path(entry.path))
    return found


def remove_stale_temps(
    folder: Path, *, max_age: float = STALE_SECONDS, now: float | None = None
) -> list[Path]:
    """Remove the stale temp files in `folder` (see `stale_temps`); return those removed."""
    removed = []
    for path in stale_temps(folder, max_age=max_age, now=now):
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        except OSError:
            continue  # a read-only folder: the write that follows reports the real problem
        removed.append(path)
    return removed


def write_all(fd: int, data: bytes) -> None:
    """Write all of `data` to `fd` (one write, usually; a file may take fewer bytes)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
