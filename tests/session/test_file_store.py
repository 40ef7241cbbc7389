"""The file store: layout, torn tails, bad lines, the index."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aimon_core.llm import Message, ToolUseBlock
from aimon_core.session import (
    FileSessionRecordStore,
    SessionCorruptError,
    SessionId,
    SessionRecord,
    SessionTotals,
    project_key,
)

from .conftest import FakeClock


def new_session(store: FileSessionRecordStore, project: str, clock: FakeClock) -> SessionRecord:
    record = SessionRecord.new(project_root=project, agent_ref="default", now=clock())
    store.create(record)
    return record


def texts(store: FileSessionRecordStore, record: SessionRecord) -> list[str]:
    return [m.text for m in store.load(record.id).transcript]


def add_line(path: Path, raw: bytes) -> None:
    with path.open("ab") as f:
        f.write(raw)


def test_layout_is_one_jsonl_per_session_under_its_project(
    file_store: FileSessionRecordStore, project: str, clock: FakeClock, tmp_path: Path
) -> None:
    record = new_session(file_store, project, clock)
    file_store.append(record.id, [Message.user("hello")])
    file_store.write_side(
        record.id,
        totals=SessionTotals(turns=1),
        budget_override=None,
        compaction_failure_count=0,
        approvals=(),
    )

    path = tmp_path / "data" / "projects" / project_key(project) / f"{record.id}.jsonl"
    assert file_store.path_of(record.id) == path
    readable, digest = project_key(project).rsplit("-", 1)
    assert readable.endswith("-work-my-repo") and len(digest) == 8
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["type"] for line in lines] == ["header", "message", "side"]
    assert lines[0] == {
        "type": "header",
        "version": 1,
        "id": record.id,
        "project_root": project,
        "agent_ref": "default",
        "created_at": record.created_at.isoformat(),
        "title": "",
    }
    assert lines[1]["message"] == {"role": "user", "content": [{"type": "text", "text": "hello"}]}


def test_sessions_are_found_without_knowing_their_project(
    tmp_path: Path, project: str, clock: FakeClock
) -> None:
    writer = FileSessionRecordStore(tmp_path / "data", clock=clock)
    first = new_session(writer, project, clock)
    second = new_session(writer, "/elsewhere/repo", clock)

    reader = FileSessionRecordStore(tmp_path / "data")
    assert reader.load(first.id).project_root == project
    assert reader.load(second.id).project_root == "/elsewhere/repo"


def test_relative_project_root_is_refused(
    file_store: FileSessionRecordStore, clock: FakeClock
) -> None:
    with pytest.raises(ValueError, match="absolute"):
        new_session(file_store, "repo", clock)


def test_a_torn_tail_is_skipped_then_repaired_before_appending(
    file_store: FileSessionRecordStore, project: str, clock: FakeClock
) -> None:
    record = new_session(file_store, project, clock)
    file_store.append(record.id, [Message.user(f"m{n}") for n in range(3)])
    path = file_store.path_of(record.id)
    full = path.read_bytes()
    add_line(path, b'{"type":"message","at":"2025-01-01T00:00:00+00:00","message":{"role":"us')

    torn = file_store.load(record.id)
    assert [m.text for m in torn.transcript] == ["m0", "m1", "m2"]
    assert len(torn.load_warnings) == 1
    assert "line 5: incomplete last line" in torn.load_warnings[0]

    file_store.append(record.id, [Message.user("m3"), Message.user("m4")])

    repaired = file_store.load(record.id)
    assert [m.text for m in repaired.transcript] == ["m0", "m1", "m2", "m3", "m4"]
    assert repaired.load_warnings == ()
    data = path.read_bytes()
    assert data.startswith(full)
    assert all(json.loads(line) for line in data.splitlines())


def test_a_file_without_a_complete_header_is_never_appended_to(
    file_store: FileSessionRecordStore, project: str, clock: FakeClock
) -> None:
    record = new_session(file_store, project, clock)
    path = file_store.path_of(record.id)
    path.write_bytes(path.read_bytes()[:30])

    with pytest.raises(SessionCorruptError, match="header"):
        file_store.append(record.id, [Message.user("x")])
    with pytest.raises(SessionCorruptError, match="header"):
        file_store.load(record.id)
    assert len(path.read_bytes()) == 30


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (b"this is not json", "invalid JSON"),
        (b"\xff\xfe\xfd", "invalid JSON"),
        (b'{"type":"bookmark","at":"2025-01-01T00:00:00+00:00"}', "unknown line type"),
        (
            b'{"type":"message","at":"2025-01-01T00:00:00+00:00",'
            b'"message":{"role":"user","content":[{"type":"hologram"}]}}',
            "unknown content block type",
        ),
        (b'{"type":"side","at":"2025-01-01T00:00:00+00:00","totals":"lots"}', "'totals' must be"),
    ],
)
def test_a_bad_line_anywhere_is_skipped_and_later_lines_survive(
    file_store: FileSessionRecordStore, project: str, clock: FakeClock, bad: bytes, reason: str
) -> None:
    record = new_session(file_store, project, clock)
    file_store.append(record.id, [Message.user("before")])
    add_line(file_store.path_of(record.id), bad + b"\n")
    file_store.append(record.id, [Message.user("after")])
    file_store.write_side(
        record.id,
        totals=SessionTotals(turns=4),
        budget_override=None,
        compaction_failure_count=0,
        approvals=(),
    )

    loaded = file_store.load(record.id)

    assert [m.text for m in loaded.transcript] == ["before", "after"]
    assert loaded.totals.turns == 4
    assert len(loaded.load_warnings) == 1
    assert "line 3" in loaded.load_warnings[0]
    assert reason in loaded.load_warnings[0]


def test_a_second_header_and_blank_lines_are_harmless(
    file_store: FileSessionRecordStore, project: str, clock: FakeClock
) -> None:
    record = new_session(file_store, project, clock)
    path = file_store.path_of(record.id)
    header = path.read_bytes()
    add_line(path, b"\n\n" + header.replace(b'"default"', b'"intruder"'))
    file_store.append(record.id, [Message.user("hi")])

    loaded = file_store.load(record.id)
    assert loaded.agent_ref == "default"
    assert texts(file_store, record) == ["hi"]
    assert len(loaded.load_warnings) == 1
    assert "second header" in loaded.load_warnings[0]


def test_a_file_from_a_newer_aimon_is_refused(
    file_store: FileSessionRecordStore, project: str, clock: FakeClock
) -> None:
    record = new_session(file_store, project, clock)
    path = file_store.path_of(record.id)
    path.write_bytes(path.read_bytes().replace(b'"version":1', b'"version":2'))

    with pytest.raises(SessionCorruptError, match="newer"):
        file_store.load(record.id)


def test_compaction_rewrites_atomically_and_leaves_no_temp_files(
    file_store: FileSessionRecordStore, project: str, clock: FakeClock
) -> None:
    record = new_session(file_store, project, clock)
    file_store.append(record.id, [Message.user(f"m{n}") for n in range(50)])
    path = file_store.path_of(record.id)
    add_line(path, b"garbage\n")

    file_store.replace_transcript(record.id, [Message.user("summary")])

    kinds = [json.loads(line)["type"] for line in path.read_text().splitlines()]
    assert kinds == ["header", "snapshot", "side"]
    assert [p.name for p in path.parent.iterdir()] == [path.name]
    loaded = file_store.load(record.id)
    assert [m.text for m in loaded.transcript] == ["summary"]
    assert loaded.title == "m0"
    assert loaded.load_warnings == ()


def test_appending_what_cannot_be_stored_writes_nothing(
    file_store: FileSessionRecordStore, project: str, clock: FakeClock
) -> None:
    record = new_session(file_store, project, clock)
    path = file_store.path_of(record.id)
    before = path.read_bytes()
    unstorable = ToolUseBlock(id="t", name="x", input={"when": object()})

    with pytest.raises(TypeError):
        file_store.append(
            record.id, [Message.user("fine"), Message(role="assistant", content=(unstorable,))]
        )

    assert path.read_bytes() == before


# ---------------------------------------------------------------- the index


def make_sessions(
    store: FileSessionRecordStore, project: str, clock: FakeClock, n: int
) -> list[SessionId]:
    ids = []
    for i in range(n):
        record = new_session(store, project, clock)
        store.append(record.id, [Message.user(f"session {i}"), Message.user("more")])
        ids.append(record.id)
    return ids


def test_listing_rebuilds_a_missing_or_corrupt_index(
    file_store: FileSessionRecordStore, project: str, clock: FakeClock, tmp_path: Path
) -> None:
    ids = make_sessions(file_store, project, clock, 3)
    index = tmp_path / "data" / "index.json"
    expected = file_store.list_sessions()
    assert [s.id for s in expected] == ids[::-1]
    assert index.exists()

    index.unlink()
    assert file_store.list_sessions() == expected
    assert json.loads(index.read_text())["version"] == 1

    for junk in (b"{corrupt", b"[]", b'{"version": 1, "sessions": {"x": 1}}', b""):
        index.write_bytes(junk)
        assert file_store.list_sessions() == expected
        assert len(json.loads(index.read_text())["sessions"]) == 3


def test_listing_notices_appends_deletes_and_new_files(
    tmp_path: Path, project: str, clock: FakeClock
) -> None:
    store = FileSessionRecordStore(tmp_path / "data", clock=clock)
    ids = make_sessions(store, project, clock, 3)
    store.list_sessions()
    other = FileSessionRecordStore(tmp_path / "data", clock=clock)  # e.g. another process

    other.append(ids[0], [Message.user("again")])
    other.delete(ids[1])
    new = make_sessions(other, "/other/project", clock, 1)

    listed = store.list_sessions()
    assert [s.id for s in listed] == [new[0], ids[0], ids[2]]
    assert listed[1].message_count == 3
    assert [s.id for s in store.list_sessions(project_root=project)] == [ids[0], ids[2]]
    assert [s.id for s in store.list_sessions()] == [new[0], ids[0], ids[2]]


def test_a_corrupt_session_file_is_left_out_of_listing(
    file_store: FileSessionRecordStore, project: str, clock: FakeClock
) -> None:
    ids = make_sessions(file_store, project, clock, 2)
    file_store.path_of(ids[0]).write_bytes(b"\x00\x00garbage\n")
    (file_store.path_of(ids[1]).parent / "notes.txt").write_text("not a session")

    assert [s.id for s in file_store.list_sessions()] == [ids[1]]


def test_listing_a_thousand_sessions_is_served_by_the_index(
    file_store: FileSessionRecordStore, project: str, clock: FakeClock
) -> None:
    ids = make_sessions(file_store, project, clock, 1000)
    first = file_store.list_sessions(limit=1000)
    assert [s.id for s in first] == ids[::-1]
    assert {s.message_count for s in first} == {2}

    # Scramble every transcript without changing its size, mtime or inode: a listing that
    # read transcripts would now fail or differ; one served by the index does not notice.
    for session_id in ids:
        path = file_store.path_of(session_id)
        stat = path.stat()
        with path.open("r+b") as f:
            f.write(b"#" * stat.st_size)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))

    assert file_store.list_sessions(limit=1000) == first
    assert file_store.list_sessions() == first[:50]
    assert file_store.list_sessions(project_root=project, limit=3) == first[:3]
