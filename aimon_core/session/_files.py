"""File primitives of the session store: atomic writes, torn-tail repair, the tolerant reader."""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from aimon_core.llm import Message
from aimon_core.session._codec import (
    FORMAT_VERSION,
    HeaderLine,
    MessageLine,
    SideLine,
    SnapshotLine,
    line_from_json,
)
from aimon_core.session._errors import SessionCodecError, SessionCorruptError, SessionExistsError
from aimon_core.session._ids import SessionId
from aimon_core.session._record import (
    SessionRecord,
    SessionTotals,
    SessionTranscript,
    title_from,
)

log = logging.getLogger(__name__)

_CHUNK = 64 * 1024


def fsync_dir(path: Path) -> None:
    """Make the entries of a directory (a created, renamed or removed file) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_temp(target: Path, data: bytes) -> Path:
    temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        temp.unlink(missing_ok=True)
        raise
    os.close(fd)
    return temp


def atomic_replace(target: Path, data: bytes, *, sync_dir: bool = True) -> None:
    """Write `target` whole or not at all: temp file, fsync, rename over it."""
    temp = _write_temp(target, data)
    try:
        temp.replace(target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    if sync_dir:
        fsync_dir(target.parent)


def atomic_create(target: Path, session_id: SessionId, data: bytes) -> None:
    """Write a new `target` whole or not at all; raise SessionExistsError if it exists."""
    temp = _write_temp(target, data)
    try:
        # link() fails if the target exists, where rename() would replace it.
        os.link(temp, target)
    except FileExistsError:
        raise SessionExistsError(session_id) from None
    finally:
        temp.unlink(missing_ok=True)
    fsync_dir(target.parent)


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
        case _:
            warnings.append(f"{where}: a second header line; skipped")
            new = ()
    if not state.title:
        state.title = title_from(new)
