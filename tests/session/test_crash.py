"""Crash tests with real processes: kill -9 mid-append, two processes on one session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from aimon_core.agent import MAY_HAVE_RUN_RESULT, NEVER_RAN_RESULT, repair_tool_pairs
from aimon_core.llm import Message, ToolResultBlock
from aimon_core.session import (
    FileSessionLeaseStore,
    FileSessionRecordStore,
    SessionLockedError,
    SessionRecord,
    SessionStore,
)

CHILD = Path(__file__).with_name("_child.py")
REPO = Path(__file__).resolve().parents[2]


@contextmanager
def child(
    mode: str, base_dir: Path, session_id: str, holder: str
) -> Iterator[subprocess.Popen[str]]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with subprocess.Popen(
        [sys.executable, str(CHILD), mode, str(base_dir), session_id, holder],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    ) as proc:
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def kill9(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL


@pytest.fixture
def base_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def record(base_dir: Path, project: str) -> SessionRecord:
    record = SessionRecord.new(project_root=project, agent_ref="default")
    FileSessionRecordStore(base_dir).create(record)
    return record


def test_kill9_mid_append_keeps_every_complete_line(base_dir: Path, record: SessionRecord) -> None:
    store = FileSessionRecordStore(base_dir)
    with child("append", base_dir, record.id, "appender") as proc:
        assert proc.stdout is not None
        confirmed = -1
        while confirmed < 60:
            confirmed = int(proc.stdout.readline())
        kill9(proc)

    loaded = store.load(record.id)
    numbers = [int(m.text.split()[1]) for m in loaded.transcript]
    assert numbers == list(range(len(numbers)))  # nothing merged, nothing out of order
    assert len(numbers) >= confirmed + 1
    assert all("incomplete last line" in w for w in loaded.load_warnings)

    # The OS released the dead holder's lock; the next writer repairs any torn tail.
    with FileSessionLeaseStore(base_dir).acquire(record.id, "survivor") as lease:
        store.append(record.id, [Message.user("after the crash")], lease=lease, sync=True)
    after = store.load(record.id)
    assert [m.text for m in after.transcript][: len(numbers)] == [m.text for m in loaded.transcript]
    assert after.transcript.messages[-1].text == "after the crash"
    assert after.load_warnings == ()


def test_a_second_process_is_locked_out_and_writes_nothing(
    base_dir: Path, record: SessionRecord
) -> None:
    path = FileSessionRecordStore(base_dir).path_of(record.id)
    before = path.read_bytes()
    with child("hold", base_dir, record.id, "pid 1111 on first-host") as holder:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "ready\n"

        with child("claim", base_dir, record.id, "second") as second:
            out, _ = second.communicate()
            assert second.returncode == 3
        assert out == "locked pid 1111 on first-host\n"
        assert path.read_bytes() == before

        kill9(holder)

    # The holder died without releasing: its lease is gone with it.
    with child("claim", base_dir, record.id, "third") as third:
        out, _ = third.communicate()
    assert (third.returncode, out) == (0, "claimed\n")
    loaded = FileSessionRecordStore(base_dir).load(record.id)
    assert [m.text for m in loaded.transcript] == ["from claim"]


def test_a_claim_in_this_process_names_the_other_process(
    base_dir: Path, record: SessionRecord, project: str
) -> None:
    sessions = SessionStore(FileSessionRecordStore(base_dir), FileSessionLeaseStore(base_dir))
    with child("hold", base_dir, record.id, "pid 2222 on other-host") as holder:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "ready\n"
        with pytest.raises(SessionLockedError, match="in use by pid 2222 on other-host"):
            sessions.claim(record.id, project_root=project, agent_ref="default")
        kill9(holder)

    claimed = sessions.claim(record.id, project_root=project, agent_ref="default")
    sessions.release(claimed)


def test_kill9_after_write_ran_says_it_may_have_run(
    base_dir: Path, record: SessionRecord, tmp_path: Path
) -> None:
    target = tmp_path / "out.txt"
    with child("write", base_dir, record.id, str(target)) as proc:
        assert proc.stdout is not None
        assert proc.stdout.readline() == "written\n"
        kill9(proc)
    assert target.read_text() == "done\n"  # the write happened; its result was never stored

    loaded = FileSessionRecordStore(base_dir).load(record.id)
    (use,) = loaded.transcript.messages[-1].tool_uses
    assert loaded.started_tool_ids == (use.id,)
    assert b'"type":"tool_started"' in FileSessionRecordStore(base_dir).path_of(
        record.id).read_bytes()
    repaired = repair_tool_pairs(loaded.transcript.messages, loaded.started_tool_ids)
    (answer,) = repaired[-1].content
    assert isinstance(answer, ToolResultBlock) and answer.is_error
    assert answer.tool_use_id == use.id
    assert answer.content[0].text == MAY_HAVE_RUN_RESULT  # type: ignore[union-attr]
    assert "Not run" not in MAY_HAVE_RUN_RESULT
    # A call that never started keeps the never-ran text.
    never = repair_tool_pairs(loaded.transcript.messages)
    assert never[-1].content[0].content[0].text == NEVER_RAN_RESULT  # type: ignore[union-attr]
