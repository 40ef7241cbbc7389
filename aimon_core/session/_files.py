"""File primitives of the session store: atomic writes, torn-tail repair, the tolerant reader."""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import weakref
from dataclasses import dataclass, field
from pathlib import Path

from aimon_core._atomic import write_all, write_atomic
from aimon_core.llm import Message
from aimon_core.session._codec import (
    FORMAT_VERSION,
    HeaderLine,
    MessageLine,
    SideLine,
    SnapshotLine,
    ToolStartedLine,
    line_from_json,
)
from aimon_core.session._errors import SessionCodecError, SessionCorruptError, SessionExistsError
from aimon_core.session._ids import SessionId
from aimon_core.session._record import (
    SessionRecord,
    SessionTotals,
    SessionTranscript,
    title_from,
    unanswered_tool_ids,
)

log = logging.getLogger(__name__)

_CHUNK = 64 * 1024


def atomic_create(target: Path, session_id: SessionId, data: bytes) -> None:
    """Write a new `target` whole or not at all; raise SessionExistsError if it exists."""
    try:
        write_atomic(target, data, mode=0o600, exclusive=True)
    except FileExistsError:
        raise SessionExistsError(session_id) from None


def read_session_bytes(session_id: SessionId, path: Path, *, first_line: bool = False) -> bytes:
    """Return a session file's bytes (or just its first line); refuse anything but a file.

    O_NONBLOCK: opening a FIFO put in place of a session file must not hang; what is not a
    regular file raises SessionCorruptError.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SessionCorruptError(session_id, str(path), not_regular(info.st_mode))
        os.set_blocking(fd, True)
        chunks = []
        # The whole file in one read where it can (one chunk is joined without a copy); a
        # file that grew since the stat is read on.
        size = _CHUNK if first_line else max(info.st_size + 1, _CHUNK)
        while chunk := os.read(fd, size):
            chunks.append(chunk)
            if first_line and b"\n" in chunk:
                break
        data = b"".join(chunks)
        return data.split(b"\n", 1)[0] if first_line else data
    finally:
        os.close(fd)


def not_regular(mode: int) -> str:
    """Say what a file that is not a regular file is instead."""
    if stat.S_ISDIR(mode):
        return "it is a directory, not a regular file"
    if stat.S_ISFIFO(mode):
        return "it is a named pipe (FIFO), not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "it is a device, not a regular file"
    return "it is not a regular file"


class AppendFiles:
    """Session files held open for appending while this process writes them.

    An append that reopened the file (open, fstat, tail check, write, close) took ~8-10 us;
    a held file takes ~4 us (stat, tail check, write), several times per agent iteration.
    A held file is checked against its path (device and inode, one stat that also gives the
    size) before each append: a file replaced by a rewrite
    (`write_atomic`) or deleted is reopened, never written through a stale descriptor. A
    torn last line is cut off before every append, as before. Not thread-safe: the store
    calls it under its write lock.
    """

    def __init__(self, limit: int = 8) -> None:
        # path -> (descriptor, device, inode, path as str)
        self._files: dict[Path, tuple[int, int, int, str]] = {}
        self._limit = limit
        weakref.finalize(self, _close_all, self._files)

    def append(self, path: Path, data: bytes, *, sync: bool) -> None:
        """Append complete lines to `path` (opened, and its torn tail cut, on first use)."""
        fd, size = self._fd(path)
        size = _repair_tail(fd, path, size)  # a one-byte read when the tail is whole
        try:
            write_all(fd, data)
        except BaseException:
            # Leave no half line behind (ENOSPC, EIO); reopening repairs it if this fails too.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            self.forget(path)
            raise
        if sync:
            os.fsync(fd)

    def forget(self, path: Path) -> None:
        """Close `path` if it is held."""
        entry = self._files.pop(path, None)
        if entry is not None:
            os.close(entry[0])

    def close(self) -> None:
        """Close every held file."""
        _close_all(self._files)

    def _fd(self, path: Path) -> tuple[int, int]:
        """Return the held descriptor of `path` (opened if need be) and the file's size."""
        entry = self._files.get(path)
        if entry is not None:
            try:
                # One stat: still this file, and its size (os.stat of a str: Path.stat costs
                # as much again as the syscall).
                now = os.stat(entry[3])  # noqa: PTH116
            except OSError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == entry[1:3]:
                return entry[0], now.st_size
            self.forget(path)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
        try:
            opened = os.fstat(fd)
        except BaseException:
            os.close(fd)
            raise
        if len(self._files) >= self._limit:
            self.forget(next(iter(self._files)))
        self._files[path] = (fd, opened.st_dev, opened.st_ino, str(path))
        return fd, opened.st_size


def _close_all(files: dict[Path, tuple[int, int, int, str]]) -> None:
    while files:
        fd = files.popitem()[1][0]
        with contextlib.suppress(OSError):
            os.close(fd)


