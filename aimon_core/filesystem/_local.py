"""LocalFileSystem: the project on the local disk, with checked paths and atomic writes."""

from __future__ import annotations

import asyncio
import functools
import os
import stat as stat_mod
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from aimon_core._atomic import write_atomic
from aimon_core.filesystem._paths import PathError, PathValidator

FileKind = Literal["file", "directory", "other"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FileStat:
    """What a tool needs to know about a path before reading or writing it."""

    path: Path
    kind: FileKind
    size: int
    mtime: float
    mode: int


class LocalFileSystem:
    """The local disk, limited to `root` and `extra_roots`; blocking calls run in threads."""

    def __init__(self, root: Path, extra_roots: Iterable[Path] = ()) -> None:
        self.validator = PathValidator((root, *extra_roots))
        self.root = self.validator.roots[0]

    @property
    def roots(self) -> tuple[Path, ...]:
        """Return the real paths of the directories the model may touch."""
        return self.validator.roots

    async def resolve(self, path: str, *, cwd: Path) -> Path:
        """Return the real absolute path of `path`, or raise PathError if it is not allowed."""
        return await asyncio.to_thread(self.validator.check, path, cwd=cwd)

    async def stat(self, path: Path) -> FileStat | None:
        """Return facts about `path`, or None if it does not exist."""
        return await asyncio.to_thread(self._stat, path)

    async def read_bytes(self, path: Path) -> bytes:
        """Return the content of the regular file at `path`."""
        return await asyncio.to_thread(self._read_bytes, path)

    async def write_atomic(self, path: Path, data: bytes) -> None:
        """Replace (or create) the file at `path` with `data` in one atomic step."""
        await asyncio.to_thread(self._write_atomic, path, data)

    def _checked(self, path: Path) -> Path:
        # Callers pass paths from resolve(); check again in case a link changed meanwhile.
        return self.validator.check(path, cwd=self.root)

    def _stat(self, path: Path) -> FileStat | None:
        real = self._checked(path)
        try:
            st = real.stat()
        except FileNotFoundError:
            return None
        kind: FileKind = "other"
        if stat_mod.S_ISREG(st.st_mode):
            kind = "file"
        elif stat_mod.S_ISDIR(st.st_mode):
            kind = "directory"
        return FileStat(path=real, kind=kind, size=st.st_size, mtime=st.st_mtime, mode=st.st_mode)

    def _read_bytes(self, path: Path) -> bytes:
        real = self._checked(path)
        # O_NONBLOCK: opening a FIFO must not hang; O_NOFOLLOW: no link swapped in since check.
        flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(real, flags)
        except FileNotFoundError:
            raise PathError(path=str(path), reason="the file does not exist") from None
        except IsADirectoryError:
            raise PathError(path=str(path), reason="it is a directory") from None
        with os.fdopen(fd, "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            if not stat_mod.S_ISREG(mode):
                raise PathError(path=str(path), reason=_not_regular(mode))
            return f.read()

    def _write_atomic(self, path: Path, data: bytes) -> None:
        real = self._checked(path)
        mode: int | None = None
        try:
            st = real.stat()
        except FileNotFoundError:
            pass
        else:
            if not stat_mod.S_ISREG(st.st_mode):
                raise PathError(path=str(path), reason=_not_regular(st.st_mode))
            mode = stat_mod.S_IMODE(st.st_mode)
        real.parent.mkdir(parents=True, exist_ok=True)
        # The temp file is `.NAME.aimon-tmp-PID-RAND`; stale ones next to it are removed.
        write_atomic(real, data, mode=mode if mode is not None else 0o666 & ~_umask())


def _not_regular(mode: int) -> str:
    if stat_mod.S_ISDIR(mode):
        return "it is a directory"
    if stat_mod.S_ISFIFO(mode):
        return "it is a named pipe (FIFO), not a regular file"
    if stat_mod.S_ISCHR(mode) or stat_mod.S_ISBLK(mode):
        return "it is a device, not a regular file"
    if stat_mod.S_ISSOCK(mode):
        return "it is a socket, not a regular file"
    return "it is not a regular file"


@functools.cache
def _umask() -> int:
    # Reading the umask by setting it races with other threads; Linux reports it in /proc.
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022
