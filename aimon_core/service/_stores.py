"""The service's stores: a session inbox, idempotency keys and a signal bus, as small protocols.

- `SessionInbox`: any sender delivers text to a session; whoever holds the session takes
  each item, at most once (`take` is True for one taker only), and runs it as a turn.
- `IdempotencyStore`: a key given with a submission is claimed once; the same key again
  returns what the first claim stored, so a retried `aimon send --key K` runs once.
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


class IdempotencyStore(Protocol):
    """Keys that make a submission run at most once."""

    def claim(self, scope: str, key: str, outcome: Mapping[str, Any]
              ) -> Mapping[str, Any] | None:
        """Claim `key` in `scope` with `outcome`; None if this is the first claim, else the
        outcome the first claim stored."""
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

    def __init__(self, clock: Clock = time.time) -> None:
        self._keys: dict[tuple[str, str], tuple[float, Mapping[str, Any]]] = {}
        self._clock = clock
        self._lock = threading.Lock()

    def claim(self, scope: str, key: str, outcome: Mapping[str, Any]
              ) -> Mapping[str, Any] | None:
        """Claim `key`; None if first, else the first claim's outcome."""
        with self._lock:
            found = self._keys.get((scope, key))
            if found is not None:
                return found[1]
            self._keys[(scope, key)] = (self._clock(), dict(outcome))
            return None

    def forget_before(self, moment: float) -> int:
        """Forget keys claimed before `moment`."""
        with self._lock:
            old = [k for k, (when, _) in self._keys.items() if when < moment]
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
    PRIMARY KEY (scope, key));
"""



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

    def __init__(self, path: Path, clock: Clock = time.time) -> None:
        self._db = SQLiteFile(path, _SCHEMA)
        self._clock = clock

    def claim(self, scope: str, key: str, outcome: Mapping[str, Any]
              ) -> Mapping[str, Any] | None:
        """Claim `key`; None if first, else the first claim's outcome."""
        with self._db.connect() as db:
            cursor = db.execute("INSERT OR IGNORE INTO idempotency VALUES (?, ?, ?, ?)",
                                (scope, key, self._clock(), json.dumps(dict(outcome))))
            if cursor.rowcount == 1:
                return None
            row = db.execute("SELECT outcome FROM idempotency WHERE scope = ? AND key = ?",
                             (scope, key)).fetchone()
        stored = json.loads(row[0]) if row is not None else {}
        return stored if isinstance(stored, dict) else {}

    def forget_before(self, moment: float) -> int:
        """Forget keys claimed before `moment`."""
        with self._db.connect() as db:
            return db.execute("DELETE FROM idempotency WHERE claimed_at < ?",
                              (moment,)).rowcount
