"""The service's stores: a session inbox, idempotency keys and a signal bus, as small protocols.

- `SessionInbox`: any sender delivers text to a session; whoever holds the session takes
  each item, at most once (`take` is True for one taker only), and runs it as a turn.
- `IdempotencyStore`: a key given with a submission is claimed once; the same key again
  returns what the first claim stored, so a retried `aimon send --key K` runs once. A key is
  in flight from its claim until `finish`; one still in flight after `HOLD_SECONDS` is taken
  as lost with its holder (a crash between claim and delivery), and the next claim wins.
- `SignalBus`: signals to the holder of a session (interrupt its turn, close it).

The embedded implementations keep the inbox and the keys in one SQLite file in the service's
folder (they survive a crash of the service) and the signals in the process (the embedded
service is one process). A networked backend (PostgreSQL, Redis) implements the same
protocols and passes the same contract suites (`aimon_core.testing`).
"""

from __future__ import annotations

import contextlib
import enum
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from aimon_core._sqlite import SQLiteFile

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True, kw_only=True)
class InboxItem:
    """Text delivered to a session and not taken yet."""

    id: int
    session_id: str
    text: str
    sender: str = ""
    delivered_at: float = 0.0


class SessionInbox(Protocol):
    """Text for sessions, delivered by anyone and taken, once, by the session's holder."""

    def deliver(self, session_id: str, text: str, *, sender: str = "") -> InboxItem:
        """Store `text` for the session; return the item."""
        ...

    def pending(self, session_id: str) -> tuple[InboxItem, ...]:
        """Return the session's items not taken yet, oldest first."""
        ...

    def take(self, item_id: int) -> bool:
        """Mark an item taken; True for the first taker only (at most once)."""
        ...

    def sessions(self) -> tuple[str, ...]:
        """Return the sessions that have items not taken yet."""
        ...


# How long a claimed key may stay in flight (claimed, not finished) before a claimer that
# died with it is given up on: the seeds' short secondary TTL.
HOLD_SECONDS = 30.0


class IdempotencyStore(Protocol):
    """Keys that make a submission run at most once."""

    def claim(self, scope: str, key: str, outcome: Mapping[str, Any]
              ) -> Mapping[str, Any] | None:
        """Claim `key` in `scope` with `outcome`; None if this is the first claim (or the
        first claimer never finished within its hold time), else the outcome stored: the
        first claim's, or its `finish` outcome."""
        ...

    def finish(self, scope: str, key: str, outcome: Mapping[str, Any]) -> None:
        """Mark a claimed key done with `outcome` (it is kept until `forget_before`)."""
        ...

    def forget_before(self, moment: float) -> int:
        """Forget keys claimed before `moment` (seconds since the epoch); return how many."""
        ...


class Signal(enum.Enum):
    """What a client asks of whoever holds a session."""

    INTERRUPT = "interrupt"  # stop the running turn (`aimon stop ID`)
    CLOSE = "close"  # stop it and let the session go (`aimon stop ID --close`)
    WAKE = "wake"  # look at the inbox: another service delivered to it (`aimon send`)


SignalHandler = Callable[[Signal], None]


class SignalBus(Protocol):
    """Signals for sessions, heard by whoever holds each."""

    def publish(self, session_id: str, signal: Signal) -> int:
        """Send `signal` to the session's listeners; return how many heard it."""
        ...

    def subscribe(self, session_id: str, handler: SignalHandler) -> Callable[[], None]:
        """Call `handler` with each signal for the session; return what unsubscribes."""
        ...


# ------------------------------------------------------------------------------- memory


