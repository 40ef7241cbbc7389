"""LeaseKeeper: renews the leases a process holds on a networked store, until released.

A lease on PostgreSQL or Redis has an expiry, so a holder that dies (kill -9, a lost machine)
lets the session go after at most `ttl` seconds. A live holder renews each lease every
`ttl / 3` seconds from one daemon thread; a renewal that finds the lease taken by someone
else logs it and stops renewing that lease (the next write under it is refused as stale).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

# Renew one lease: (session id, token) -> still held.
Renew = Callable[[str, int], bool]


class LeaseKeeper:
    """Renews held leases in a daemon thread (started with the first lease held)."""

    def __init__(self, renew: Renew, *, every: float, name: str) -> None:
        self._renew = renew
        self._every = every
        self._name = name
        self._held: dict[tuple[str, int], None] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def hold(self, session_id: str, token: int) -> None:
        """Renew this lease from now on."""
        with self._lock:
            self._held[(session_id, token)] = None
            if self._thread is None and self._every > 0:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name=f"aimon lease keeper ({self._name})")
                self._thread.start()

    def drop(self, session_id: str, token: int) -> None:
        """Stop renewing this lease."""
        with self._lock:
            self._held.pop((session_id, token), None)

    def held(self) -> tuple[tuple[str, int], ...]:
        """Return the leases being renewed."""
        with self._lock:
            return tuple(self._held)

    def close(self) -> None:
        """Stop renewing every lease (they expire unless released)."""
        self._stop.set()
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)

    def renew_now(self) -> None:
        """Renew every held lease once (the thread does so every `every` seconds)."""
        for session_id, token in self.held():
            try:
                still = self._renew(session_id, token)
            except Exception as exc:  # the store is unreachable: try again next round
                log.warning("renewing the lease on %s failed: %s", session_id, exc)
                continue
            if not still:
                log.warning("the lease %s on %s was taken by another holder", token, session_id)
                self.drop(session_id, token)

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            self.renew_now()