def sync_file(path: Path) -> None:
    """Flush a file's data to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _repair_tail(fd: int, path: Path, size: int | None = None) -> int:
    """Truncate a file to its last newline; return the resulting size (`size`: if known)."""
    if size is None:
        size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return size
    end = size
    while end > 0:
        start = max(0, end - _CHUNK)
        newline = os.pread(fd, end - start, start).rfind(b"\n")
        if newline >= 0:
            cut = start + newline + 1
            log.warning("%s: cut off a torn last line (%d bytes)", path, size - cut)
            os.ftruncate(fd, cut)
            return cut
        end = start
    # Not even the header line is complete: appending after it would only hide the damage.
    raise SessionCorruptError(path.stem, str(path), "its header line is incomplete")


@dataclass(slots=True)
class _Reading:
    header: HeaderLine | None = None
    title: str = ""
    messages: list[Message] = field(default_factory=list)
    side: SideLine | None = None
    started: tuple[str, ...] = ()


def decode_session_file(session_id: SessionId, path: Path, data: bytes) -> SessionRecord:
    """Build a record from a session file's bytes, skipping (and reporting) every bad line.

    Raises SessionCorruptError only when the header is unusable: without it the session has
    no project or agent.
    """
    warnings: list[str] = []
    lines = _split_lines(data)
    name = path.name
    torn = lines.pop()  # what follows the last newline: empty unless the writer was cut off
    if torn:
        warnings.append(f"{name} line {len(lines) + 1}: incomplete last line; skipped")
    state = _Reading()
    updated_at = None
    for number, raw in enumerate(lines, 1):
        if not raw or raw.isspace():
            continue
        try:
            line = line_from_json(raw)
        except SessionCodecError as exc:
            if state.header is None:
                raise SessionCorruptError(session_id, str(path), f"bad header: {exc}") from None
            warnings.append(f"{name} line {number}: {exc}; skipped")
            continue
        if state.header is None:
            state.header = _check_header(session_id, path, line, warnings)
            state.title = state.header.title
            continue
        _apply(state, line, f"{name} line {number}", warnings)
        if not isinstance(line, HeaderLine):
            updated_at = line.at if updated_at is None else max(updated_at, line.at)
    header = state.header
    if header is None:
        raise SessionCorruptError(session_id, str(path), "it has no header line")
    side = state.side
    return SessionRecord(
        id=session_id,
        project_root=header.project_root,
        agent_ref=header.agent_ref,
        created_at=header.created_at,
        updated_at=max(updated_at, header.created_at) if updated_at else header.created_at,
        title=state.title,
        transcript=SessionTranscript(messages=tuple(state.messages)),
        totals=side.totals if side else SessionTotals(),
        budget_override=side.budget_override if side else None,
        model_choice=side.model_choice if side else None,
        compaction_failure_count=side.compaction_failure_count if side else 0,
        approvals=side.approvals if side else (),
        reads=side.reads if side else (),
        started_tool_ids=state.started,
        load_warnings=tuple(warnings),
    )


def _split_lines(data: bytes) -> list[str | bytes]:
    """Split a session file into lines, decoded once as a whole when it is valid UTF-8.

    `json.loads` of bytes detects the encoding of every line again: ~10 % of loading a
    10,000-message session. A file with a bad byte anywhere is split as bytes, so the bad
    line alone is reported and skipped.
    """
    lines: list[str | bytes]
    try:
        lines = list(data.decode("utf-8").split("\n"))
    except UnicodeDecodeError:
        lines = list(data.split(b"\n"))
    return lines


def _check_header(
    session_id: SessionId, path: Path, line: object, warnings: list[str]
) -> HeaderLine:
    if not isinstance(line, HeaderLine):
        raise SessionCorruptError(session_id, str(path), "the first line is not a header")
    if line.version > FORMAT_VERSION:
        raise SessionCorruptError(
            session_id, str(path), f"format version {line.version} is newer than this aimon's"
        )
    if line.session_id != session_id:
        warnings.append(f"{path.name}: header names session {line.session_id!r}; ignored")
    return line


def _apply(state: _Reading, line: object, where: str, warnings: list[str]) -> None:
    match line:
        case MessageLine():
            state.messages.append(line.message)
            new: tuple[Message, ...] = (line.message,)
        case SnapshotLine():
            state.messages = list(line.messages)
            new = line.messages
        case SideLine():
            state.side = line
            new = ()
        case ToolStartedLine():
            state.started = tuple(dict.fromkeys((*state.started, *line.ids)))
            new = ()
        case _:
            warnings.append(f"{where}: a second header line; skipped")
            new = ()
    if new and state.started:
        state.started = unanswered_tool_ids(state.started, new)
    if not state.title:
        state.title = title_from(new)
