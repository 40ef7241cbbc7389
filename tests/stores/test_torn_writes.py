"""A write that fails half-way leaves nothing behind, on every store that encodes: files,
PostgreSQL, Redis (the memory store keeps values as they are and encodes nothing)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from aimon_core.llm import Message, ToolUseBlock
from aimon_core.session import SessionRecord, SessionRecordStore
from aimon_core.stores import open_backend

BACKENDS = ["file", "postgresql", "redis"]


@pytest.fixture(params=BACKENDS)
def records(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionRecordStore]:
    if request.param == "file":
        backend = open_backend(None, data_dir=tmp_path / "data")
    else:
        fixture = "postgres_url" if request.param == "postgresql" else "redis_url"
        backend = open_backend(request.getfixturevalue(fixture))
    try:
        yield backend.store.records
    finally:
        backend.close()


def _unwritable() -> Message:
    # Its input cannot be encoded (JSON has no sets): the store fails while writing the batch.
    return Message(role="assistant", content=(
        ToolUseBlock(id="t1", name="Bash", input={"bad": {1, 2}}),))


def test_a_batch_that_fails_half_way_leaves_nothing(records: SessionRecordStore) -> None:
    record = SessionRecord.new(project_root="/torn/project", agent_ref="default")
    records.create(record)
    records.append(record.id, [Message.user("before")])

    with pytest.raises(TypeError):
        records.append(record.id, [Message.user("first of the batch"), _unwritable()])
    with pytest.raises(TypeError):
        records.replace_transcript(record.id, [Message.user("summary"), _unwritable()])

    loaded = records.load(record.id)
    assert [m.text for m in loaded.transcript] == ["before"]
    assert loaded.load_warnings == ()
    records.append(record.id, [Message.user("after")])
    assert [m.text for m in records.load(record.id).transcript] == ["before", "after"]
