"""SessionRecordStore on Redis: for a team that runs Redis alone.

A session is a hash `aimon:s:<id>` (identity, title, the side state as the codec's side line,
the started tool calls, the compaction snapshot, the newest lease token that wrote: `fence`)
and a list `aimon:m:<id>` of its messages after the snapshot. Listings are sorted sets by
update time (`aimon:sessions`, and `aimon:p:<project root>` per project). Every write is a
WATCH/MULTI transaction on the hash: it applies whole or not at all, and a write under a lease
older than `fence` is refused inside it. Durability is Redis's own (`appendonly`, `save`):
configure it as for any data you keep there.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import redis

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
from aimon_core.stores._rows import decode_message, encode_message, side_of, with_side

Row = dict[str, str]
Write = Callable[[Any, Row], None]


def _key(session_id: str) -> str:
    return f"aimon:s:{session_id}"


def _list(session_id: str) -> str:
    return f"aimon:m:{session_id}"


class RedisSessionRecordStore:
    """Keeps session records in Redis (see the module docs)."""

    def __init__(self, client: redis.Redis, *, clock: Clock = utc_now) -> None:
        # Untyped on purpose: with decode_responses=True every reply is str, which redis-py's
        # stubs cannot say.
        self.client: Any = client
        self._clock = clock

    def create(self, record: SessionRecord) -> None:
        """Store a new session; raise SessionExistsError if its id is taken."""
        messages = record.transcript.messages
        key = _key(record.id)
        with self.client.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(key)
                    if pipe.exists(key):
                        raise SessionExistsError(record.id)
                    pipe.multi()
                    pipe.hset(key, mapping={
                        "project_root": record.project_root, "agent_ref": record.agent_ref,
                        "created_at": record.created_at.isoformat(),
                        "updated_at": record.updated_at.isoformat(),
                        "title": record.title or title_from(messages),
                        "side": side_of(record), "started": json.dumps(record.started_tool_ids),
                        "fence": 0, "count": len(messages)})
                    pipe.delete(_list(record.id))
                    if messages:
                        pipe.rpush(_list(record.id), *(encode_message(m) for m in messages))
                    self._listed(pipe, record.id, record.project_root, record.updated_at)
                    pipe.execute()
                    return
                except redis.WatchError:
                    continue

    def load(self, session_id: SessionId) -> SessionRecord:
        """Return the stored session; bad stored messages are skipped into `load_warnings`."""
        with self.client.pipeline(transaction=True) as pipe:
            pipe.hgetall(_key(session_id))
            pipe.lrange(_list(session_id), 0, -1)
            row, bodies = pipe.execute()
        if not row:
            raise SessionNotFoundError(session_id)
        warnings: list[str] = []
        messages: list[Message] = []
        if row.get("snapshot") is not None:
            try:
                messages.extend(message_from_json(m) for m in json.loads(row["snapshot"]))
            except (ValueError, TypeError, RecursionError, SessionCodecError) as exc:
                warnings.append(f"snapshot skipped: {exc}")
        for n, body in enumerate(bodies):
            try:
                messages.append(decode_message(body))
            except SessionCodecError as exc:
                warnings.append(f"message {n} skipped: {exc}")
        record = SessionRecord(
            id=session_id, project_root=row["project_root"], agent_ref=row["agent_ref"],
            created_at=datetime.fromisoformat(row["created_at"]),
            updated_at=datetime.fromisoformat(row["updated_at"]), title=row.get("title", ""),
            transcript=SessionTranscript(messages=tuple(messages)),
            started_tool_ids=tuple(json.loads(row.get("started", "[]"))),
            load_warnings=tuple(warnings))
        return with_side(record, row.get("side"), warnings)

    def append(self, session_id: SessionId, messages: Sequence[Message], *,
               lease: SessionLease | None = None, sync: bool = False) -> None:
        """Add messages at the end of the transcript (and set the title if it has none)."""
        def write(pipe: Any, row: Row) -> None:
            if not messages:
                return
            pipe.rpush(_list(session_id), *(encode_message(m) for m in messages))
            started = unanswered_tool_ids(json.loads(row.get("started", "[]")), messages)
            pipe.hset(_key(session_id), mapping={
                "title": row.get("title") or title_from(messages),
                "started": json.dumps(started), "count": int(row["count"]) + len(messages)})
            self._touch(pipe, session_id, row)

        self._update(session_id, lease, write)

    def mark_tool_started(self, session_id: SessionId, tool_use_ids: Sequence[str], *,
                          lease: SessionLease | None = None, sync: bool = False) -> None:
        """Record that tool calls are about to run (kept in `started_tool_ids` until answered)."""
        def write(pipe: Any, row: Row) -> None:
            merged = list(dict.fromkeys((*json.loads(row.get("started", "[]")), *tool_use_ids)))
            pipe.hset(_key(session_id), "started", json.dumps(merged))
            self._touch(pipe, session_id, row)

        self._update(session_id, lease, write)

    def write_side(self, session_id: SessionId, *, totals: SessionTotals,
                   budget_override: BudgetOverride | None, compaction_failure_count: int,
                   approvals: tuple[str, ...], lease: SessionLease | None = None,
                   sync: bool = False, reads: tuple[tuple[str, str], ...] = (),
                   model_choice: ModelChoice | None = None) -> None:
        """Set the side state; values are absolute, so writing them twice changes nothing."""
        def write(pipe: Any, row: Row) -> None:
            side = line_to_json(SideLine(
                at=self._clock(), totals=totals, budget_override=budget_override,
                compaction_failure_count=compaction_failure_count, approvals=tuple(approvals),
                reads=tuple(reads), model_choice=model_choice))
            pipe.hset(_key(session_id), "side", side)
            self._touch(pipe, session_id, row)

        self._update(session_id, lease, write)

    def replace_transcript(self, session_id: SessionId, messages: Sequence[Message], *,
                           lease: SessionLease | None = None) -> None:
        """Replace the whole transcript (after compaction), in one transaction."""
        body = "[" + ",".join(encode_message(m) for m in messages) + "]"

        def write(pipe: Any, row: Row) -> None:
            pipe.delete(_list(session_id))
            started = unanswered_tool_ids(json.loads(row.get("started", "[]")), messages)
            pipe.hset(_key(session_id), mapping={
                "snapshot": body, "count": len(messages), "started": json.dumps(started),
                "title": row.get("title") or title_from(messages)})
            self._touch(pipe, session_id, row)

        self._update(session_id, lease, write)

    def list_sessions(self, project_root: str | None = None, limit: int = 50
                      ) -> tuple[SessionSummary, ...]:
        """Return sessions newest first, of one project (its exact root) or of all."""
        if limit <= 0:
            return ()
        index = "aimon:sessions" if project_root is None else f"aimon:p:{project_root}"
        ids = self.client.zrevrange(index, 0, limit - 1)
        with self.client.pipeline(transaction=False) as pipe:
            for session_id in ids:
                pipe.hmget(_key(session_id), "title", "created_at", "updated_at", "count",
                           "project_root", "agent_ref")
            rows = pipe.execute()
        return tuple(SessionSummary(
            id=SessionId(session_id), title=row[0] or "",
            created_at=datetime.fromisoformat(row[1]), updated_at=datetime.fromisoformat(row[2]),
            message_count=int(row[3]), project_root=row[4], agent_ref=row[5])
            for session_id, row in zip(ids, rows, strict=True) if row[1] is not None)

    def delete(self, session_id: SessionId, *, lease: SessionLease | None = None) -> None:
        """Remove a session."""
        def write(pipe: Any, row: Row) -> None:
            pipe.delete(_key(session_id), _list(session_id))
            pipe.zrem("aimon:sessions", session_id)
            pipe.zrem(f"aimon:p:{row['project_root']}", session_id)

        self._update(session_id, lease, write, fence=False)

    def _update(self, session_id: SessionId, lease: SessionLease | None, write: Write, *,
                fence: bool = True) -> None:
        """Run `write` in a transaction on the session's hash, after the lease checks."""
        check_lease(lease, session_id)
        key = _key(session_id)
        pipe: Any
        with self.client.pipeline() as pipe:
            while True:
                try:
                    pipe.watch(key)
                    row: Row = pipe.hgetall(key)
                    if not row:
                        raise SessionNotFoundError(session_id)
                    newest = int(row.get("fence", "0"))
                    if lease is not None and lease.token < newest:
                        raise StaleLeaseError(session_id, lease.token, newest,
                                              f"a write under lease {newest} came after it")
                    pipe.multi()
                    write(pipe, row)
                    if fence and lease is not None and lease.token > newest:
                        pipe.hset(key, "fence", lease.token)
                    pipe.execute()
                    return
                except redis.WatchError:
                    continue

    def _touch(self, pipe: Any, session_id: str, row: Row) -> None:
        now = self._clock()
        pipe.hset(_key(session_id), "updated_at", now.isoformat())
        self._listed(pipe, session_id, row["project_root"], now)

    @staticmethod
    def _listed(pipe: Any, session_id: str, project_root: str, when: datetime) -> None:
        pipe.zadd("aimon:sessions", {session_id: when.timestamp()})
        pipe.zadd(f"aimon:p:{project_root}", {session_id: when.timestamp()})
