"""Finding stored sessions for the command line (kept free of Typer: the REPL starts here)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from aimon_core.session import SessionStore, SessionSummary
    from aimon_core.stores import StoreBackend


_backend: StoreBackend | None = None


def default_store() -> SessionStore:
    """Return the session store: the file store under the user data directory, or the one
    `--store` / AIMON_STORE_URL / the settings' `store.url` names (opened once)."""
    if not store_is_chosen():
        from aimon_core.session import file_session_store

        return file_session_store()
    return chosen_backend().store


def chosen_backend() -> StoreBackend:
    """Return the backend the flag, the environment or the settings choose (opened once)."""
    global _backend
    if _backend is None:
        import sys

        from aimon_core.stores import open_backend, store_url

        choice = store_url()
        for problem in choice.problems:
            sys.stderr.write(f"aimon: {problem}\n")
        _backend = open_backend(choice)
    return _backend


def store_is_chosen() -> bool:
    """Tell whether a store other than the embedded one may be chosen (a cheap look: the
    environment, and the word "store" in the user's settings)."""
    import os

    from aimon_core.session import user_config_dir

    if os.environ.get("AIMON_STORE_URL") or os.environ.get("AIMON_STORE_COORDINATION"):
        return True
    try:
        return b'"store"' in (user_config_dir() / "settings.json").read_bytes()
    except OSError:
        return False


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
    found = store.records.list_sessions(str(project_root.resolve()), limit=20)
    # An empty session (older versions stored one at every start) has nothing to continue.
    return next((item for item in found if item.message_count > 0), None)


def resolve_session_id(store: SessionStore, text: str, project_root: Path | None) -> str:
    """Return the session id `text` names: a whole id, or the end or start of one.

    Looks in the project's sessions first, then in every project's. Raises ValueError that
    says what matched, or the nearest ids, when `text` names no single session.
    """
    import difflib

    from aimon_core.session import is_session_id

    text = text.strip()
    if is_session_id(text):
        return text
    scopes = [str(project_root.resolve()), None] if project_root is not None else [None]
    known: list[str] = []
    for scope in scopes:
        ids = [s.id for s in store.records.list_sessions(scope, limit=500)]
        found = [i for i in ids if text and (i.endswith(text) or i.startswith(text))]
        if len(found) == 1:
            return found[0]
        if found:
            raise ValueError(f"{text!r} matches {len(found)} sessions ("
                             + ", ".join(found[:5]) + "): give more of the id")
        known += ids
    near = difflib.get_close_matches(text, known, n=3, cutoff=0.3) or \
        [i for i in known if i[-6:-3] == text[-6:-3]][:3]
    hint = f"; nearest: {', '.join(near)}" if near else "; list them with: aimon sessions"
    raise ValueError(f"no session matches {text!r}{hint}")