class MemoryInbox:
    """A SessionInbox in memory (tests, library callers with no service)."""

    def __init__(self, clock: Clock = time.time) -> None:
        self._items: dict[int, tuple[InboxItem, bool]] = {}
        self._clock = clock
        self._lock = threading.Lock()

    def deliver(self, session_id: str, text: str, *, sender: str = "") -> InboxItem:
        """Store `text` for the session; return the item."""
        with self._lock:
            item = InboxItem(id=len(self._items) + 1, session_id=session_id, text=text,
                             sender=sender, delivered_at=self._clock())
            self._items[item.id] = (item, False)
        return item

    def pending(self, session_id: str) -> tuple[InboxItem, ...]:
        """Return the session's items not taken yet, oldest first."""
        with self._lock:
            return tuple(item for item, taken in self._items.values()
                         if not taken and item.session_id == session_id)

    def take(self, item_id: int) -> bool:
        """Mark an item taken; True for the first taker only."""
        with self._lock:
            found = self._items.get(item_id)
            if found is None or found[1]:
                return False
            self._items[item_id] = (found[0], True)
            return True

    def sessions(self) -> tuple[str, ...]:
        """Return the sessions that have items not taken yet."""
        with self._lock:
            return tuple(dict.fromkeys(item.session_id for item, taken in self._items.values()
                                       if not taken))


class MemoryIdempotencyStore:
    """An IdempotencyStore in memory."""

    def __init__(self, clock: Clock = time.time, *, hold_seconds: float = HOLD_SECONDS) -> None:
        # (scope, key) -> (claimed at, outcome, done)
        self._keys: dict[tuple[str, str], tuple[float, Mapping[str, Any], bool]] = {}
        self._clock = clock
        self._hold = hold_seconds
        self._lock = threading.Lock()

    def claim(self, scope: str, key: str, outcome: Mapping[str, Any]
              ) -> Mapping[str, Any] | None:
        """Claim `key`; None if first (or its first claim was lost), else what is stored."""
        with self._lock:
            now = self._clock()
            found = self._keys.get((scope, key))
            if found is not None and (found[2] or found[0] + self._hold > now):
                return found[1]
            self._keys[(scope, key)] = (now, dict(outcome), False)
            return None

    def finish(self, scope: str, key: str, outcome: Mapping[str, Any]) -> None:
        """Mark the key done with `outcome`."""
        with self._lock:
            found = self._keys.get((scope, key))
            if found is not None:
                self._keys[(scope, key)] = (found[0], dict(outcome), True)

    def forget_before(self, moment: float) -> int:
        """Forget keys claimed before `moment`."""
        with self._lock:
            old = [k for k, (when, _, _) in self._keys.items() if when < moment]
            for k in old:
                del self._keys[k]
            return len(old)


class LocalSignalBus:
    """A SignalBus inside one process: the embedded service's (it is one process)."""

    def __init__(self) -> None:
        self._handlers: dict[str, list[SignalHandler]] = {}

    def publish(self, session_id: str, signal: Signal) -> int:
        """Call the session's handlers with `signal`; return how many."""
        handlers = list(self._handlers.get(session_id, ()))
        for handler in handlers:
            handler(signal)
        return len(handlers)

    def subscribe(self, session_id: str, handler: SignalHandler) -> Callable[[], None]:
        """Call `handler` with the session's signals until unsubscribed."""
        self._handlers.setdefault(session_id, []).append(handler)

        def unsubscribe() -> None:
            handlers = self._handlers.get(session_id, [])
            with contextlib.suppress(ValueError):
                handlers.remove(handler)
            if not handlers:
                self._handlers.pop(session_id, None)

        return unsubscribe


# ------------------------------------------------------------------------------- SQLite

_SCHEMA = """
CREATE TABLE IF NOT EXISTS inbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, text TEXT NOT NULL,
    sender TEXT NOT NULL DEFAULT '', delivered_at REAL NOT NULL, taken_at REAL);
CREATE INDEX IF NOT EXISTS inbox_pending ON inbox (session_id) WHERE taken_at IS NULL;
CREATE TABLE IF NOT EXISTS idempotency (
    scope TEXT NOT NULL, key TEXT NOT NULL, claimed_at REAL NOT NULL, outcome TEXT NOT NULL,
    done INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (scope, key));
"""
# Added to a database made before keys had a done state: keys claimed then count as done.
_DONE_COLUMN = "ALTER TABLE idempotency ADD COLUMN done INTEGER NOT NULL DEFAULT 1"



