"""Leases: at most one live holder per session, with a fencing token for every acquire."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Protocol

from aimon_core._atomic import private_dir
from aimon_core.session._errors import InvalidSessionIdError, SessionLockedError, StaleLeaseError
from aimon_core.session._ids import SessionId, is_session_id


def default_holder() -> str:
    """Describe this process as a lease holder: `pid 1234 on host`."""
    return f"pid {os.getpid()} on {socket.gethostname()}"


class SessionLease:
    """The right to write one session, until released.

    `token` grows with every acquire of the session; a write that carries a lease whose token
    is older than the newest one is refused (StaleLeaseError).
    """

    def __init__(
        self,
        *,
        session_id: SessionId,
        holder: str,
        token: int,
        release: Callable[[], None],
        newest_token: Callable[[], int | None],
    ) -> None:
        self.session_id = session_id
        self.holder = holder
        self.token = token
        self._release = release
        self._newest_token = newest_token
        self._released = False
        self._lock = threading.Lock()

    @property
    def released(self) -> bool:
        """Return whether release() was called."""
        return self._released

    def release(self) -> None:
        """Give the session up; calling it again does nothing."""
        with self._lock:
            if self._released:
                return
            self._released = True
        self._release()

    def verify(self) -> None:
        """Raise StaleLeaseError if this lease is released or a newer one exists."""
        if self._released:
            raise StaleLeaseError(self.session_id, self.token, None, "it was released")
        newest = self._newest_token()
        if newest is not None and newest > self.token:
            raise StaleLeaseError(
                self.session_id, self.token, newest, f"lease {newest} was acquired after it"
            )

    def __enter__(self) -> SessionLease:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self._released else "held"
        return f"SessionLease({self.session_id!r}, token={self.token}, {self.holder!r}, {state})"


def check_lease(lease: SessionLease | None, session_id: SessionId) -> None:
    """Refuse a write under a lease that is stale or belongs to another session."""
    if lease is None:
        return
    if lease.session_id != session_id:
        raise ValueError(f"lease on {lease.session_id!r} used to write {session_id!r}")
    lease.verify()


class SessionLeaseStore(Protocol):
    """Hands out leases on sessions."""

    def acquire(self, session_id: SessionId, holder: str) -> SessionLease:
        """Take the lease on `session_id`; raise SessionLockedError naming the current holder."""
        ...


class MemorySessionLeaseStore:
    """Leases within one process, for tests and embedding."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders: dict[SessionId, str] = {}
        self._tokens: dict[SessionId, int] = {}

    def acquire(self, session_id: SessionId, holder: str) -> SessionLease:
        """Take the lease on `session_id`; raise SessionLockedError naming the current holder."""
        with self._lock:
            if session_id in self._holders:
                raise SessionLockedError(session_id, self._holders[session_id])
            token = self._tokens.get(session_id, 0) + 1
            self._tokens[session_id] = token
            self._holders[session_id] = holder

        def release() -> None:
            with self._lock:
                if self._tokens.get(session_id) == token:
                    self._holders.pop(session_id, None)

        return SessionLease(
            session_id=session_id,
            holder=holder,
            token=token,
            release=release,
            newest_token=lambda: self._tokens.get(session_id),
        )


class FileSessionLeaseStore:
    """Leases between processes: an exclusive flock on `<base_dir>/locks/<id>.lock`.

    The lock is held by an open file descriptor (not inherited by child processes), so a
    holder that dies, however it dies, lets the next acquire succeed. The lock file holds the
    fencing token and a description of the holder, for the error a second acquirer gets.
    """

    def __init__(self, base_dir: Path) -> None:
        self.base_dir = Path(base_dir)

    def lock_path(self, session_id: SessionId) -> Path:
        """Return the lock file of a session."""
        if not is_session_id(session_id):
            raise InvalidSessionIdError(session_id, "expected the form YYYYMMDD-HHMMSS-xxxxxx")
        return self.base_dir / "locks" / f"{session_id}.lock"

    def acquire(self, session_id: SessionId, holder: str) -> SessionLease:
        """Take the lease on `session_id`; raise SessionLockedError naming the current holder."""
        path = self.lock_path(session_id)
        private_dir(path.parent, tighten=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
        try:
            _check_lock_file(fd, path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                _, current_holder = _parse_lock(_read_fd(fd))
                raise SessionLockedError(
                    session_id, current_holder or "another process (holder unknown)"
                ) from None
            previous, _ = _parse_lock(_read_fd(fd))
            token = previous + 1 if previous is not None else _seed_token()
            data = json.dumps({"token": token, "holder": holder}).encode() + b"\n"
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise

        def release() -> None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

        return SessionLease(
            session_id=session_id,
            holder=holder,
            token=token,
            release=release,
            newest_token=lambda: _read_token(path),
        )


def _seed_token() -> int:
    # A lock file that is new (or unreadable) starts from the clock in microseconds, so a token
    # issued after the file was deleted and re-created is still newer than any before it.
    return time.time_ns() // 1000


def _read_fd(fd: int) -> bytes:
    return os.pread(fd, 4096, 0)


def _read_token(path: Path) -> int | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    token, _ = _parse_lock(data)
    return token


def _parse_lock(data: bytes) -> tuple[int | None, str | None]:
    with contextlib.suppress(ValueError):
        obj = json.loads(data)
        if isinstance(obj, dict):
            token = obj.get("token")
            holder = obj.get("holder")
            return (
                token if isinstance(token, int) and not isinstance(token, bool) else None,
                holder if isinstance(holder, str) else None,
            )
    return None, None


def _check_lock_file(fd: int, path: Path) -> None:
    """Refuse a lock path that is not a regular file; make an old 0644 lock file private."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EINVAL, "the session lock is not a regular file", str(path))
    if stat.S_IMODE(info.st_mode) != 0o600 and info.st_uid == os.getuid():
        os.fchmod(fd, 0o600)
