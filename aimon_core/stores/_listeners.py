"""Listeners: the handlers a networked signal bus calls, per session, from its own thread."""

from __future__ import annotations

import contextlib
import logging
import threading

from aimon_core.service import Signal, SignalHandler

log = logging.getLogger(__name__)


class Listeners:
    """The handlers of each session a bus listens for (thread-safe)."""

    def __init__(self) -> None:
        self._handlers: dict[str, list[SignalHandler]] = {}
        self._lock = threading.Lock()

    def add(self, session_id: str, handler: SignalHandler) -> bool:
        """Add a handler; return whether it is the session's first (start listening)."""
        with self._lock:
            first = session_id not in self._handlers
            self._handlers.setdefault(session_id, []).append(handler)
            return first

    def remove(self, session_id: str, handler: SignalHandler) -> bool:
        """Remove a handler (again: nothing); return whether the session has none left now
        (stop listening)."""
        with self._lock:
            handlers = self._handlers.get(session_id)
            if handlers is None:
                return False
            with contextlib.suppress(ValueError):
                handlers.remove(handler)
            if handlers:
                return False
            del self._handlers[session_id]
            return True

    def deliver(self, session_id: str, signal: Signal) -> None:
        """Call the session's handlers with `signal`; a failing one is logged."""
        with self._lock:
            handlers = list(self._handlers.get(session_id, ()))
        for handler in handlers:
            try:
                handler(signal)
            except Exception:
                log.exception("a signal handler of %s failed", session_id)

    def sessions(self) -> tuple[str, ...]:
        """Return the sessions that have handlers."""
        with self._lock:
            return tuple(self._handlers)

    def clear(self) -> None:
        """Forget every handler."""
        with self._lock:
            self._handlers.clear()
