"""File primitives of the session store: atomic writes, torn-tail repair, the tolerant reader."""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from aimon_core._atomic import write_atomic
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
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise SessionCorruptError(session_id, str(path), not_regular(mode))
        os.set_blocking(fd, True)
        chunks = []
        while chunk := os.read(fd, _CHUNK if first_line else 1 << 20):
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


def append_lines(path: Path, data: bytes, *, sync: bool) -> None:
    """Append complete lines to a session file, first cutting off a torn last line."""
    fd = os.open(path, os.O_RDWR | os.O_APPEND)
    try:
        size = _repair_tail(fd, path)
        try:
            _write_all(fd, data)
        except BaseException:
            # Leave no half line behind (ENOSPC, EIO); the next append would repair it anyway.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
            raise
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def sync_file(path: Path) -> None:
    """Flush a file's data to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _repair_tail(fd: int, path: Path) -> int:
    """Truncate a file to its last newline; return the resulting size."""
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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


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
    lines = data.split(b"\n")
    torn = lines.pop()  # what follows the last newline: empty unless the writer was cut off
    if torn:
        warnings.append(f"{path.name} line {len(lines) + 1}: incomplete last line; skipped")
    state = _Reading()
    updated_at = None
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            line = line_from_json(raw)
        except SessionCodecError as exc:
            if state.header is None:
                raise SessionCorruptError(session_id, str(path), f"bad header: {exc}") from None
            warnings.append(f"{path.name} line {number}: {exc}; skipped")
            continue
        if state.header is None:
            state.header = _check_header(session_id, path, line, warnings)
            state.title = state.header.title
            continue
        _apply(state, line, f"{path.name} line {number}", warnings)
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
        compaction_failure_count=side.compaction_failure_count if side else 0,
        approvals=side.approvals if side else (),
        started_tool_ids=state.started,
        load_warnings=tuple(warnings),
    )


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
