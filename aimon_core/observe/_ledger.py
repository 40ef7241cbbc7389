"""The cost ledger: every model call's tokens and cost, kept in one SQLite file, and hard caps.

One row a model call: when, for which session, project, agent and model, its tokens and what
it cost (the runtime's price table, the one the session's own totals use). The file is the
user's, shared by every aimon process (WAL, one short transaction a row), so a daily cap holds
across the REPL, print mode and the service at once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from aimon_core.llm import Usage

if TYPE_CHECKING:
    import sqlite3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    at REAL NOT NULL, day TEXT NOT NULL, session TEXT NOT NULL, project TEXT NOT NULL,
    agent TEXT NOT NULL, model TEXT NOT NULL, provider TEXT NOT NULL,
    input INTEGER NOT NULL, output INTEGER NOT NULL, cache_read INTEGER NOT NULL,
    cache_write INTEGER NOT NULL, cost REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_at ON calls (at);
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerEntry:
    """One model call: when (seconds since the epoch), for what, its usage and cost in USD."""

    at: float
    session_id: str
    project: str
    agent: str
    model: str
    provider: str
    usage: Usage
    cost_usd: float

    @property
    def day(self) -> str:
        """Return the local calendar day of the call (2026-12-01)."""
        return datetime.fromtimestamp(self.at).astimezone().date().isoformat()


class SQLiteLedgerStore:
    """The ledger's rows in one SQLite file (`usage.sqlite3` in aimon's data folder).

    Blocking: call it off the event loop. One connection, opened on first use and kept (a
    connection a row cost ~1 ms of CPU: the schema and the WAL setting each time).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if self._db is None:
                import sqlite3  # ~1 ms, off the start-up path: the first call is in a thread

                self.path.parent.mkdir(parents=True, exist_ok=True)
                # The user's alone, as the sessions are (SQLite gives its -wal file the same).
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
                db = sqlite3.connect(self.path, timeout=10.0, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.executescript(_SCHEMA)
                self._db = db
            with self._db:
                yield self._db

    def close(self) -> None:
        """Close the connection (a later call opens it again)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def add(self, entry: LedgerEntry) -> None:
        """Keep one call."""
        u = entry.usage
        with self._connect() as db:
            db.execute("INSERT INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", (
                entry.at, entry.day, entry.session_id, entry.project, entry.agent, entry.model,
                entry.provider, u.input_tokens, u.output_tokens, u.cache_read_tokens,
                u.cache_write_tokens, entry.cost_usd))

    def spent_since(self, since: float) -> float:
        """Return what every call since `since` (seconds since the epoch) cost."""
        if not self.path.exists():
            return 0.0
        with self._connect() as db:
            row = db.execute("SELECT COALESCE(SUM(cost), 0) FROM calls WHERE at >= ?",
                             (since,)).fetchone()
        return float(row[0])

    def entries(self, since: float = 0.0) -> tuple[LedgerEntry, ...]:
        """Return every call since `since`, oldest first."""
        if not self.path.exists():
            return ()
        with self._connect() as db:
            rows = db.execute(
                "SELECT at, session, project, agent, model, provider, input, output, "
                "cache_read, cache_write, cost FROM calls WHERE at >= ? ORDER BY at",
                (since,)).fetchall()
        return tuple(
            LedgerEntry(at=r[0], session_id=r[1], project=r[2], agent=r[3], model=r[4],
                        provider=r[5], usage=Usage(input_tokens=r[6], output_tokens=r[7],
                                                   cache_read_tokens=r[8],
                                                   cache_write_tokens=r[9]),
                        cost_usd=r[10])
            for r in rows)


def ledger_path() -> Path:
    """Return the ledger's file under aimon's data folder (AIMON_HOME moves it)."""
    from aimon_core.session import user_data_dir

    return user_data_dir() / "usage.sqlite3"


def start_of_day(now: float) -> float:
    """Return the start of `now`'s local calendar day, in seconds since the epoch."""
    local = datetime.fromtimestamp(now).astimezone()
    return local.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()


def start_of_month(now: float) -> float:
    """Return the start of `now`'s local calendar month, in seconds since the epoch."""
    local = datetime.fromtimestamp(now).astimezone()
    return local.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp()
