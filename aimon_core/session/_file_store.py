"""SessionRecordStore on disk: one append-only JSONL file per session, and an index.

Layout under `base_dir`:

    projects/<project key>/<session id>.jsonl   header line, then message/side/snapshot lines
    index.json                                   listing cache (see _index.py)
"""

from __future__ import annotations

import builtins
import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from stat import S_ISREG

from aimon_core._atomic import fsync_dir, private_dir, write_atomic
from aimon_core.llm import Message
from aimon_core.session._codec import (
    HeaderLine,
    MessageLine,
    SideLine,
    SnapshotLine,
    ToolStartedLine,
    TranscriptLine,
    line_from_json,
    line_to_json,
)
from aimon_core.session._errors import (
    SessionCodecError,
    SessionCorruptError,
    SessionError,
    SessionExistsError,
    SessionNotFoundError,
    SessionStorageError,
)
from aimon_core.session._files import (
    AppendFiles,
    atomic_create,
    decode_session_file,
    not_regular,
    read_session_bytes,
)
from aimon_core.session._ids import SessionId, is_session_id, parse_session_id
from aimon_core.session._index import IndexEntry, read_index, write_index
from aimon_core.session._lease import FileSessionLeaseStore, SessionLease, check_lease
from aimon_core.session._paths import project_key, user_data_dir
from aimon_core.session._record import (
    BudgetOverride,
    ModelChoice,
    SessionRecord,
    SessionSnapshot,
    SessionSummary,
    SessionTotals,
    summarize,
    title_from,
    unanswered_tool_ids,
)
from aimon_core.session._store import Clock, SessionStore, utc_now

log = logging.getLogger(__name__)

_SUFFIX = ".jsonl"


