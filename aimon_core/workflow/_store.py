"""RunStore: where workflow runs are kept, and the lease that lets one process run each.

A small protocol with two backends: `FileRunStore` (JSON lines under aimon's data folder,
beside the sessions: one file per run, appended as the run goes, a torn last line cut off and
a bad line anywhere skipped) and `MemoryRunStore` (tests, embedding). A networked backend
(PostgreSQL) passes the same contract suite (`aimon_core.testing.RunStoreContract`).

Only the holder of a run's lease writes it. A process that dies, however it dies (kill -9),
lets go of its leases, so `aimon workflow resume RUN` can take the run over.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Protocol

from aimon_core.workflow._codec import (
    RunCodecError,
    change_from_json,
    change_to_json,
    header_from_json,
    header_to_json,
)
from aimon_core.workflow._record import (
    RunChange,
    RunId,
    RunRecord,
    RunSummary,
    is_run_id,
)

log = logging.getLogger(__name__)


class RunStoreError(Exception):
    """A run could not be read or written."""


class RunNotFoundError(RunStoreError):
    """No run has that id."""

    def __init__(self, run_id: str, message: str = "") -> None:
        super().__init__(message or f"no workflow run {run_id!r} (see: aimon workflow runs)")
        self.run_id = run_id


class RunExistsError(RunStoreError):
    """A run with that id was created before."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"workflow run {run_id!r} exists already")
        self.run_id = run_id


class RunLockedError(RunStoreError):
    """Another process runs this run now."""

    def __init__(self, run_id: str, holder: str) -> None:
        super().__init__(f"workflow run {run_id!r} is running in {holder}; wait for it, or "
                         "stop it first")
        self.run_id = run_id
        self.holder = holder


class RunLease:
    """The right to run (and write) one run, until released; `with` releases it."""

    def __init__(self, run_id: RunId, holder: str, release: Callable[[], None]) -> None:
        self.run_id = run_id
        self.holder = holder
        self._release: Callable[[], None] | None = release
        self._lock = threading.Lock()

    @property
    def released(self) -> bool:
        """Return whether release() was called."""
        return self._release is None

    def release(self) -> None:
        """Give the run up; calling it again does nothing."""
        with self._lock:
            release, self._release = self._release, None
        if release is not None:
            release()

    def __enter__(self) -> RunLease:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


class RunStore(Protocol):
    """Keeps workflow runs: created whole, changed by appending, read back, listed, leased.

    Methods block (files, a database): call them off the event loop.
    """

    def create(self, record: RunRecord) -> None:
        """Store a new run (its header: definition, inputs, project); RunExistsError if the
        id is taken."""
        ...

    def append(self, run_id: RunId, change: RunChange) -> None:
        """Add one change to a run; RunNotFoundError if there is no such run."""
        ...

    def load(self, run_id: RunId) -> RunRecord:
        """Return a run with every change folded in; RunNotFoundError if there is none."""
        ...

    def list_runs(self, project_root: str | None, limit: int) -> tuple[RunSummary, ...]:
        """Return the newest runs first, of one project (None: of every project)."""
        ...

    def acquire(self, run_id: RunId, holder: str) -> RunLease:
        """Take the lease on a run; RunLockedError naming the holder if someone has it."""
        ...


