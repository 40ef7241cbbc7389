"""Finding stored sessions for the command line (kept free of Typer: the REPL starts here)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from aimon_core.session import SessionStore, SessionSummary


def default_store() -> SessionStore:
    """Return the session store under the user data directory."""
    from aimon_core.session import (
        FileSessionLeaseStore,
        FileSessionRecordStore,
        SessionStore,
        user_data_dir,
    )

    base = user_data_dir()
    return SessionStore(FileSessionRecordStore(base), FileSessionLeaseStore(base))


class _LazyStore:
    """The default store, made on first use, so the REPL's first prompt does not wait for
    the JSONL codec and the message types to load."""

    def __init__(self) -> None:
        self._store: SessionStore | None = None

    def __getattr__(self, name: str) -> Any:
        if self._store is None:
            self._store = default_store()
        return getattr(self._store, name)


def lazy_default_store() -> SessionStore:
    """Return the default store, built when something first uses it."""
    return cast("SessionStore", _LazyStore())


def agent_of_session(store: SessionStore, session_id: str) -> str | None:
    """Return the agent name a stored session was made with, from its header line."""
    from aimon_core.session import FileSessionRecordStore, SessionError, parse_session_id

    records = store.records
    if isinstance(records, FileSessionRecordStore):
        try:
            # Reads the header line only, and never hangs on a FIFO in place of the file.
            ref = records.agent_ref(parse_session_id(session_id))
        except (ValueError, SessionError):
            return None
    else:
        try:
            ref = records.load(parse_session_id(session_id)).agent_ref
        except SessionError:
            return None
    return ref.removeprefix("agent:").split(":")[0] or None


def most_recent(store: SessionStore, project_root: Path) -> SessionSummary | None:
    """Return the newest session of this project that holds messages, if any."""
    found = store.records.list(str(project_root.resolve()), limit=20)
    # An empty session (older versions stored one at every start) has nothing to continue.
    return next((item for item in found if item.message_count > 0), None)