class FileSessionRecordStore:
    """Stores each session as append-only JSONL under `<base_dir>/projects/<project key>/`."""

    def __init__(self, base_dir: Path, *, clock: Clock = utc_now) -> None:
        self.base_dir = Path(base_dir)
        self._projects = self.base_dir / "projects"
        self._index_path = self.base_dir / "index.json"
        self._clock = clock
        # One writer at a time within this process; leases keep other processes out.
        self._write_lock = threading.Lock()
        self._known_paths: dict[SessionId, Path] = {}
        self._appends = AppendFiles()

    def path_of(self, session_id: SessionId) -> Path:
        """Return the transcript file of a session; raise SessionNotFoundError if none."""
        session_id = parse_session_id(session_id)
        known = self._known_paths.get(session_id)
        if known is not None and known.exists():
            return known
        name = session_id + _SUFFIX
        for project in self._project_dirs():
            candidate = project / name
            if candidate.exists():
                self._known_paths[session_id] = candidate
                return candidate
        raise SessionNotFoundError(session_id)

    def path_for(self, session_id: SessionId, project_root: str) -> Path:
        """Return where a session of `project_root` is (or will be, once written) stored."""
        return self._projects / project_key(project_root) / (parse_session_id(session_id)
                                                             + _SUFFIX)

    def agent_ref(self, session_id: SessionId) -> str:
        """Return the agent a session was made with, reading only its header line."""
        path = self.path_of(session_id)
        try:
            line = line_from_json(read_session_bytes(parse_session_id(session_id), path,
                                                     first_line=True))
        except FileNotFoundError:
            raise SessionNotFoundError(session_id) from None
        except OSError as exc:
            raise SessionStorageError(exc) from exc
        except SessionCodecError as exc:
            raise SessionCorruptError(session_id, str(path), f"bad header: {exc}") from None
        if not isinstance(line, HeaderLine):
            raise SessionCorruptError(session_id, str(path), "the first line is not a header")
        return line.agent_ref

    def create(self, record: SessionRecord) -> None:
        """Store a new session; raise SessionExistsError if its id is taken."""
        session_id = parse_session_id(record.id)
        if not Path(record.project_root).is_absolute():
            raise ValueError(f"project_root must be absolute: {record.project_root!r}")
        header = HeaderLine(
            session_id=session_id,
            project_root=record.project_root,
            agent_ref=record.agent_ref,
            created_at=record.created_at,
            title=record.title or title_from(record.transcript),
        )
        lines: list[TranscriptLine] = [header]
        lines += [MessageLine(at=record.updated_at, message=m) for m in record.transcript]
        if record.snapshot != SessionSnapshot(transcript=record.transcript):
            lines.append(_side_line(record, record.updated_at))
        if record.started_tool_ids:  # a copied session keeps its calls that may have run
            lines.append(ToolStartedLine(at=record.updated_at, ids=record.started_tool_ids))
        folder = self._projects / project_key(record.project_root)
        with self._write_lock, _storage_errors():
            try:
                self.path_of(session_id)
            except SessionNotFoundError:
                pass
            else:
                raise SessionExistsError(session_id)
            private_dir(self._projects)
            private_dir(folder, tighten=True)
            path = folder / (session_id + _SUFFIX)
            atomic_create(path, session_id, _encode(lines))
            self._known_paths[session_id] = path

    def load(self, session_id: SessionId) -> SessionRecord:
        """Return the stored session; bad lines are skipped and listed in `load_warnings`."""
        path = self.path_of(session_id)
        try:
            data = read_session_bytes(parse_session_id(session_id), path)
        except FileNotFoundError:
            raise SessionNotFoundError(session_id) from None
        except OSError as exc:
            raise SessionStorageError(exc) from exc
        record = decode_session_file(parse_session_id(session_id), path, data)
        for warning in record.load_warnings:
            log.warning("session %s: %s", session_id, warning)
        return record

    def append(
        self,
        session_id: SessionId,
        messages: Sequence[Message],
        *,
        lease: SessionLease | None = None,
        sync: bool = False,
    ) -> None:
        """Add messages at the end of the transcript."""
        check_lease(lease, session_id)
        now = self._clock()
        # Encode before touching the file: a value that cannot be stored writes nothing.
        data = _encode([MessageLine(at=now, message=m) for m in messages])
        with self._write_lock, _storage_errors():
            path = self.path_of(session_id)
            if data or sync:
                self._appends.append(path, data, sync=sync)

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
        """Set the side state; the latest side line wins, so a repeated write changes nothing."""
        check_lease(lease, session_id)
        line = SideLine(
            at=self._clock(),
            totals=totals,
            budget_override=budget_override,
            compaction_failure_count=compaction_failure_count,
            approvals=tuple(approvals),
            reads=tuple(reads),
            model_choice=model_choice,
        )
        data = _encode([line])
        with self._write_lock, _storage_errors():
            self._appends.append(self.path_of(session_id), data, sync=sync)

    def mark_tool_started(
        self,
        session_id: SessionId,
        tool_use_ids: Sequence[str],
        *,
        lease: SessionLease | None = None,
        sync: bool = False,
    ) -> None:
        """Append a `tool_started` line: these calls are about to run."""
        check_lease(lease, session_id)
        data = _encode([ToolStartedLine(at=self._clock(), ids=tuple(tool_use_ids))])
        with self._write_lock, _storage_errors():
            self._appends.append(self.path_of(session_id), data, sync=sync)

    def replace_transcript(
        self,
        session_id: SessionId,
        messages: Sequence[Message],
        *,
        lease: SessionLease | None = None,
    ) -> None:
        """Rewrite the file as header, snapshot and side state: temp file, fsync, rename."""
        check_lease(lease, session_id)
        with self._write_lock, _storage_errors():
            record = self.load(session_id)
            now = self._clock()
            header = HeaderLine(
                session_id=record.id,
                project_root=record.project_root,
                agent_ref=record.agent_ref,
                created_at=record.created_at,
                title=record.title or title_from(messages),
            )
            snapshot = SnapshotLine(at=now, messages=tuple(messages))
            lines: builtins.list[TranscriptLine] = [header, snapshot, _side_line(record, now)]
            started = unanswered_tool_ids(record.started_tool_ids, messages)
            if started:
                lines.append(ToolStartedLine(at=now, ids=started))
            data = _encode(lines)
            path = self.path_of(session_id)
            self._appends.forget(path)
            write_atomic(path, data, mode=0o600)

    def list_sessions(self, project_root: str | None = None, limit: int = 50
                      ) -> tuple[SessionSummary, ...]:
        """Return sessions newest first, of one project (its exact root) or of all."""
        if project_root is None:
            folders = self._project_dirs()
        else:
            folders = [self._projects / project_key(project_root)]
        cached = read_index(self._index_path)
        index = cached or {}
        found: dict[str, IndexEntry] = {}
        changed = cached is None
        for folder in folders:
            for file, entry in self._scan(folder, index):
                found[file] = entry
                changed = changed or index.get(file) is not entry
        scanned = {folder.name for folder in folders}
        kept = {f: e for f, e in index.items() if f.partition("/")[0] not in scanned}
        merged = kept | found
        if changed or merged.keys() != index.keys():
            write_index(self._index_path, merged)
        summaries = [
            e.summary
            for e in found.values()
            if project_root is None or e.summary.project_root == project_root
        ]
        summaries.sort(key=lambda s: (s.updated_at, s.id), reverse=True)
        return tuple(summaries[: max(limit, 0)])

    def delete(self, session_id: SessionId, *, lease: SessionLease | None = None) -> None:
        """Remove a session's file."""
        check_lease(lease, session_id)
        with self._write_lock, _storage_errors():
            path = self.path_of(session_id)
            self._appends.forget(path)
            try:
                path.unlink()
            except FileNotFoundError:
                raise SessionNotFoundError(session_id) from None
            self._known_paths.pop(parse_session_id(session_id), None)
            fsync_dir(path.parent)

    def _project_dirs(self) -> builtins.list[Path]:
        try:
            return [Path(e.path) for e in os.scandir(self._projects) if e.is_dir()]
        except FileNotFoundError:
            return []

    def _scan(
        self, folder: Path, index: dict[str, IndexEntry]
    ) -> builtins.list[tuple[str, IndexEntry]]:
        """Return the entries of one project folder, re-reading only files that changed."""
        try:
            entries = builtins.list(os.scandir(folder))
        except FileNotFoundError:
            return []
        result: builtins.list[tuple[str, IndexEntry]] = []
        for dir_entry in entries:
            stem = dir_entry.name.removesuffix(_SUFFIX)
            if stem == dir_entry.name or not is_session_id(stem):
                continue
            file = f"{folder.name}/{dir_entry.name}"
            try:
                stat = dir_entry.stat()  # taken before reading, so a later append is noticed
            except FileNotFoundError:
                continue
            if not S_ISREG(stat.st_mode):
                log.warning("%s left out of the listing: %s", dir_entry.path,
                            not_regular(stat.st_mode))
                continue
            entry = index.get(file)
            if entry is None or not entry.matches(stat):
                entry = self._summarize(Path(dir_entry.path), SessionId(stem), stat)
            if entry is not None:
                result.append((file, entry))
        return result

    def _summarize(
        self, path: Path, session_id: SessionId, stat: os.stat_result
    ) -> IndexEntry | None:
        try:
            record = decode_session_file(session_id, path, read_session_bytes(session_id, path))
        except FileNotFoundError:
            return None
        except (OSError, SessionError) as exc:
            log.warning("session file %s left out of the listing: %s", path, exc)
            return None
        return IndexEntry(
            summary=summarize(record),
            size=stat.st_size,
            mtime_ns=stat.st_mtime_ns,
            inode=stat.st_ino,
        )


@contextlib.contextmanager
def _storage_errors() -> Iterator[None]:
    """Turn an OSError of a write (disk full, read-only, no permission) into one clear error."""
    try:
        yield
    except OSError as exc:
        raise SessionStorageError(exc) from exc


def _side_line(record: SessionRecord, at: datetime) -> SideLine:
    return SideLine(
        at=at,
        totals=record.totals,
        budget_override=record.budget_override,
        compaction_failure_count=record.compaction_failure_count,
        approvals=record.approvals,
        reads=record.reads,
        model_choice=record.model_choice,
    )


def _encode(lines: Sequence[TranscriptLine]) -> bytes:
    return "".join(line_to_json(line) + "\n" for line in lines).encode("ascii")


def file_session_store(base: Path | None = None) -> SessionStore:
    """Return the session store in files under `base` (default: aimon's data folder, which
    AIMON_HOME moves): the records and their leases."""
    base = base if base is not None else user_data_dir()
    return SessionStore(FileSessionRecordStore(base), FileSessionLeaseStore(base))
