"""The session tier's storage: ids, records, the JSONL codec, record stores and leases."""

from typing import TYPE_CHECKING, Any

from aimon_core.session._codec import (
    FORMAT_VERSION,
    block_from_json,
    block_to_json,
    message_from_json,
    message_to_json,
)
from aimon_core.session._errors import (
    AgentMismatchError,
    InvalidSessionIdError,
    SessionCodecError,
    SessionCorruptError,
    SessionError,
    SessionExistsError,
    SessionLockedError,
    SessionNotFoundError,
    StaleLeaseError,
)
from aimon_core.session._file_store import FileSessionRecordStore
from aimon_core.session._ids import SessionId, new_session_id, parse_session_id
from aimon_core.session._lease import (
    FileSessionLeaseStore,
    MemorySessionLeaseStore,
    SessionLease,
    SessionLeaseStore,
    default_holder,
)
from aimon_core.session._memory_store import MemorySessionRecordStore
from aimon_core.session._paths import project_key, user_config_dir, user_data_dir
from aimon_core.session._record import (
    BudgetOverride,
    SessionRecord,
    SessionSnapshot,
    SessionSummary,
    SessionTotals,
    SessionTranscript,
    title_from,
)
from aimon_core.session._store import ClaimedSession, SessionRecordStore, SessionStore

if TYPE_CHECKING:
    from aimon_core.session._live import (
        LiveSession,
        LiveSessionClosedError,
        LiveSessionEvent,
        LiveSessionStatus,
        SubmitOutcome,
        TurnFinished,
        TurnId,
        TurnQueued,
        TurnStarted,
    )

# LiveSession pulls in the agent, llm and tools packages; listing sessions must not.
_LAZY = {
    "LiveSession",
    "LiveSessionClosedError",
    "LiveSessionEvent",
    "LiveSessionStatus",
    "SubmitOutcome",
    "TurnFinished",
    "TurnId",
    "TurnQueued",
    "TurnStarted",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'aimon_core.session' has no attribute {name!r}")
    from aimon_core.session import _live

    value = getattr(_live, name)
    globals()[name] = value
    return value


__all__ = [
    "FORMAT_VERSION",
    "AgentMismatchError",
    "BudgetOverride",
    "ClaimedSession",
    "FileSessionLeaseStore",
    "FileSessionRecordStore",
    "InvalidSessionIdError",
    "LiveSession",
    "LiveSessionClosedError",
    "LiveSessionEvent",
    "LiveSessionStatus",
    "MemorySessionLeaseStore",
    "MemorySessionRecordStore",
    "SessionCodecError",
    "SessionCorruptError",
    "SessionError",
    "SessionExistsError",
    "SessionId",
    "SessionLease",
    "SessionLeaseStore",
    "SessionLockedError",
    "SessionNotFoundError",
    "SessionRecord",
    "SessionRecordStore",
    "SessionSnapshot",
    "SessionStore",
    "SessionSummary",
    "SessionTotals",
    "SessionTranscript",
    "StaleLeaseError",
    "SubmitOutcome",
    "TurnFinished",
    "TurnId",
    "TurnQueued",
    "TurnStarted",
    "block_from_json",
    "block_to_json",
    "default_holder",
    "message_from_json",
    "message_to_json",
    "new_session_id",
    "parse_session_id",
    "project_key",
    "title_from",
    "user_config_dir",
    "user_data_dir",
]
