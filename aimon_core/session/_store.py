"""The record-store seam, and SessionStore: claim a session (lease, agent check, record)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from aimon_core.llm import Message
from aimon_core.session._errors import AgentMismatchError, SessionExistsError, SessionStorageError
from aimon_core.session._ids import SessionId, new_session_id, parse_session_id
from aimon_core.session._lease import (
    SessionLease,
    SessionLeaseStore,
    check_lease,
    default_holder,
)
from aimon_core.session._record import (
    BudgetOverride,
    ModelChoice,
    SessionRecord,
    SessionSummary,
    SessionTotals,
)

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """Return the current time in UTC."""
    return datetime.now(UTC)


class SessionRecordStore(Protocol):
    """Persists session records. Methods block; async callers use `asyncio.to_thread`.

    Every write takes an optional lease and refuses (StaleLeaseError) one that is released or
    superseded. `sync=True` makes the write durable (fsync) before returning: use it at turn
    boundaries. Unknown ids raise SessionNotFoundError.
    """

    def create(self, record: SessionRecord) -> None:
        """Store a new session; raise SessionExistsError if its id is taken."""
        ...

    def load(self, session_id: SessionId) -> SessionRecord:
        """Return the stored session; bad stored lines are skipped into `load_warnings`."""
        ...

    def append(
        self,
        session_id: SessionId,
        messages: Sequence[Message],
        *,
        lease: SessionLease | None = None,
        sync: bool = False,
    ) -> None:
        """Add messages at the end of the transcript (and set the title if it has none)."""
        ...

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
        """Set the side state; values are absolute, so writing them twice changes nothing.

        `reads` (path, content hash) is what the tools have seen; stores may keep it or not.
        """
        ...

    def replace_transcript(
        self,
        session_id: SessionId,
        messages: Sequence[Message],
        *,
        lease: SessionLease | None = None,
    ) -> None:
        """Replace the whole transcript (after compaction), atomically and durably."""
        ...

    def mark_tool_started(
        self,
        session_id: SessionId,
        tool_use_ids: Sequence[str],
        *,
        lease: SessionLease | None = None,
        sync: bool = False,
    ) -> None:
        """Record that tool calls are about to run (kept in `started_tool_ids` until answered)."""
        ...

    def list_sessions(self, project_root: str | None = None, limit: int = 50
                      ) -> tuple[SessionSummary, ...]:
        """Return sessions newest first, of one project (its exact root) or of all."""
        ...

    def delete(self, session_id: SessionId, *, lease: SessionLease | None = None) -> None:
        """Remove a session."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimedSession:
    """A session record together with the lease that allows writing it."""

    record: SessionRecord
    lease: SessionLease
    # False for a new session claimed with `lazy=True`: nothing is on disk until the owner
    # calls `SessionStore.store_new` (LiveSession does so with the first message).
    stored: bool = True


class SessionStore:
    """Claims sessions: lease first, then the agent binding check, then the record."""

    def __init__(
        self, records: SessionRecordStore, leases: SessionLeaseStore, *, clock: Clock = utc_now
    ) -> None:
        self.records = records
        self.leases = leases
        self._clock = clock

    def claim(
        self,
        session_id: SessionId | str | None,
        *,
        project_root: str | Path,
        agent_ref: str,
        holder: str | None = None,
        lazy: bool = False,
    ) -> ClaimedSession:
        """Resume `session_id`, or start a new session when it is None.

        With `lazy=True` a new session is only leased, not written: `store_new` writes it
        (so a start that never sends a prompt leaves no empty session behind).

        Raises SessionNotFoundError (also for junk ids), SessionLockedError naming the holder,
        AgentMismatchError when the session belongs to another agent, or SessionStorageError
        when the store's files cannot be created or read.
        """
        try:
            return self._claim(session_id, project_root, agent_ref, holder or default_holder(),
                               lazy=lazy)
        except OSError as exc:
            raise SessionStorageError(exc) from exc

    def _claim(self, session_id: SessionId | str | None, project_root: str | Path,
               agent_ref: str, holder: str, *, lazy: bool) -> ClaimedSession:
        if session_id is None:
            return self._claim_new(str(Path(project_root).resolve()), agent_ref, holder,
                                   lazy=lazy)
        parsed = parse_session_id(session_id)
        lease = self.leases.acquire(parsed, holder)
        try:
            record = self.records.load(parsed)
            if record.agent_ref != agent_ref:
                raise AgentMismatchError(parsed, record.agent_ref, agent_ref)
        except BaseException:
            lease.release()
            raise
        return ClaimedSession(record=record, lease=lease)

    def release(self, claimed: ClaimedSession) -> None:
        """Give up a claimed session; the record stays stored."""
        claimed.lease.release()

    def store_new(self, record: SessionRecord, claimed: ClaimedSession) -> None:
        """Write a lazily claimed session for the first time (`record` is its state now)."""
        check_lease(claimed.lease, record.id)
        try:
            self.records.create(record)
        except OSError as exc:
            raise SessionStorageError(exc) from exc

    def _claim_new(self, project_root: str, agent_ref: str, holder: str, *,
                   lazy: bool) -> ClaimedSession:
        for attempt in range(3):
            now = self._clock()
            record = SessionRecord.new(
                project_root=project_root,
                agent_ref=agent_ref,
                session_id=new_session_id(now),
                now=now,
            )
            lease = self.leases.acquire(record.id, holder)
            if lazy:
                return ClaimedSession(record=record, lease=lease, stored=False)
            try:
                self.records.create(record)
            except SessionExistsError:
                lease.release()
                if attempt == 2:
                    raise
                continue
            except BaseException:
                lease.release()
                raise
            return ClaimedSession(record=record, lease=lease)
        raise AssertionError("unreachable")
