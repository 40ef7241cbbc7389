"""Errors of the session tier; each carries the fields a caller needs to explain it."""

from __future__ import annotations

import errno


class SessionError(Exception):
    """A session could not be found, claimed, read or written."""


class SessionNotFoundError(SessionError):
    """No session has this id."""

    def __init__(self, session_id: str, message: str | None = None) -> None:
        super().__init__(message or f"no session with id {session_id!r}")
        self.session_id = session_id


class InvalidSessionIdError(SessionNotFoundError, ValueError):
    """The text is not a session id (so no session can have it)."""

    def __init__(self, text: str, reason: str) -> None:
        super().__init__(text, f"not a session id: {text!r} ({reason})")
        self.text = text
        self.reason = reason


class SessionExistsError(SessionError):
    """A session with this id already exists."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"a session with id {session_id!r} already exists")
        self.session_id = session_id


class SessionCorruptError(SessionError):
    """A session file cannot be used at all (its header is unreadable or from a newer aimon)."""

    def __init__(self, session_id: str, path: str, reason: str) -> None:
        super().__init__(f"session {session_id!r} cannot be read from {path!r}: {reason}")
        self.session_id = session_id
        self.path = path
        self.reason = reason


class SessionStorageError(SessionError):
    """The session store's folder cannot be used (not a folder, no permission, disk full)."""

    def __init__(self, error: OSError) -> None:
        where = f" ({error.filename})" if error.filename else ""
        super().__init__(f"cannot use the session store{where}: {storage_problem(error)}")
        self.error = error


_HINTS = {
    errno.ENOSPC: "the disk is full; free some space",
    errno.EDQUOT: "the disk quota is used up; free some space",
    errno.EROFS: "the file system is read-only; set AIMON_HOME to a writable folder",
    errno.EACCES: "permission denied; check the folder's owner and mode, or set AIMON_HOME "
    "to a writable folder",
    errno.EPERM: "operation not permitted; check the folder's owner and mode, or set "
    "AIMON_HOME to a writable folder",
}


def storage_problem(error: OSError) -> str:
    """Return what went wrong with aimon's data folder and what to do, for one message."""
    hint = _HINTS.get(error.errno or 0)
    if hint is not None:
        return hint
    return (f"{error.strerror or error}; check that aimon's data folder is a writable folder "
            "(AIMON_HOME moves it)")


class SessionCodecError(ValueError):
    """A stored line or value does not have the expected shape."""


class SessionLockedError(SessionError):
    """Another holder has the lease on this session."""

    def __init__(self, session_id: str, holder: str) -> None:
        super().__init__(
            f"session {session_id!r} is in use by {holder}; "
            "close it there first, or start a new session"
        )
        self.session_id = session_id
        self.holder = holder


class StaleLeaseError(SessionError):
    """A write came with a lease that is released or superseded by a newer one."""

    def __init__(self, session_id: str, token: int, current_token: int | None, reason: str) -> None:
        super().__init__(f"lease {token} on session {session_id!r} is stale: {reason}")
        self.session_id = session_id
        self.token = token
        self.current_token = current_token
        self.reason = reason


class AgentMismatchError(SessionError):
    """The session was created by another agent than the one resuming it."""

    def __init__(self, session_id: str, recorded_agent: str, requested_agent: str) -> None:
        super().__init__(
            f"session {session_id!r} belongs to agent {recorded_agent!r}, "
            f"not {requested_agent!r}; resume it with agent {recorded_agent!r}"
        )
        self.session_id = session_id
        self.recorded_agent = recorded_agent
        self.requested_agent = requested_agent