class SQLiteInbox:
    """A SessionInbox in a SQLite file: what was delivered survives a crash of the service."""

    def __init__(self, path: Path, clock: Clock = time.time) -> None:
        self._db = SQLiteFile(path, _SCHEMA)
        self._clock = clock

    def deliver(self, session_id: str, text: str, *, sender: str = "") -> InboxItem:
        """Store `text` for the session; return the item."""
        now = self._clock()
        with self._db.connect() as db:
            cursor = db.execute("INSERT INTO inbox (session_id, text, sender, delivered_at) "
                                "VALUES (?, ?, ?, ?)", (session_id, text, sender, now))
            assert cursor.lastrowid is not None
            return InboxItem(id=cursor.lastrowid, session_id=session_id, text=text,
                             sender=sender, delivered_at=now)

    def pending(self, session_id: str) -> tuple[InboxItem, ...]:
        """Return the session's items not taken yet, oldest first."""
        with self._db.connect() as db:
            rows = db.execute("SELECT id, text, sender, delivered_at FROM inbox WHERE "
                              "session_id = ? AND taken_at IS NULL ORDER BY id",
                              (session_id,)).fetchall()
        return tuple(InboxItem(id=row[0], session_id=session_id, text=row[1], sender=row[2],
                               delivered_at=row[3]) for row in rows)

    def take(self, item_id: int) -> bool:
        """Mark an item taken; True for the first taker only."""
        with self._db.connect() as db:
            cursor = db.execute("UPDATE inbox SET taken_at = ? WHERE id = ? AND "
                                "taken_at IS NULL", (self._clock(), item_id))
            return cursor.rowcount == 1

    def sessions(self) -> tuple[str, ...]:
        """Return the sessions that have items not taken yet."""
        with self._db.connect() as db:
            rows = db.execute("SELECT DISTINCT session_id FROM inbox WHERE taken_at IS NULL "
                              "ORDER BY id").fetchall()
        return tuple(row[0] for row in rows)


class SQLiteIdempotencyStore:
    """An IdempotencyStore in a SQLite file (the keys survive a crash of the service)."""

    def __init__(self, path: Path, clock: Clock = time.time, *,
                 hold_seconds: float = HOLD_SECONDS) -> None:
        self._db = SQLiteFile(path, _SCHEMA)
        self._upgraded = False
        self._clock = clock
        self._hold = hold_seconds

    def claim(self, scope: str, key: str, outcome: Mapping[str, Any]
              ) -> Mapping[str, Any] | None:
        """Claim `key`; None if first (or its first claim was lost), else what is stored."""
        now = self._clock()
        with self._db.connect() as db:
            self._upgrade(db)
            db.execute("BEGIN IMMEDIATE")  # one claimer at a time decides
            try:
                row = db.execute("SELECT claimed_at, outcome, done FROM idempotency WHERE "
                                 "scope = ? AND key = ?", (scope, key)).fetchone()
                if row is not None and (row[2] or row[0] + self._hold > now):
                    stored = json.loads(row[1])
                    return stored if isinstance(stored, dict) else {}
                db.execute("INSERT OR REPLACE INTO idempotency (scope, key, claimed_at, outcome,"
                           " done) VALUES (?, ?, ?, ?, 0)",
                           (scope, key, now, json.dumps(dict(outcome))))
                return None
            finally:
                db.execute("COMMIT")

    def finish(self, scope: str, key: str, outcome: Mapping[str, Any]) -> None:
        """Mark the key done with `outcome`."""
        with self._db.connect() as db:
            self._upgrade(db)
            db.execute("UPDATE idempotency SET outcome = ?, done = 1 WHERE scope = ? AND key = ?",
                       (json.dumps(dict(outcome)), scope, key))

    def _upgrade(self, db: sqlite3.Connection) -> None:
        """Add the done column to a database made before keys had one (once per store)."""
        if self._upgraded:
            return
        columns = {row[1] for row in db.execute("PRAGMA table_info(idempotency)")}
        if "done" not in columns:
            with contextlib.suppress(sqlite3.OperationalError):  # another did it first
                db.execute(_DONE_COLUMN)
        self._upgraded = True

    def forget_before(self, moment: float) -> int:
        """Forget keys claimed before `moment`."""
        with self._db.connect() as db:
            return db.execute("DELETE FROM idempotency WHERE claimed_at < ?",
                              (moment,)).rowcount
