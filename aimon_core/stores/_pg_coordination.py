"""Coordination in PostgreSQL: leases with fencing, the inbox, idempotency keys, signals.

- `PostgresSessionLeaseStore`: one row per held session (holder, token, expiry). A token
  comes from one sequence, so it grows with every grant; granting one also raises the
  session's `fence`, so the previous holder's writes are refused from that moment. A holder
  renews its leases (`LeaseKeeper`); one that dies loses them after `ttl` seconds.
- `PostgresInbox`: rows, taken once (`UPDATE ... WHERE taken_at IS NULL`).
- `PostgresIdempotencyStore`: `INSERT ... ON CONFLICT`, taking over only a key whose claimer
  never finished it within the hold time.
- `PostgresSignalBus`: `LISTEN/NOTIFY` on one channel, each signal also kept a while as a row
  (a listener that reconnects catches up); each bus listens on a connection of its own and
  records which sessions it listens for, so `publish` can say how many heard it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import psycopg

from aimon_core.service import HOLD_SECONDS, InboxItem, Signal, SignalHandler
from aimon_core.session import SessionId, SessionLease, SessionLockedError
from aimon_core.stores._errors import StoreUnavailableError
from aimon_core.stores._keeper import LeaseKeeper
from aimon_core.stores._listeners import Listeners
from aimon_core.stores._pg import PostgresDatabase

log = logging.getLogger(__name__)

DEFAULT_TTL = 15.0
_CHANNEL = "aimon_signals"
# How long a signal is kept for a listener that reconnects (a holder down longer than this
# has lost its lease anyway).
SIGNAL_KEEP_SECONDS = 600


class PostgresSessionLeaseStore:
    """Leases in PostgreSQL, with an expiry and a fencing token (see the module docs).

    Args:
        ttl: seconds a lease lives unless renewed (a dead holder's session is free then).
        renew_every: seconds between renewals (default ttl / 3; 0: never, for tests that
            play a holder that died).
    """

    def __init__(self, database: PostgresDatabase, *, ttl: float = DEFAULT_TTL,
                 renew_every: float | None = None) -> None:
        self.database = database
        self.ttl = ttl
        self.keeper = LeaseKeeper(self._renew, name=database.name,
                                  every=ttl / 3 if renew_every is None else renew_every)

    def acquire(self, session_id: SessionId, holder: str) -> SessionLease:
        """Take the lease on `session_id`; raise SessionLockedError naming the current holder."""
        with self.database.connection() as db, db.transaction():
            row = db.execute(
                "INSERT INTO aimon_leases AS l (session_id, holder, token, expires_at) "
                "VALUES (%s, %s, nextval('aimon_fence'), now() + %s * interval '1 second') "
                "ON CONFLICT (session_id) DO UPDATE SET holder = EXCLUDED.holder, "
                "token = EXCLUDED.token, expires_at = EXCLUDED.expires_at "
                "WHERE l.expires_at < now() RETURNING token",
                (session_id, holder, self.ttl)).fetchone()
            if row is None:
                current = db.execute("SELECT holder FROM aimon_leases WHERE session_id = %s",
                                     (session_id,)).fetchone()
                raise SessionLockedError(session_id, str(current[0]) if current
                                         else "another holder")
            token = int(row[0])
            db.execute("UPDATE aimon_sessions SET fence = GREATEST(fence, %s) WHERE id = %s",
                       (token, session_id))
        self.keeper.hold(session_id, token)

        def release() -> None:
            self.keeper.drop(session_id, token)
            with self.database.connection() as db:
                db.execute("DELETE FROM aimon_leases WHERE session_id = %s AND token = %s",
                           (session_id, token))

        return SessionLease(session_id=session_id, holder=holder, token=token, release=release,
                            newest_token=lambda: self.newest_token(session_id))

    def newest_token(self, session_id: str) -> int | None:
        """Return the token of the session's current lease (None: nobody holds it)."""
        with self.database.connection() as db:
            row = db.execute("SELECT token FROM aimon_leases WHERE session_id = %s",
                             (session_id,)).fetchone()
        return int(row[0]) if row else None

    def _renew(self, session_id: str, token: int) -> bool:
        with self.database.connection() as db:
            cursor = db.execute(
                "UPDATE aimon_leases SET expires_at = now() + %s * interval '1 second' "
                "WHERE session_id = %s AND token = %s", (self.ttl, session_id, token))
            return cursor.rowcount == 1

    def close(self) -> None:
        """Stop renewing (leases not released expire after `ttl`)."""
        self.keeper.close()


class PostgresInbox:
    """A SessionInbox in PostgreSQL: any node delivers; the holder takes each item once."""

    def __init__(self, database: PostgresDatabase, clock: Callable[[], float] = time.time
                 ) -> None:
        self.database = database
        self._clock = clock

    def deliver(self, session_id: str, text: str, *, sender: str = "") -> InboxItem:
        """Store `text` for the session; return the item."""
        now = self._clock()
        with self.database.connection() as db:
            row = db.execute("INSERT INTO aimon_inbox (session_id, text, sender, delivered_at) "
                             "VALUES (%s, %s, %s, %s) RETURNING id",
                             (session_id, text, sender, now)).fetchone()
        assert row is not None
        return InboxItem(id=int(row[0]), session_id=session_id, text=text, sender=sender,
                         delivered_at=now)

    def pending(self, session_id: str) -> tuple[InboxItem, ...]:
        """Return the session's items not taken yet, oldest first."""
        with self.database.connection() as db:
            rows = db.execute("SELECT id, text, sender, delivered_at FROM aimon_inbox "
                              "WHERE session_id = %s AND taken_at IS NULL ORDER BY id",
                              (session_id,)).fetchall()
        return tuple(InboxItem(id=int(r[0]), session_id=session_id, text=str(r[1]),
                               sender=str(r[2]), delivered_at=float(r[3])) for r in rows)

    def take(self, item_id: int) -> bool:
        """Mark an item taken; True for the first taker only."""
        with self.database.connection() as db:
            cursor = db.execute("UPDATE aimon_inbox SET taken_at = %s WHERE id = %s "
                                "AND taken_at IS NULL", (self._clock(), item_id))
            return cursor.rowcount == 1

    def sessions(self) -> tuple[str, ...]:
        """Return the sessions that have items not taken yet."""
        with self.database.connection() as db:
            rows = db.execute("SELECT session_id FROM aimon_inbox WHERE taken_at IS NULL "
                              "GROUP BY session_id ORDER BY min(id)").fetchall()
        return tuple(str(row[0]) for row in rows)


class PostgresIdempotencyStore:
    """An IdempotencyStore in PostgreSQL: the first claim of a key wins, on any node; a
    claim left in flight past `hold_seconds` (its claimer died) is taken by the next."""

    def __init__(self, database: PostgresDatabase, clock: Callable[[], float] = time.time, *,
                 hold_seconds: float = HOLD_SECONDS) -> None:
        self.database = database
        self._clock = clock
        self._hold = hold_seconds

    def claim(self, scope: str, key: str, outcome: Mapping[str, Any]
              ) -> Mapping[str, Any] | None:
        """Claim `key`; None if first (or its first claim was lost), else what is stored."""
        now = self._clock()
        with self.database.connection() as db:
            row = db.execute(
                "INSERT INTO aimon_idempotency AS k (scope, key, claimed_at, outcome) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT (scope, key) DO UPDATE SET "
                "claimed_at = EXCLUDED.claimed_at, outcome = EXCLUDED.outcome "
                "WHERE NOT k.done AND k.claimed_at + %s <= %s RETURNING 1",
                (scope, key, now, json.dumps(dict(outcome)), self._hold, now)).fetchone()
            if row is not None:
                return None
            found = db.execute("SELECT outcome FROM aimon_idempotency WHERE scope = %s "
                               "AND key = %s", (scope, key)).fetchone()
        stored = json.loads(str(found[0])) if found is not None else {}
        return stored if isinstance(stored, dict) else {}

    def finish(self, scope: str, key: str, outcome: Mapping[str, Any]) -> None:
        """Mark the key done with `outcome`."""
        with self.database.connection() as db:
            db.execute("UPDATE aimon_idempotency SET outcome = %s, done = true "
                       "WHERE scope = %s AND key = %s", (json.dumps(dict(outcome)), scope, key))

    def forget_before(self, moment: float) -> int:
        """Forget keys claimed before `moment`."""
        with self.database.connection() as db:
            return db.execute("DELETE FROM aimon_idempotency WHERE claimed_at < %s",
                              (moment,)).rowcount


class PostgresSignalBus:
    """A SignalBus on `LISTEN/NOTIFY`: signals reach the session's holder on any node.

    Each signal is also kept as a row for `SIGNAL_KEEP_SECONDS`: a bus whose listening
    connection drops connects again and delivers the rows it missed, so a signal reaches a
    live holder at least once; after a reconnect it may come twice (handlers take a signal
    twice calmly: an interrupt with no turn running does nothing, a wake finds the inbox empty).
    """

    def __init__(self, database: PostgresDatabase) -> None:
        self.database = database
        self._listeners = Listeners()
        self._lock = threading.Lock()
        self._listener: psycopg.Connection[tuple[Any, ...]] | None = None
        self._pid = 0
        self._seen: int | None = None  # the newest signal row delivered (None: not started)
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()

    def publish(self, session_id: str, signal: Signal) -> int:
        """Send `signal` to the session's listeners; return how many buses listen for it."""
        with self.database.connection() as db, db.transaction():
            db.execute("DELETE FROM aimon_signals WHERE sent_at < now() - %s * interval "
                       "'1 second'", (SIGNAL_KEEP_SECONDS,))
            (number,) = db.execute("INSERT INTO aimon_signals (session_id, signal) "
                                   "VALUES (%s, %s) RETURNING id",
                                   (session_id, signal.value)).fetchone() or (0,)
            payload = json.dumps({"id": number, "session": session_id, "signal": signal.value})
            row = db.execute(
                "SELECT count(*) FROM aimon_listeners l JOIN pg_stat_activity a "
                "ON a.pid = l.backend_pid WHERE l.session_id = %s", (session_id,)).fetchone()
            db.execute("SELECT pg_notify(%s, %s)", (_CHANNEL, payload))
        return int(row[0]) if row else 0

    def subscribe(self, session_id: str, handler: SignalHandler) -> Callable[[], None]:
        """Call `handler` (on the bus's thread) with each signal for the session."""
        self._start()
        if self._listeners.add(session_id, handler):
            with self.database.connection() as db:
                db.execute("INSERT INTO aimon_listeners VALUES (%s, %s) ON CONFLICT DO NOTHING",
                           (self._pid, session_id))

        def unsubscribe() -> None:
            if self._listeners.remove(session_id, handler):
                with self.database.connection() as db:
                    db.execute("DELETE FROM aimon_listeners WHERE backend_pid = %s "
                               "AND session_id = %s", (self._pid, session_id))

        return unsubscribe

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._connect()
            self._thread = threading.Thread(target=self._run, daemon=True,
                                            name=f"aimon signals ({self.database.name})")
            self._thread.start()

    def _connect(self) -> psycopg.Connection[tuple[Any, ...]]:
        """Listen on a new connection, register its sessions, deliver what was missed."""
        connection = self.database.connect()
        try:
            connection.execute(f"LISTEN {_CHANNEL}")
            pid = connection.info.backend_pid
            sessions = self._listeners.sessions()
            with self.database.connection() as db, db.transaction():
                for session_id in sessions:
                    db.execute("INSERT INTO aimon_listeners VALUES (%s, %s) "
                               "ON CONFLICT DO NOTHING", (pid, session_id))
                db.execute("DELETE FROM aimon_listeners WHERE backend_pid = %s", (self._pid,))
                missed = db.execute(
                    "SELECT id, session_id, signal FROM aimon_signals WHERE id > %s "
                    "ORDER BY id", (self._seen,)).fetchall() if self._seen is not None else []
                if self._seen is None:  # a new bus hears what is sent from now on
                    newest = db.execute("SELECT coalesce(max(id), 0) FROM aimon_signals"
                                        ).fetchone()
                    self._seen = int(newest[0]) if newest else 0
        except BaseException:
            connection.close()
            raise
        self._pid, self._listener = pid, connection
        for number, session_id, signal in missed:
            self._deliver(json.dumps({"id": number, "session": session_id, "signal": signal}))
        return connection

    def _run(self) -> None:
        delay = 0.1
        while not self._closed.is_set():
            connection = self._listener
            try:
                if connection is None or connection.closed:
                    connection = self._connect()
                    delay = 0.1
                for notice in connection.notifies(timeout=0.25):
                    self._deliver(notice.payload)
            except (psycopg.Error, StoreUnavailableError) as exc:
                if self._closed.is_set():
                    return
                log.warning("the signal bus lost its connection (%s): connecting again", exc)
                if connection is not None:
                    with contextlib.suppress(psycopg.Error):
                        connection.close()
                self._listener = None
                self._closed.wait(delay)
                delay = min(delay * 2, 5.0)

    def _deliver(self, payload: str) -> None:
        try:
            data = json.loads(payload)
            number, session_id = int(data["id"]), str(data["session"])
            signal = Signal(data["signal"])
        except (ValueError, KeyError, TypeError):
            log.warning("ignored a signal that is not aimon's: %r", payload[:200])
            return
        self._seen = max(self._seen or 0, number)
        self._listeners.deliver(session_id, signal)

    def listener_pid(self) -> int:
        """Return the server process of the listening connection (tests cut it)."""
        return self._pid

    def close(self) -> None:
        """Stop listening (the listener rows go with the connection)."""
        self._closed.set()
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=10)
        listener, self._listener = self._listener, None
        self._listeners.clear()
        if listener is not None:
            with contextlib.suppress(psycopg.Error, StoreUnavailableError), \
                    self.database.connection() as db:
                db.execute("DELETE FROM aimon_listeners WHERE backend_pid = %s", (self._pid,))
            listener.close()
