"""Where routines and their runs are kept: two small protocols, in memory and in SQLite.

- `RoutineStore`: the routines. `change` reads, changes and writes one routine as one
  transaction, so of several engines sharing a store (a cluster, or two services racing on
  one file) one claims each occurrence: the change that finds `next_run` already moved does
  nothing.
- `RunLog`: each run, from its start to its end; a run a dead engine left running is marked
  interrupted, not lost.

The embedded backends keep both in the service's SQLite file, so they survive restarts. A
networked backend (PostgreSQL: `SELECT ... FOR UPDATE SKIP LOCKED`) implements the same
protocols and passes the same contract suite (`aimon_core.testing.RoutineStoreContract`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Protocol

from aimon_core._sqlite import SQLiteFile
from aimon_core.scheduling._routine import (
    Routine,
    RoutineError,
    RoutineRun,
    RunOutcome,
    routine_from_json,
    routine_to_json,
    run_from_json,
    run_to_json,
)

# Given the routine as stored, return it changed (None: leave it as it is).
Change = Callable[[Routine], Routine | None]


class RoutineStore(Protocol):
    """The routines, by name."""

    def put(self, routine: Routine, *, replace_existing: bool = False) -> None:
        """Store a routine; raise RoutineError if one has its name (unless replacing)."""
        ...

    def get(self, name: str) -> Routine | None:
        """Return the routine named `name`, or None."""
        ...

    def all(self) -> tuple[Routine, ...]:
        """Return every routine, by name."""
        ...

    def remove(self, name: str) -> bool:
        """Forget a routine (its runs stay in the log); False if there was none."""
        ...

    def change(self, name: str, change: Change) -> Routine | None:
        """Apply `change` to the stored routine atomically; return what was written (None:
        no such routine, or `change` changed nothing)."""
        ...


class RunLog(Protocol):
    """The runs of routines."""

    def begin(self, run: RoutineRun) -> None:
        """Record a run that starts (or was skipped: then it is already ended)."""
        ...

    def end(self, run: RoutineRun) -> None:
        """Record how a run ended (or its session, while it runs)."""
        ...

    def runs(self, routine: str | None = None, *, since: float = 0.0,
             limit: int = 100) -> tuple[RoutineRun, ...]:
        """Return the runs (of one routine, or all) started at `since` or later, newest
        first."""
        ...

    def interrupt_running(self, holder: str, now: float) -> int:
        """Mark the runs `holder` left running as interrupted; return how many."""
        ...


def interrupted(run: RoutineRun, now: float) -> RoutineRun:
    """Return `run` ended as interrupted (its engine stopped or died while it ran)."""
    return replace(run, outcome=RunOutcome.INTERRUPTED, finished=now,
                   message=run.message or "the service stopped while it ran")


# ------------------------------------------------------------------------------- memory


class MemoryRoutineStore:
    """A RoutineStore in memory (tests, a library caller's own engine)."""

    def __init__(self) -> None:
        self._routines: dict[str, Routine] = {}
        self._lock = threading.Lock()

    def put(self, routine: Routine, *, replace_existing: bool = False) -> None:
        """Store a routine."""
        with self._lock:
            if routine.name in self._routines and not replace_existing:
                raise RoutineError(routine.name, "a routine has this name already")
            self._routines[routine.name] = routine

    def get(self, name: str) -> Routine | None:
        """Return the routine named `name`."""
        with self._lock:
            return self._routines.get(name)

    def all(self) -> tuple[Routine, ...]:
        """Return every routine, by name."""
        with self._lock:
            return tuple(self._routines[name] for name in sorted(self._routines))

    def remove(self, name: str) -> bool:
        """Forget a routine."""
        with self._lock:
            return self._routines.pop(name, None) is not None

    def change(self, name: str, change: Change) -> Routine | None:
        """Apply `change` atomically."""
        with self._lock:
            found = self._routines.get(name)
            changed = change(found) if found is not None else None
            if changed is None or changed == found:
                return None
            self._routines[name] = changed
            return changed


class MemoryRunLog:
    """A RunLog in memory."""

    def __init__(self) -> None:
        self._runs: dict[str, RoutineRun] = {}
        self._lock = threading.Lock()

    def begin(self, run: RoutineRun) -> None:
        """Record a run that starts."""
        with self._lock:
            self._runs[run.id] = run

    def end(self, run: RoutineRun) -> None:
        """Record how a run ended."""
        self.begin(run)

    def runs(self, routine: str | None = None, *, since: float = 0.0,
             limit: int = 100) -> tuple[RoutineRun, ...]:
        """Return the runs, newest first."""
        with self._lock:
            found = [run for run in self._runs.values() if run.started >= since
                     and (routine is None or run.routine == routine)]
        found.sort(key=lambda run: run.started, reverse=True)
        return tuple(found[:limit])

    def interrupt_running(self, holder: str, now: float) -> int:
        """Mark the runs `holder` left running as interrupted."""
        with self._lock:
            left = [run for run in self._runs.values()
                    if run.outcome is RunOutcome.RUNNING and run.holder == holder]
            for run in left:
                self._runs[run.id] = interrupted(run, now)
        return len(left)


# ------------------------------------------------------------------------------- SQLite

_SCHEMA = """
CREATE TABLE IF NOT EXISTS routines (name TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS routine_runs (
    id TEXT PRIMARY KEY, routine TEXT NOT NULL, started REAL NOT NULL, outcome TEXT NOT NULL,
    holder TEXT NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS routine_runs_started ON routine_runs (routine, started);
"""



class SQLiteRoutineStore:
    """A RoutineStore in a SQLite file: routines survive restarts; `change` holds the
    database's write lock from its read to its write (BEGIN IMMEDIATE)."""

    def __init__(self, path: Path) -> None:
        self._db = SQLiteFile(path, _SCHEMA)

    def put(self, routine: Routine, *, replace_existing: bool = False) -> None:
        """Store a routine."""
        data = json.dumps(routine_to_json(routine))
        verb = "INSERT OR REPLACE" if replace_existing else "INSERT OR IGNORE"
        with self._db.connect() as db:
            cursor = db.execute(f"{verb} INTO routines VALUES (?, ?)", (routine.name, data))
            if cursor.rowcount != 1:
                raise RoutineError(routine.name, "a routine has this name already")

    def get(self, name: str) -> Routine | None:
        """Return the routine named `name`."""
        with self._db.connect() as db:
            row = db.execute("SELECT data FROM routines WHERE name = ?", (name,)).fetchone()
        return routine_from_json(json.loads(row[0])) if row is not None else None

    def all(self) -> tuple[Routine, ...]:
        """Return every routine, by name."""
        with self._db.connect() as db:
            rows = db.execute("SELECT data FROM routines ORDER BY name").fetchall()
        return tuple(routine_from_json(json.loads(row[0])) for row in rows)

    def remove(self, name: str) -> bool:
        """Forget a routine."""
        with self._db.connect() as db:
            return db.execute("DELETE FROM routines WHERE name = ?", (name,)).rowcount == 1

    def change(self, name: str, change: Change) -> Routine | None:
        """Apply `change` as one transaction."""
        with self._db.connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute("SELECT data FROM routines WHERE name = ?",
                                 (name,)).fetchone()
                found = routine_from_json(json.loads(row[0])) if row is not None else None
                changed = change(found) if found is not None else None
                if changed is None or changed == found:
                    db.execute("ROLLBACK")
                    return None
                db.execute("UPDATE routines SET data = ? WHERE name = ?",
                           (json.dumps(routine_to_json(changed)), name))
                db.execute("COMMIT")
                return changed
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise


class SQLRunLog:
    """What the SQL run logs share: their queries (in the backend's placeholder style) and
    how a run left running is ended. A backend gives `_select` and `begin`."""

    _mark = "?"
    _table = "routine_runs"

    def _select(self, query: str, args: tuple[object, ...]) -> list[RoutineRun]:
        raise NotImplementedError

    def begin(self, run: RoutineRun) -> None:
        """Record a run that starts."""
        raise NotImplementedError

    def end(self, run: RoutineRun) -> None:
        """Record how a run ended."""
        self.begin(run)

    def runs(self, routine: str | None = None, *, since: float = 0.0,
             limit: int = 100) -> tuple[RoutineRun, ...]:
        """Return the runs, newest first."""
        mark = self._mark
        query = f"SELECT data FROM {self._table} WHERE started >= {mark}"
        args: tuple[object, ...] = (since,)
        if routine is not None:
            query += f" AND routine = {mark}"
            args += (routine,)
        return tuple(self._select(query + f" ORDER BY started DESC LIMIT {mark}",
                                  (*args, limit)))

    def interrupt_running(self, holder: str, now: float) -> int:
        """Mark the runs `holder` left running as interrupted."""
        left = self._select(f"SELECT data FROM {self._table} WHERE outcome = {self._mark} "
                            f"AND holder = {self._mark}", (RunOutcome.RUNNING.value, holder))
        for run in left:
            self.end(interrupted(run, now))
        return len(left)


class SQLiteRunLog(SQLRunLog):
    """A RunLog in a SQLite file."""

    def __init__(self, path: Path) -> None:
        self._db = SQLiteFile(path, _SCHEMA)

    def begin(self, run: RoutineRun) -> None:
        """Record a run that starts."""
        with self._db.connect() as db:
            db.execute("INSERT OR REPLACE INTO routine_runs VALUES (?, ?, ?, ?, ?, ?)",
                       (run.id, run.routine, run.started, run.outcome.value, run.holder,
                        json.dumps(run_to_json(run))))

    def _select(self, query: str, args: tuple[object, ...]) -> list[RoutineRun]:
        with self._db.connect() as db:
            rows = db.execute(query, args).fetchall()
        return [run_from_json(json.loads(row[0])) for row in rows]
