"""Files aimon opens by itself: the same checks as a tool call, applied without asking.

aimon reads instruction files, commands and their `@path` attachments, skills, agents and
their partials, and settings, before the model or the user has done anything; it writes the
copy of the built-in skills into the project. A cloned repository chooses all of those paths,
so none may lead where the Read tool would not go:

- a file of the project must resolve inside the project (`inside`): no symlink leads out;
- no file is read from ``/proc``, ``/sys`` or ``/dev``, and only regular files are read (a
  FIFO or a device would block or never end), checked on the opened descriptor;
- `readable`, the path deny rules (`ToolContext.path_filter`), may refuse it;
- what aimon writes goes through real folders only, opened one by one without following
  links (`open_own_dir`), so a symlinked `.aimon/` cannot send a write elsewhere.

A refusal is a `RefusedFileError` (an OSError, so callers that skip unreadable files skip these
too) whose text says why, for a one-line warning that names the file.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
from collections.abc import Callable
from pathlib import Path

_SPECIAL = ("/proc", "/sys", "/dev")
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NOCTTY
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
_CHUNK = 1 << 16

Readable = Callable[[Path], bool]
"""Tell whether a path may be read (False: a permission deny rule covers it)."""


class RefusedFileError(OSError):
    """aimon will not read or write a file by itself; the text says why."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(reason)
        self.path = path
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def own_path(path: Path, *, inside: Path | None, readable: Readable | None = None) -> Path:
    """Return the real path of a file aimon may open by itself, or raise RefusedFileError.

    Also for a folder aimon lists by itself (a commands folder linked to `/` would otherwise
    be walked whole).

    Args:
        inside: the folder the file must resolve into (the project); None for the user's own
            files, which may link anywhere but to a special file.
        readable: the path deny rules; None when there are none.
    """
    return Path(_own_real(path, inside, readable))


def _own_real(path: Path, inside: Path | None, readable: Readable | None) -> str:
    # Strings, not Paths: this runs for every file of every skill at every start.
    real = os.path.realpath(path)
    if inside is not None:
        root = _real_root(str(inside))
        if not _inside(real, root):
            if not os.path.lexists(real):  # a dangling link is a missing file
                raise FileNotFoundError(errno.ENOENT, "no such file", str(path))
            raise RefusedFileError(path, f"it leads out of {root} (to {real})")
    if any(_inside(real, special) for special in _SPECIAL):
        raise RefusedFileError(path, f"it leads to the special file {real}")
    if readable is not None and not readable(Path(path)):
        raise RefusedFileError(path, "a permission deny rule covers it")
    return real


def read_own(path: Path, *, inside: Path | None, limit: int,
             readable: Readable | None = None) -> bytes:
    """Return the first `limit` bytes of a regular file aimon reads by itself.

    Raises RefusedFileError as `own_path` does, or when the file is not a regular file (or was
    swapped while it was opened); other OSErrors (missing, unreadable) propagate.
    """
    real = _own_real(path, inside, readable)
    # ELOOP here: a loop of links (realpath stops at one), or a link made since: not read.
    fd = os.open(real, _READ_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RefusedFileError(path, "it is not a regular file")
        _check_opened(fd, real, path)
        return _read_up_to(fd, limit)
    finally:
        os.close(fd)


@functools.lru_cache(maxsize=16)
def _real_root(folder: str) -> str:
    """Return the real path of a project folder (taken once: the same for every file)."""
    return os.path.realpath(folder)


def _check_opened(fd: int, real: str, path: Path) -> None:
    """Refuse a file whose opened descriptor is not the checked path (a swap in between)."""
    try:
        opened = os.readlink(f"/proc/self/fd/{fd}")  # noqa: PTH115 - a str, no Path to build
    except OSError:
        return  # no /proc (macOS): the O_NOFOLLOW open of the resolved path has to do
    if opened != real:
        raise RefusedFileError(path, f"it changed while being opened (now {opened})")


def _read_up_to(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, _CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def open_own_dir(root: Path, *parts: str, create: bool = False) -> int:
    """Return a descriptor of `root/parts...`, every part a real folder (created if missing).

    `root` itself is taken as it is (the project, as the user named it); each part below is
    opened without following links, so a symlinked `.aimon` raises RefusedFileError instead of
    leading the writes that follow elsewhere. The caller closes the descriptor.
    """
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    where = root
    try:
        for part in parts:
            where = where / part
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            try:
                inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise RefusedFileError(where, "it is a link or not a folder") from None
                raise
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_own(dir_fd: int, parts: tuple[str, ...], data: bytes, *, mode: int = 0o644) -> None:
    """Create the new file `parts` below the folder `dir_fd`, making real folders on the way."""
    folder = os.dup(dir_fd)
    try:
        for part in parts[:-1]:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o755, dir_fd=folder)
            inner = os.open(part, _DIR_FLAGS, dir_fd=folder)
            os.close(folder)
            folder = inner
        fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                     | os.O_CLOEXEC, mode, dir_fd=folder)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
    finally:
        os.close(folder)


def remove_own(dir_fd: int, name: str) -> None:
    """Remove the entry `name` of the folder `dir_fd`; a folder whole, never through a link."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        import shutil  # it imports bz2 and lzma: only when an old copy goes

        shutil.rmtree(name, dir_fd=dir_fd)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)
