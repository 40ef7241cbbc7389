"""SessionRecordStore in PostgreSQL: messages as append-only rows, side state, snapshots.

A session is one row of `aimon_sessions` (identity, title, the side state as the codec's side
line, the started tool calls, the listing's counts) and its messages, one row each, numbered
from 0 (`seq`). Compaction writes the new transcript as one snapshot row at the next number
and drops the rows before it; a load reads the snapshot and the messages after it. Every
write is one transaction: a crash leaves all of it or none (no torn tail to repair).

Fencing: each session row keeps the newest lease token that wrote it (`fence`); a write under
an older token is refused in the same transaction, so a stale holder cannot write even where
its lease store is slow to tell it (the PostgreSQL lease store raises `fence` when it grants a
lease, so a new holder fences the old one out before writing anything).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import psycopg
from psycopg import errors as pg_errors

from aimon_core.llm import Message
from aimon_core.session import (
    BudgetOverride,
    Clock,
    ModelChoice,
    SessionCodecError,
    SessionExistsError,
    SessionId,
    SessionLease,
    SessionNotFoundError,
    SessionRecord,
    SessionSummary,
    SessionTotals,
    SessionTranscript,
    SideLine,
    StaleLeaseError,
    check_lease,
    line_to_json,
    message_from_json,
    title_from,
    unanswered_tool_ids,
    utc_now,
)
from aimon_core.stores._pg import PostgresDatabase
from aimon_core.stores._rows import decode_message, encode_message, side_of, with_side

Cursor = psycopg.Cursor[tuple[Any, ...]]


class PostgresSessionRecordStore:
    """Keeps session records in PostgreSQL (see the module docs)."""

    def __init__(self, database: PostgresDatabase, *, clock: Clock = utc_now) -> None:
        self.database = database
        self._clock = clock

    def create(self, record: SessionRecord) -> None:
        """Store a new session; raise SessionExistsError if its id is taken."""
        messages = record.transcript.messages
        with self.database.connection() as db, db.transaction(), db.cursor() as cur:
            try:
                cur.execute(
                    "INSERT INTO aimon_sessions (id, project_root, agent_ref, created_at, "
                    "updated_at, title, next_seq, message_count, side, started) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (record.id, record.project_root, record.agent_ref, record.created_at,
                     record.updated_at, record.title or title_from(messages), len(messages),
                     len(messages), side_of(record), json.dumps(record.started_tool_ids)))
            except pg_errors.UniqueViolation:
                raise SessionExistsError(record.id) from None
            _insert_messages(cur, record.id, 0, messages)

    def load(self, session_id: SessionId) -> SessionRecord:
        """Return the stored session; bad stored rows are skipped into `load_warnings`."""
        with self.database.connection() as db, db.transaction(), db.cursor() as cur:
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cur.execute("SELECT project_root, agent_ref, created_at, updated_at, title, "
                        "snapshot_seq, side, started FROM aimon_sessions WHERE id = %s",
                        (session_id,))
            row = cur.fetchone()
            if row is None:
                raise SessionNotFoundError(session_id)
            root, agent_ref, created, updated, title, snapshot_seq, side, started = row
            snapshot = None
            if snapshot_seq is not None:
                cur.execute("SELECT body FROM aimon_snapshots WHERE session_id = %s AND seq = %s",
                            (session_id, snapshot_seq))
                snapshot = cur.fetchone()
            cur.execute("SELECT seq, body FROM aimon_messages WHERE session_id = %s "
                        "AND seq >= %s ORDER BY seq", (session_id, snapshot_seq or 0))
            rows = cur.fetchall()
        warnings: list[str] = []
        messages: list[Message] = []
        if snapshot is not None:
            try:
                raw = json.loads(snapshot[0])
                messages.extend(message_from_json(m) for m in raw)
            except (ValueError, TypeError, RecursionError, SessionCodecError) as exc:
                warnings.append(f"snapshot at {snapshot_seq} skipped: {exc}")
        for seq, body in rows:
            try:
                messages.append(decode_message(body))
            except SessionCodecError as exc:
                warnings.append(f"message {seq} skipped: {exc}")
        record = SessionRecord(
            id=session_id, project_root=root, agent_ref=agent_ref, created_at=created,
            updated_at=updated, title=title,
            transcript=SessionTranscript(messages=tuple(messages)),
            started_tool_ids=tuple(json.loads(started)), load_warnings=tuple(warnings))
        return with_side(record, side, warnings)

    def append(
        self,
        session_id: SessionId,
        messages: Sequence[Message],
        *,
        lease: SessionLease | None = None,
        sync: bool = False,
    ) -> None:
        """Add messages at the end of the transcript (and set the title if it has none)."""
        with self.database.connection() as db, db.transaction(), db.cursor() as cur:
            next_seq, title, started = self._lock(cur, session_id, lease,
                                                  "next_seq, title, started")
            if not messages:
                return
            _insert_messages(cur, session_id, next_seq, messages)
            cur.execute(
                "UPDATE aimon_sessions SET next_seq = next_seq + %s, "
                "message_count = message_count + %s, title = %s, started = %s, updated_at = %s "
                "WHERE id = %s",
                (len(messages), len(messages), title or title_from(messages),
                 json.dumps(unanswered_tool_ids(json.loads(started), messages)),
                 self._clock(), session_id))

    def mark_tool_started(
        self,
        session_id: SessionId,
        tool_use_ids: Sequence[str],
        *,
        lease: SessionLease | None = None,
        sync: bool = False,
    ) -> None:
        """Record that tool calls are about to run (kept in `started_tool_ids` until answered)."""
        with self.database.connection() as db, db.transaction(), db.cursor() as cur:
            (started,) = self._lock(cur, session_id, lease, "started")
            merged = list(dict.fromkeys((*json.loads(started), *tool_use_ids)))
            cur.execute("UPDATE aimon_sessions SET started = %s, updated_at = %s WHERE id = %s",
                        (json.dumps(merged), self._clock(), session_id))

    def write_side(
        self,
        session_id: SessionId,
        *,
        totals: SessionTotals,
        budget_override: BudgetOverride | None,
        compaction_failure_count: int,
        approvals: tuple[str, ...],
        lease: SessionLease | None = None,
        sync: bool = False,
        reads: tuple[tuple[str, str], ...] = (),
        model_choice: ModelChoice | None = None,
    ) -> None:
        """Set the side state; values are absolute, so writing them twice changes nothing."""
        now = self._clock()
        side = line_to_json(SideLine(
            at=now, totals=totals, budget_override=budget_override,
            compaction_failure_count=compaction_failure_count, approvals=tuple(approvals),
            reads=tuple(reads), model_choice=model_choice))
        with self.database.connection() as db, db.transaction(), db.cursor() as cur:
            self._lock(cur, session_id, lease, "side_version")
            cur.execute("UPDATE aimon_sessions SET side = %s, side_version = side_version + 1, "
                        "updated_at = %s WHERE id = %s", (side, now, session_id))

    def replace_transcript(
        self,
        session_id: SessionId,
        messages: Sequence[Message],
        *,
        lease: SessionLease | None = None,
    ) -> None:
        """Replace the whole transcript (after compaction), atomically and durably."""
        body = "[" + ",".join(encode_message(m) for m in messages) + "]"
        with self.database.connection() as db, db.transaction(), db.cursor() as cur:
            next_seq, title, started = self._lock(cur, session_id, lease,
                                                  "next_seq, title, started")
            cur.execute("DELETE FROM aimon_snapshots WHERE session_id = %s AND seq <= %s",
                        (session_id, next_seq))
            cur.execute("DELETE FROM aimon_messages WHERE session_id = %s AND seq < %s",
                        (session_id, next_seq))
            cur.execute("INSERT INTO aimon_snapshots (session_id, seq, body) "
                        "VALUES (%s, %s, %s)", (session_id, next_seq, body))
            cur.execute(
                "UPDATE aimon_sessions SET snapshot_seq = %s, message_count = %s, title = %s, "
                "started = %s, updated_at = %s WHERE id = %s",
                (next_seq, len(messages), title or title_from(messages),
                 json.dumps(unanswered_tool_ids(json.loads(started), messages)),
                 self._clock(), session_id))

    def list_sessions(self, project_root: str | None = None, limit: int = 50
                      ) -> tuple[SessionSummary, ...]:
        """Return sessions newest first, of one project (its exact root) or of all."""
        if limit <= 0:
            return ()
        where = "WHERE project_root = %s " if project_root is not None else ""
        params: tuple[object, ...] = (project_root, limit) if project_root is not None \
            else (limit,)
        with self.database.connection() as db:
            rows = db.execute(
                "SELECT id, title, created_at, updated_at, message_count, project_root, "
                f"agent_ref FROM aimon_sessions {where}"  # a fixed fragment
                "ORDER BY updated_at DESC, id DESC LIMIT %s", params).fetchall()
        return tuple(SessionSummary(
            id=SessionId(str(r[0])), title=str(r[1]), created_at=_time(r[2]),
            updated_at=_time(r[3]), message_count=int(str(r[4])), project_root=str(r[5]),
            agent_ref=str(r[6])) for r in rows)

    def delete(self, session_id: SessionId, *, lease: SessionLease | None = None) -> None:
        """Remove a session."""
        with self.database.connection() as db, db.transaction(), db.cursor() as cur:
            self._lock(cur, session_id, lease, "fence")
            cur.execute("DELETE FROM aimon_sessions WHERE id = %s", (session_id,))

    def _lock(self, cur: Cursor, session_id: SessionId, lease: SessionLease | None,
              columns: str) -> tuple[Any, ...]:
        """Lock the session's row for this transaction; refuse a stale lease; return
        `columns` of the row."""
        check_lease(lease, session_id)
        cur.execute(f"SELECT fence, {columns} FROM aimon_sessions "  # fixed column names
                    "WHERE id = %s FOR UPDATE", (session_id,))
        row = cur.fetchone()
        if row is None:
            raise SessionNotFoundError(session_id)
        fence = int(row[0])
        if lease is not None:
            if lease.token < fence:
                raise StaleLeaseError(session_id, lease.token, fence,
                                      f"a write under lease {fence} came after it")
            if lease.token > fence:
                cur.execute("UPDATE aimon_sessions SET fence = %s WHERE id = %s",
                            (lease.token, session_id))
        return tuple(row[1:])


def _insert_messages(cur: Cursor, session_id: str, first: int,
                     messages: Sequence[Message]) -> None:
    if messages:
        cur.executemany("INSERT INTO aimon_messages (session_id, seq, body) VALUES (%s, %s, %s)",
                        [(session_id, first + n, encode_message(m))
                         for n, m in enumerate(messages)])


def _time(value: object) -> datetime:
    assert isinstance(value, datetime)
    return value
