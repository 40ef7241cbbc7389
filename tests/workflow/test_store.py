"""Run stores: the contract for both backends, and what the file store does with damage."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from aimon_core.agent import RunState, TaskState
from aimon_core.llm import Message
from aimon_core.testing import RunStoreContract
from aimon_core.workflow import (
    FileRunStore,
    MemoryRunStore,
    RunRecord,
    RunStore,
    RunStoreError,
    TaskChanged,
    TaskMessage,
    TaskRecord,
    new_run_id,
    parse_pipeline,
)
from tests.workflow.conftest import SURVEY


class TestMemoryRunStore(RunStoreContract):
    def setup_method(self) -> None:
        self.store = MemoryRunStore()

    def make_store(self) -> RunStore:
        return self.store


class TestFileRunStore(RunStoreContract):
    def setup_method(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="aimon-runs-"))

    def teardown_method(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def make_store(self) -> RunStore:
        return FileRunStore(self.folder)


def stored(tmp_path: Path) -> tuple[FileRunStore, RunRecord]:
    from datetime import UTC, datetime

    now = datetime.now(UTC)
    record = RunRecord(id=new_run_id(now), pipeline=parse_pipeline(SURVEY), inputs={},
                       project_root=str(tmp_path), created_at=now, updated_at=now)
    store = FileRunStore(tmp_path / "data")
    store.create(record)
    task = TaskRecord(stage=0, index=0, label="explore/0", agent="explore",
                      state=TaskState.COMPLETED, output="done")
    store.append(record.id, TaskChanged(task=task))
    store.append(record.id, TaskMessage(stage=0, index=0, round=1, message=Message.user("hi")))
    return store, record


def test_a_torn_last_line_is_dropped_and_the_next_append_repairs_it(tmp_path: Path) -> None:
    store, record = stored(tmp_path)
    path = store.path(record.id)
    with path.open("ab") as file:
        file.write(b'{"t":"task","stage":0,"ind')  # a crash mid-write
    loaded = store.load(record.id)
    assert loaded.task(0, 0).output == "done"  # type: ignore[union-attr]
    assert loaded.load_warnings == ()
    store.append(record.id, TaskMessage(stage=0, index=0, round=1, message=Message.user("on")))
    again = FileRunStore(tmp_path / "data").load(record.id)
    assert [m.text for m in again.task(0, 0).transcript] == ["hi", "on"]  # type: ignore
    assert again.load_warnings == ()


def test_a_bad_line_anywhere_is_skipped_and_named(tmp_path: Path) -> None:
    store, record = stored(tmp_path)
    path = store.path(record.id)
    lines = path.read_bytes().split(b"\n")
    lines.insert(1, b'{"t":"task","stage":"zero"}')
    lines.insert(2, b"not json at all")
    path.write_bytes(b"\n".join(lines))
    loaded = store.load(record.id)
    assert loaded.task(0, 0).output == "done"  # type: ignore[union-attr]
    assert len(loaded.load_warnings) == 2
    assert f"{path}:2: skipped" in loaded.load_warnings[0]


def test_a_fifo_in_place_of_a_run_file_is_refused_not_waited_on(tmp_path: Path) -> None:
    store, record = stored(tmp_path)
    path = store.path(record.id)
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(RunStoreError, match="not a regular file"):
        store.load(record.id)


def test_runs_live_beside_the_sessions_one_folder_per_project(tmp_path: Path) -> None:
    from aimon_core.session import project_key

    store, record = stored(tmp_path)
    assert store.path(record.id) == (tmp_path / "data" / "workflows" / project_key(
        str(tmp_path)) / f"{record.id}.jsonl")
    assert (store.path(record.id).stat().st_mode & 0o777) == 0o600
    assert record.state is RunState.RUNNING
