"""Leases, fencing, and claiming sessions through SessionStore."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aimon_core.llm import Message
from aimon_core.session import (
    AgentMismatchError,
    FileSessionLeaseStore,
    FileSessionRecordStore,
    MemorySessionLeaseStore,
    MemorySessionRecordStore,
    SessionLeaseStore,
    SessionLockedError,
    SessionNotFoundError,
    SessionStorageError,
    SessionStore,
    StaleLeaseError,
    new_session_id,
)

from .conftest import FakeClock


@pytest.fixture(params=["memory", "file"])
def leases(request: pytest.FixtureRequest, tmp_path: Path) -> SessionLeaseStore:
    if request.param == "memory":
        return MemorySessionLeaseStore()
    return FileSessionLeaseStore(tmp_path / "data")


@pytest.fixture(params=["memory", "file"])
def sessions(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> SessionStore:
    if request.param == "memory":
        return SessionStore(
            MemorySessionRecordStore(clock=clock), MemorySessionLeaseStore(), clock=clock
        )
    return SessionStore(
        FileSessionRecordStore(tmp_path / "data", clock=clock),
        FileSessionLeaseStore(tmp_path / "data"),
        clock=clock,
    )


def test_one_holder_at_a_time_and_tokens_grow(leases: SessionLeaseStore) -> None:
    session_id = new_session_id()
    first = leases.acquire(session_id, "pid 1 on alpha")

    with pytest.raises(SessionLockedError, match="in use by pid 1 on alpha") as caught:
        leases.acquire(session_id, "pid 2 on beta")
    assert (caught.value.session_id, caught.value.holder) == (session_id, "pid 1 on alpha")

    first.release()
    first.release()  # a second release does nothing
    with leases.acquire(session_id, "pid 2 on beta") as second:
        assert second.token > first.token
        second.verify()
    assert second.released
    third = leases.acquire(session_id, "pid 3 on gamma")
    assert third.token > second.token
    third.release()


def test_leases_on_different_sessions_are_independent(leases: SessionLeaseStore) -> None:
    a = leases.acquire(new_session_id(), "a")
    b = leases.acquire(new_session_id(), "b")
    a.release()
    b.release()


def test_a_released_lease_is_stale(leases: SessionLeaseStore) -> None:
    lease = leases.acquire(new_session_id(), "me")
    lease.release()

    with pytest.raises(StaleLeaseError, match="released"):
        lease.verify()


def test_file_lock_excludes_a_second_descriptor_in_the_same_process(tmp_path: Path) -> None:
    session_id = new_session_id()
    lease = FileSessionLeaseStore(tmp_path).acquire(session_id, "first")

    with pytest.raises(SessionLockedError, match="first"):
        FileSessionLeaseStore(tmp_path).acquire(session_id, "second")
    lease.release()
    FileSessionLeaseStore(tmp_path).acquire(session_id, "second").release()


def test_file_store_refuses_a_write_under_a_superseded_lease(
    tmp_path: Path, project: str, clock: FakeClock
) -> None:
    sessions = SessionStore(
        FileSessionRecordStore(tmp_path / "data", clock=clock),
        FileSessionLeaseStore(tmp_path / "data"),
    )
    claimed = sessions.claim(None, project_root=project, agent_ref="default", holder="old")
    session_id = claimed.record.id
    sessions.records.append(session_id, [Message.user("one")], lease=claimed.lease)
    # The lock file is removed (a cleanup script, say): the old holder no longer excludes
    # anyone, and the next acquire gets a newer token from a fresh lock file.
    lock = tmp_path / "data" / "locks" / f"{session_id}.lock"
    lock.unlink()
    newer = FileSessionLeaseStore(tmp_path / "data").acquire(session_id, "new")

    with pytest.raises(StaleLeaseError, match=f"lease {newer.token} was acquired after it"):
        sessions.records.append(session_id, [Message.user("late")], lease=claimed.lease)
    sessions.records.append(session_id, [Message.user("two")], lease=newer)

    assert [m.text for m in sessions.records.load(session_id).transcript] == ["one", "two"]
    newer.release()
    claimed.lease.release()


def test_a_corrupt_lock_file_still_gives_a_newer_token(tmp_path: Path) -> None:
    leases = FileSessionLeaseStore(tmp_path)
    session_id = new_session_id()
    first = leases.acquire(session_id, "me")
    first.release()
    leases.lock_path(session_id).write_bytes(b"\x00garbage")

    second = leases.acquire(session_id, "me")
    assert second.token > first.token
    second.release()


def test_claim_none_starts_a_session_under_lease(sessions: SessionStore, project: str) -> None:
    claimed = sessions.claim(None, project_root=project, agent_ref="default", holder="me")

    assert claimed.record.project_root == str(Path(project).resolve())
    assert claimed.record.agent_ref == "default"
    assert sessions.records.load(claimed.record.id) == claimed.record
    with pytest.raises(SessionLockedError, match="in use by me"):
        sessions.claim(claimed.record.id, project_root=project, agent_ref="default")
    sessions.release(claimed)


def test_claim_resumes_a_released_session(sessions: SessionStore, project: str) -> None:
    claimed = sessions.claim(None, project_root=project, agent_ref="default")
    sessions.records.append(claimed.record.id, [Message.user("hi")], lease=claimed.lease)
    sessions.release(claimed)

    again = sessions.claim(f" {claimed.record.id} ", project_root=project, agent_ref="default")

    assert [m.text for m in again.record.transcript] == ["hi"]
    assert again.lease.token > claimed.lease.token
    sessions.release(again)


def test_a_failed_claim_releases_its_lease(sessions: SessionStore, project: str) -> None:
    claimed = sessions.claim(None, project_root=project, agent_ref="default")
    sessions.release(claimed)
    missing = new_session_id()

    with pytest.raises(AgentMismatchError):
        sessions.claim(claimed.record.id, project_root=project, agent_ref="reviewer")
    with pytest.raises(SessionNotFoundError):
        sessions.claim(missing, project_root=project, agent_ref="default")

    sessions.leases.acquire(claimed.record.id, "next").release()
    sessions.leases.acquire(missing, "next").release()


def test_agent_mismatch_names_both_agents(sessions: SessionStore, project: str) -> None:
    claimed = sessions.claim(None, project_root=project, agent_ref="default")
    sessions.release(claimed)

    with pytest.raises(AgentMismatchError, match="'default', not 'reviewer'") as caught:
        sessions.claim(claimed.record.id, project_root=project, agent_ref="reviewer")
    assert caught.value.recorded_agent == "default"
    assert caught.value.requested_agent == "reviewer"


@pytest.mark.parametrize("junk", ["../x", "", "latest", "20250101-000000-00000g"])
def test_claim_refuses_junk_ids(sessions: SessionStore, junk: str) -> None:
    with pytest.raises(SessionNotFoundError, match="not a session id"):
        sessions.claim(junk, project_root="/", agent_ref="default")


def test_lease_descriptors_are_not_inherited(tmp_path: Path) -> None:
    lease = FileSessionLeaseStore(tmp_path).acquire(new_session_id(), "me")
    lock = FileSessionLeaseStore(tmp_path).lock_path(lease.session_id)
    fds = [int(p.name) for p in Path("/proc/self/fd").iterdir()]
    held = [fd for fd in fds if _points_to(fd, lock)]
    assert held
    assert not any(os.get_inheritable(fd) for fd in held)
    lease.release()


def _points_to(fd: int, path: Path) -> bool:
    try:
        return Path(f"/proc/self/fd/{fd}").readlink() == path
    except OSError:
        return False


def test_an_unusable_store_folder_is_a_clear_session_error(tmp_path: Path) -> None:
    base = tmp_path / "data"
    base.write_text("a file where the data folder should be")
    sessions = SessionStore(FileSessionRecordStore(base), FileSessionLeaseStore(base))
    for session_id in (None, new_session_id()):
        with pytest.raises(SessionStorageError, match=r"cannot use the session store \(.*data"):
            sessions.claim(session_id, project_root=str(tmp_path), agent_ref="default")