class MemoryRunStore:
    """Runs in this process's memory, for tests and embedding."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[RunId, RunRecord] = {}
        self._holders: dict[RunId, str] = {}

    def create(self, record: RunRecord) -> None:
        """Store a new run."""
        with self._lock:
            if record.id in self._runs:
                raise RunExistsError(record.id)
            self._runs[record.id] = record

    def append(self, run_id: RunId, change: RunChange) -> None:
        """Fold one change into a run."""
        with self._lock:
            record = self._runs.get(run_id)
            if record is None:
                raise RunNotFoundError(run_id)
            self._runs[run_id] = record.apply(change)

    def load(self, run_id: RunId) -> RunRecord:
        """Return a run."""
        with self._lock:
            record = self._runs.get(run_id)
        if record is None:
            raise RunNotFoundError(run_id)
        return record

    def list_runs(self, project_root: str | None, limit: int) -> tuple[RunSummary, ...]:
        """Return the newest runs first."""
        with self._lock:
            records = [r for r in self._runs.values()
                       if project_root is None or r.project_root == project_root]
        records.sort(key=lambda r: (r.created_at, r.id), reverse=True)
        return tuple(RunSummary.of(r) for r in records[:limit])

    def acquire(self, run_id: RunId, holder: str) -> RunLease:
        """Take the lease on a run."""
        with self._lock:
            if run_id in self._holders:
                raise RunLockedError(run_id, self._holders[run_id])
            self._holders[run_id] = holder

        def release() -> None:
            with self._lock:
                self._holders.pop(run_id, None)

        return RunLease(run_id, holder, release)


class FileRunStore:
    """Runs as JSON lines under `<base>/workflows/<project key>/<run id>.jsonl`.

    Task, stage and run changes are fsync-ed as they are appended (what resume trusts);
    transcript messages are written at once and reach the disk with the next of those.
    Leases are flocks on `<base>/workflows/locks/<run id>.lock`.
    """

    def __init__(self, base_dir: Path) -> None:
        from aimon_core.session import AppendFiles

        self.base_dir = Path(base_dir)
        self.folder = self.base_dir / "workflows"
        self._files = AppendFiles()
        self._write_lock = threading.Lock()

    def _project_folder(self, project_root: str) -> Path:
        from aimon_core.session import project_key

        return self.folder / project_key(project_root)

    def path(self, run_id: RunId) -> Path:
        """Return the file of a run; RunNotFoundError if there is none."""
        if not is_run_id(run_id):
            raise RunNotFoundError(run_id)
        for path in self.folder.glob(f"*/{run_id}.jsonl"):
            return path
        raise RunNotFoundError(run_id)

    def create(self, record: RunRecord) -> None:
        """Write a new run's header line (and nothing else)."""
        from aimon_core._atomic import private_dir, write_atomic

        folder = private_dir(self._project_folder(record.project_root), tighten=True)
        data = _line(header_to_json(record))
        for change in _changes_of(record):
            data += _line(change_to_json(change))
        try:
            write_atomic(folder / f"{record.id}.jsonl", data, mode=0o600, exclusive=True)
        except FileExistsError:
            raise RunExistsError(record.id) from None

    def append(self, run_id: RunId, change: RunChange) -> None:
        """Append one change line (fsync-ed, but for transcript messages)."""
        from aimon_core.workflow._record import TaskMessage

        path = self.path(run_id)
        with self._write_lock:
            self._files.append(path, _line(change_to_json(change)),
                               sync=not isinstance(change, TaskMessage))

    def load(self, run_id: RunId) -> RunRecord:
        """Read a run back, skipping (and reporting) lines that cannot be read."""
        path = self.path(run_id)
        try:
            data = _read(path)
        except OSError as exc:
            raise RunStoreError(f"cannot read {path}: {exc}") from None
        return decode_run(data, str(path))

    def list_runs(self, project_root: str | None, limit: int) -> tuple[RunSummary, ...]:
        """Return the newest runs first (their ids sort by start time)."""
        folder = self._project_folder(project_root) if project_root is not None else None
        pattern = "*.jsonl" if folder is not None else "*/*.jsonl"
        paths = sorted((folder or self.folder).glob(pattern), key=lambda p: p.name,
                       reverse=True)
        found: list[RunSummary] = []
        for path in paths:
            if len(found) >= limit:
                break
            try:
                found.append(RunSummary.of(decode_run(_read(path), str(path))))
            except (OSError, RunStoreError) as exc:
                log.warning("%s: skipped: %s", path, exc)
        return tuple(found)

    def acquire(self, run_id: RunId, holder: str) -> RunLease:
        """Take the flock of a run; RunLockedError naming the holder if it is held."""
        from aimon_core._atomic import private_dir

        if not is_run_id(run_id):
            raise RunNotFoundError(run_id)
        lock = private_dir(self.folder / "locks", tighten=True) / f"{run_id}.lock"
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise RunStoreError(f"{lock} is not a regular file")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                held = os.pread(fd, 512, 0).decode("utf-8", "replace").strip()
                raise RunLockedError(run_id, held or "another process") from None
            data = holder.encode("utf-8", "replace")
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
        except BaseException:
            os.close(fd)
            raise

        def release() -> None:
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

        return RunLease(run_id, holder, release)


def _changes_of(record: RunRecord) -> list[RunChange]:
    """Return changes that rebuild what `record` holds beyond its header (a copied run)."""
    from aimon_core.workflow._record import RunEnded, StageChecked, TaskChanged, TaskMessage

    changes: list[RunChange] = []
    for task in record.tasks:
        changes.append(TaskChanged(task=task))
        changes.extend(TaskMessage(stage=task.stage, index=task.index, round=round_,
                                   message=message)
                       for round_, message in record.rounds.get(task.key, ()))
    changes.extend(StageChecked(stage=stage) for stage in record.stages)
    if record.reason or record.state.value != "running":
        changes.append(RunEnded(state=record.state, reason=record.reason, at=record.updated_at))
    return changes


def _line(obj: object) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
            .encode("utf-8", "surrogatepass") + b"\n")


def _read(path: Path) -> bytes:
    """Return a run file's bytes; refuse anything but a regular file (a FIFO never hangs)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return handle.read()


def decode_run(data: bytes, where: str) -> RunRecord:
    """Build a run from a run file's bytes; skip bad lines (named in `load_warnings`)."""
    from dataclasses import replace

    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines:
        lines.pop()  # a torn last line: the change it held was never finished
    if not lines:
        raise RunStoreError(f"{where}: empty run file")
    try:
        record = header_from_json(_loads(lines[0]))
    except RunCodecError as exc:
        raise RunStoreError(f"{where}: the header cannot be read: {exc}") from None
    warnings: list[str] = []
    for number, raw in enumerate(lines[1:], start=2):
        try:
            record = record.apply(change_from_json(_loads(raw)))
        except RunCodecError as exc:
            warnings.append(f"{where}:{number}: skipped: {exc}")
    if warnings:
        record = replace(record, load_warnings=tuple(warnings))
    return record


def _loads(raw: bytes) -> object:
    try:
        return json.loads(raw.decode("utf-8", "surrogatepass"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise RunCodecError(f"not JSON ({exc})") from None


def default_run_store() -> FileRunStore:
    """Return the run store under aimon's data folder (AIMON_HOME moves it)."""
    from aimon_core.session import user_data_dir

    return FileRunStore(user_data_dir())


def find_run(store: RunStore, text: str, project_root: str | None) -> RunId:
    """Return the run `text` names: a whole id, or the end or start of one (the project's
    runs first, then every project's); RunNotFoundError saying what matched."""
    text = text.strip()
    if is_run_id(text):
        return RunId(text)
    for scope in (project_root, None) if project_root is not None else (None,):
        ids = [s.id for s in store.list_runs(scope, 500)]
        found = [i for i in ids if text and (i.endswith(text) or i.startswith(text))]
        if len(found) == 1:
            return found[0]
        if found:
            raise RunNotFoundError(text, f"{text!r} matches {len(found)} runs ("
                                         f"{', '.join(found[:5])}): give more of the id")
    raise RunNotFoundError(text)
