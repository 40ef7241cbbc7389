"""The routine stores in PostgreSQL, for services that share their routines (a cluster).

Several services on one database each run every due occurrence's claim as `change`: the
routine's row is read `FOR UPDATE` in a transaction, so one claimer at a time sees it and
the others find `next_run` already moved (nothing to run). A run a service left running
when it died stays in the log; the next start of a service of the same name (the holder)
marks it interrupted. psycopg (3) is imported when a store is first used:

    PostgresRoutineStore("postgresql://aimon@db/aimon"), PostgresRunLog(same)

Both pass the contract suite of every routine store (`RoutineStoreContract`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from aimon_core.scheduling._routine import (
    Routine,
    RoutineError,
    RoutineRun,
    routine_from_json,
    routine_to_json,
    run_from_json,
    run_to_json,
)
from aimon_core.scheduling._store import Change, SQLRunLog

_SCHEMA = """
CREATE TABLE IF NOT EXISTS aimon_routines (name TEXT PRIMARY KEY, data JSONB NOT NULL);
CREATE TABLE IF NOT EXISTS aimon_routine_runs (
    id TEXT PRIMARY KEY, routine TEXT NOT NULL, started DOUBLE PRECISION NOT NULL,
    outcome TEXT NOT NULL, holder TEXT NOT NULL, data JSONB NOT NULL);
CREATE INDEX IF NOT EXISTS aimon_routine_runs_started ON aimon_routine_runs (routine, started);
"""


class _Postgres:
    """A database by its connection string; a connection per call, the schema made once."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._ready = False

    @contextlib.contextmanager
    def connect(self) -> Iterator[Any]:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as connection:
            if not self._ready:
                # Two services making the schema at once: one at a time (an advisory lock).
                with connection.transaction():
                    connection.execute("SELECT pg_advisory_xact_lock(724007)")
                    connection.execute(_SCHEMA)
                self._ready = True
            yield connection


class PostgresRoutineStore:
    """A RoutineStore in PostgreSQL; `change` locks the routine's row (FOR UPDATE)."""

    def __init__(self, dsn: str) -> None:
        self._db = _Postgres(dsn)

    def put(self, routine: Routine, *, replace_existing: bool = False) -> None:
        """Store a routine."""
        data = json.dumps(routine_to_json(routine))
        conflict = "DO UPDATE SET data = EXCLUDED.data" if replace_existing else "DO NOTHING"
        with self._db.connect() as db:
            cursor = db.execute(f"INSERT INTO aimon_routines VALUES (%s, %s) "
                                f"ON CONFLICT (name) {conflict}", (routine.name, data))
            if cursor.rowcount != 1:
                raise RoutineError(routine.name, "a routine has this name already")

    def get(self, name: str) -> Routine | None:
        """Return the routine named `name`."""
        with self._db.connect() as db:
            row = db.execute("SELECT data FROM aimon_routines WHERE name = %s",
                             (name,)).fetchone()
        return routine_from_json(row[0]) if row is not None else None

    def all(self) -> tuple[Routine, ...]:
        """Return every routine, by name."""
        with self._db.connect() as db:
            rows = db.execute("SELECT data FROM aimon_routines ORDER BY name").fetchall()
        return tuple(routine_from_json(row[0]) for row in rows)

    def remove(self, name: str) -> bool:
        """Forget a routine."""
        with self._db.connect() as db:
            cursor = db.execute("DELETE FROM aimon_routines WHERE name = %s", (name,))
            return bool(cursor.rowcount == 1)

    def change(self, name: str, change: Change) -> Routine | None:
        """Apply `change` in one transaction, the row locked from its read to its write."""
        with self._db.connect() as db, db.transaction():
            row = db.execute("SELECT data FROM aimon_routines WHERE name = %s FOR UPDATE",
                             (name,)).fetchone()
            found = routine_from_json(row[0]) if row is not None else None
            changed = change(found) if found is not None else None
            if changed is None or changed == found:
                return None
            db.execute("UPDATE aimon_routines SET data = %s WHERE name = %s",
                       (json.dumps(routine_to_json(changed)), name))
            return changed


class PostgresRunLog(SQLRunLog):
    """A RunLog in PostgreSQL."""

    _mark = "%s"
    _table = "aimon_routine_runs"

    def __init__(self, dsn: str) -> None:
        self._db = _Postgres(dsn)

    def begin(self, run: RoutineRun) -> None:
        """Record a run that starts."""
        with self._db.connect() as db:
            db.execute("INSERT INTO aimon_routine_runs VALUES (%s, %s, %s, %s, %s, %s) "
                       "ON CONFLICT (id) DO UPDATE SET outcome = EXCLUDED.outcome, "
                       "data = EXCLUDED.data",
                       (run.id, run.routine, run.started, run.outcome.value, run.holder,
                        json.dumps(run_to_json(run))))

    def _select(self, query: str, args: tuple[object, ...]) -> list[RoutineRun]:
        with self._db.connect() as db:
            rows = db.execute(query, args).fetchall()
        return [run_from_json(row[0]) for row in rows]
