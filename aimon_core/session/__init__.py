"""The session tier's storage: ids, records, the JSONL codec, record stores and leases."""

from typing import TYPE_CHECKING

from aimon_core._lazy import lazy_getattr

if TYPE_CHECKING:
    from aimon_core.session._codec import (
        FORMAT_VERSION,
        SideLine,
        block_from_json,
        block_to_json,
        line_from_json,
        line_to_json,
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
        SessionStorageError,
        StaleLeaseError,
    )
    from aimon_core.session._file_store import (
        FileSessionRecordStore,
        file_session_store,
    )
    from aimon_core.session._files import AppendFiles
    from aimon_core.session._ids import (
        SessionId,
        is_session_id,
        new_session_id,
        parse_session_id,
    )
    from aimon_core.session._lease import (
        FileSessionLeaseStore,
        MemorySessionLeaseStore,
        SessionLease,
        SessionLeaseStore,
        check_lease,
        default_holder,
    )
    from aimon_core.session._memory_store import (
        MemorySessionRecordStore,
    )
    from aimon_core.session._paths import (
        project_key,
        user_config_dir,
        user_data_dir,
    )
    from aimon_core.session._record import (
        BudgetOverride,
        ModelChoice,
        SessionRecord,
        SessionSnapshot,
        SessionSummary,
        SessionTotals,
        SessionTranscript,
        title_from,
        unanswered_tool_ids,
    )
    from aimon_core.session._store import (
        ClaimedSession,
        Clock,
        SessionRecordStore,
        SessionStore,
        utc_now,
    )

# Every name loads on first use: `import aimon_core.session` (and its light submodules such
# as _paths) must not pull in the codec, the stores and the message types at start-up.
_LAZY = {
    "Clock": "_store",
    "SideLine": "_codec",
    "check_lease": "_lease",
    "line_from_json": "_codec",
    "line_to_json": "_codec",
    "utc_now": "_store",
    "AppendFiles": "_files",
    "is_session_id": "_ids",
    "AgentMismatchError": "_errors",
    "BudgetOverride": "_record",
    "ModelChoice": "_record",
    "ClaimedSession": "_store",
    "FORMAT_VERSION": "_codec",
    "FileSessionLeaseStore": "_lease",
    "FileSessionRecordStore": "_file_store",
    "file_session_store": "_file_store",
    "InvalidSessionIdError": "_errors",
    "MemorySessionLeaseStore": "_lease",
    "MemorySessionRecordStore": "_memory_store",
    "SessionCodecError": "_errors",
    "SessionCorruptError": "_errors",
    "SessionError": "_errors",
    "SessionExistsError": "_errors",
    "SessionId": "_ids",
    "SessionLease": "_lease",
    "SessionLeaseStore": "_lease",
    "SessionLockedError": "_errors",
    "SessionNotFoundError": "_errors",
    "SessionRecord": "_record",
    "SessionRecordStore": "_store",
    "SessionSnapshot": "_record",
    "SessionStorageError": "_errors",
    "SessionStore": "_store",
    "SessionSummary": "_record",
    "SessionTotals": "_record",
    "SessionTranscript": "_record",
    "StaleLeaseError": "_errors",
    "block_from_json": "_codec",
    "block_to_json": "_codec",
    "default_holder": "_lease",
    "message_from_json": "_codec",
    "message_to_json": "_codec",
    "new_session_id": "_ids",
    "parse_session_id": "_ids",
    "project_key": "_paths",
    "title_from": "_record",
    "unanswered_tool_ids": "_record",
    "user_config_dir": "_paths",
    "user_data_dir": "_paths",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "FORMAT_VERSION",
    "AgentMismatchError",
    "AppendFiles",
    "BudgetOverride",
    "ClaimedSession",
    "Clock",
    "FileSessionLeaseStore",
    "FileSessionRecordStore",
    "InvalidSessionIdError",
    "MemorySessionLeaseStore",
    "MemorySessionRecordStore",
    "ModelChoice",
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
    "SessionStorageError",
    "SessionStore",
    "SessionSummary",
    "SessionTotals",
    "SessionTranscript",
    "SideLine",
    "StaleLeaseError",
    "block_from_json",
    "block_to_json",
    "check_lease",
    "default_holder",
    "file_session_store",
    "is_session_id",
    "line_from_json",
    "line_to_json",
    "message_from_json",
    "message_to_json",
    "new_session_id",
    "parse_session_id",
    "project_key",
    "title_from",
    "unanswered_tool_ids",
    "user_config_dir",
    "user_data_dir",
    "utc_now",
]
