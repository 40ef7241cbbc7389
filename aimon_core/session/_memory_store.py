"""A SessionRecordStore in memory: for tests and for programs that need no persistence."""

from __future__ import annotations

import builtins
import dataclasses
import threading
from collections.abc import Sequence

from aimon_core.llm import Message
from aimon_core.session._errors import SessionExistsError, SessionNotFoundError
from aimon_core.session._ids import SessionId
from aimon_core.session._lease import SessionLease, check_lease
from aimon_core.session._record import (
    BudgetOverride,
    ModelChoice,
    SessionRecord,
    SessionSummary,
    SessionTotals,
    SessionTranscript,
    summarize,
    title_from,
    unanswered_tool_ids,
)
from aimon_core.session._store import Clock, utc_now


class MemorySessionRecordStore:
    """Keeps session records in a dict; behaves like the file store in every other way."""

    def __init__(self, *, clock: Clock = utc_now) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._records: dict[SessionId, SessionRecord] = {}

    def create(self, record: SessionRecord) -> None:
        """Store a new session; raise SessionExistsError if its id is taken."""
        with self._lock:
            if record.id in self._records:
                raise SessionExistsError(record.id)
            self._records[record.id] = dataclasses.replace(
                record,
                title=record.title or title_from(record.transcript),
                load_warnings=(),
            )

    def load(self, session_id: SessionId) -> SessionRecord:
        """Return the stored session."""
        with self._lock:
            return self._get(session_id)

    def append(
        self,
        session_id: SessionId,
        messages: Sequence[Message],
        *,
        lease: SessionLease | None = None,
        sync: bool = False,
    ) -> None:
        """Add messages at the end of the transcript (and set the title if it has none)."""
        with self._lock:
            record = self._writable(session_id, lease)
            if not messages:
                return
            self._records[session_id] = dataclasses.replace(
                record,
                title=record.title or title_from(messages),
                transcript=record.transcript.appended(messages),
                started_tool_ids=unanswered_tool_ids(record.started_tool_ids, messages),
                updated_at=self._clock(),
            )

    def mark_tool_started(
        self,
        session_id: SessionId,
        tool_use_ids: Sequence[str],
        *,
        lease: SessionLease | None = None,
        sync: bool = False,
    ) -> None:
        """Record that tool calls are about to run."""
        with self._lock:
            record = self._writable(session_id, lease)
            started = tuple(dict.fromkeys((*record.started_tool_ids, *tool_use_ids)))
            self._records[session_id] = dataclasses.replace(
                record, started_tool_ids=started, updated_at=self._clock()
            )

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
        """Set the side state (absolute values)."""
        with self._lock:
            record = self._writable(session_id, lease)
            self._records[session_id] = dataclasses.replace(
                record,
                totals=totals,
                budget_override=budget_override,
                compaction_failure_count=compaction_failure_count,
                approvals=tuple(approvals),
                reads=tuple(reads),
                model_choice=model_choice,
                updated_at=self._clock(),
            )

    def replace_transcript(
        self,
        session_id: SessionId,
        messages: Sequence[Message],
        *,
        lease: SessionLease | None = None,
    ) -> None:
        """Replace the whole transcript."""
        with self._lock:
            record = self._writable(session_id, lease)
            self._records[session_id] = dataclasses.replace(
                record,
                title=record.title or title_from(messages),
                transcript=SessionTranscript(messages=tuple(messages)),
                started_tool_ids=unanswered_tool_ids(record.started_tool_ids, messages),
                updated_at=self._clock(),
            )

    def list_sessions(self, project_root: str | None = None, limit: int = 50
                      ) -> tuple[SessionSummary, ...]:
        """Return sessions newest first, of one project (its exact root) or of all."""
        with self._lock:
            records: builtins.list[SessionRecord] = [
                r
                for r in self._records.values()
                if project_root is None or r.project_root == project_root
            ]
        records.sort(key=lambda r: (r.updated_at, r.id), reverse=True)
        return tuple(summarize(r) for r in records[: max(limit, 0)])

    def delete(self, session_id: SessionId, *, lease: SessionLease | None = None) -> None:
        """Remove a session."""
        with self._lock:
            self._writable(session_id, lease)
            del self._records[session_id]

    def _get(self, session_id: SessionId) -> SessionRecord:
        try:
            return self._records[session_id]
        except KeyError:
            raise SessionNotFoundError(session_id) from None

    def _writable(self, session_id: SessionId, lease: SessionLease | None) -> SessionRecord:
        check_lease(lease, session_id)
        return self._get(session_id)
