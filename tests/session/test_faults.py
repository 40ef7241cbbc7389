"""Clean faults of the file store: non-regular session files, a full disk, private modes."""

from __future__ import annotations

import errno
import logging
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from aimon_core.llm import Message
from aimon_core.session import (
    FileSessionLeaseStore,
    FileSessionRecordStore,
    SessionCorruptError,
    SessionRecord,
    SessionStorageError,
)
from aimon_core.session._errors import storage_problem


def finishes(call: Callable[[], object], seconds: float = 10.0) -> object:
    """Run `call` in a thread; fail (instead of hanging the suite) if it blocks."""
    outcome: list[object] = []
    done = threading.Event()

    def target() -> None:
        try:
            outcome.append(call())
        except BaseException as exc:  # handed to the test thread
            outcome.append(exc)
        done.set()

    threading.Thread(target=target, daemon=True).start()
    assert done.wait(seconds), "the call hung"
    return outcome[0]


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return tmp_path / "data"


def stored(base: Path, project: str) -> tuple[FileSessionRecordStore, SessionRecord, Path]:
    store = FileSessionRecordStore(base)
    record = SessionRecord.new(project_root=project, agent_ref="default")
    store.create(record)
    store.append(record.id, [Message.user("hello")])
    return store, record, store.path_of(record.id)


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_non_regular_session_file_is_refused_and_left_out(
    base: Path, project: str, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    _, record, _ = stored(base, project)
    _, other, other_path = stored(base, project)
    other_path.unlink()
    if kind == "fifo":
        os.mkfifo(other_path)
    else:
        other_path.mkdir()

    with caplog.at_level(logging.WARNING):
        listed = finishes(lambda: FileSessionRecordStore(base).list_sessions(project))
    assert [s.id for s in listed] == [record.id]  # type: ignore[attr-defined]
    assert "not a regular file" in caplog.text

    error = finishes(lambda: FileSessionRecordStore(base).load(other.id))
    assert isinstance(error, SessionCorruptError)
    assert "not a regular file" in str(error)
    assert ("named pipe" in str(error)) == (kind == "fifo")


def test_a_full_disk_is_one_storage_error(base: Path, project: str) -> None:
    store, record, path = stored(base, project)
    # /dev/full answers every write with ENOSPC: a real full disk, without filling one.
    path.unlink()
    path.symlink_to("/dev/full")
    with pytest.raises(SessionStorageError, match="the disk is full") as caught:
        store.append(record.id, [Message.user("more")], sync=True)
    assert caught.value.error.errno == errno.ENOSPC


def test_an_unwritable_store_folder_is_one_storage_error(base: Path, project: str) -> None:
    base.mkdir(parents=True)
    (base / "projects").write_text("a file where the sessions folder should be")
    store = FileSessionRecordStore(base)
    with pytest.raises(SessionStorageError, match="cannot use the session store"):
        store.create(SessionRecord.new(project_root=project, agent_ref="default"))


@pytest.mark.parametrize(
    ("code", "text"),
    [(errno.ENOSPC, "disk is full"), (errno.EROFS, "read-only"), (errno.EACCES, "permission"),
     (errno.EIO, "Input/output error")],
)
def test_storage_problems_say_what_to_do(code: int, text: str, tmp_path: Path) -> None:
    def fails() -> None:
        raise OSError(code, os.strerror(code), str(tmp_path))

    with pytest.raises(OSError) as caught:
        fails()
    assert text in storage_problem(caught.value)
    assert text in str(SessionStorageError(caught.value))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_data_folders_and_files_are_private(base: Path, project: str) -> None:
    store, record, path = stored(base, project)
    assert mode(base) == 0o700
    assert mode(base / "projects") == 0o700
    assert mode(path.parent) == 0o700
    assert mode(path) == 0o600
    with FileSessionLeaseStore(base).acquire(record.id, "me"):
        pass
    assert mode(base / "locks") == 0o700
    assert mode(base / "locks" / f"{record.id}.lock") == 0o600
    store.replace_transcript(record.id, [Message.user("compacted")])
    assert mode(path) == 0o600
    store.list_sessions()
    assert mode(base / "index.json") == 0o600


def test_old_shared_modes_are_tightened_only_for_aimon_folders(base: Path, project: str) -> None:
    base.mkdir(mode=0o755)
    base.chmod(0o755)
    store, record, path = stored(base, project)
    locks = base / "locks"
    locks.mkdir(mode=0o755)
    locks.chmod(0o755)
    lock = locks / f"{record.id}.lock"
    lock.write_text("")
    lock.chmod(0o644)
    path.parent.chmod(0o755)

    with FileSessionLeaseStore(base).acquire(record.id, "me"):
        pass
    store.create(SessionRecord.new(project_root=project, agent_ref="default"))
    assert mode(base) == 0o755  # the user's folder keeps its mode
    assert mode(locks) == 0o700
    assert mode(lock) == 0o600
    assert mode(path.parent) == 0o700
