"""The SessionRecordStore contract: every store passes the same tests."""

from __future__ import annotations

import dataclasses

import pytest

from aimon_core.llm import Message
from aimon_core.session import (
    BudgetOverride,
    MemorySessionLeaseStore,
    ModelChoice,
    SessionExistsError,
    SessionId,
    SessionNotFoundError,
    SessionRecord,
    SessionRecordStore,
    SessionTotals,
    StaleLeaseError,
)

from .conftest import FakeClock, StoreMaker

TOTALS = SessionTotals(
    turns=2,
    iterations=5,
    input_tokens=1000,
    output_tokens=200,
    cache_read_tokens=300,
    cache_write_tokens=40,
    cost_usd=0.0125,
)


def new_record(project: str, clock: FakeClock, agent_ref: str = "default") -> SessionRecord:
    return SessionRecord.new(project_root=project, agent_ref=agent_ref, now=clock())


def write_side(store: SessionRecordStore, session_id: SessionId, totals: SessionTotals) -> None:
    store.write_side(
        session_id,
        totals=totals,
        budget_override=BudgetOverride(max_iterations=7, max_seconds=1.5),
        compaction_failure_count=1,
        approvals=("Bash(git status)",),
        model_choice=ModelChoice(model="gpt-5.4", provider="openai"),
    )


def test_created_record_loads_unchanged(
    make_store: StoreMaker, project: str, clock: FakeClock
) -> None:
    record = new_record(project, clock)
    make_store().create(record)

    loaded = make_store().load(record.id)

    assert loaded == record
    assert loaded.title == ""
    assert len(loaded.transcript) == 0
    assert loaded.totals == SessionTotals()
    assert loaded.load_warnings == ()


def test_create_with_state_keeps_every_field(
    make_store: StoreMaker, project: str, clock: FakeClock, conversation: tuple[Message, ...]
) -> None:
    record = dataclasses.replace(
        new_record(project, clock),
        transcript=new_record(project, clock).transcript.appended(conversation),
        totals=TOTALS,
        budget_override=BudgetOverride(max_tokens=10),
        compaction_failure_count=2,
        approvals=("Read(*)",),
    )
    make_store().create(record)

    loaded = make_store().load(record.id)

    assert loaded.transcript.messages == conversation
    assert loaded.title == "Fix the failing test in parser.py please"
    assert loaded.snapshot == record.snapshot


def test_create_refuses_a_taken_id(
    store: SessionRecordStore, project: str, clock: FakeClock
) -> None:
    record = new_record(project, clock)
    store.create(record)

    with pytest.raises(SessionExistsError) as caught:
        store.create(dataclasses.replace(record, agent_ref="other"))

    assert caught.value.session_id == record.id
    assert store.load(record.id).agent_ref == "default"


@pytest.mark.parametrize("junk", ["20240101-000000-abcdef", "../x", "", "20250101-000000-ZZZZZZ"])
def test_unknown_id_raises_not_found(store: SessionRecordStore, junk: str) -> None:
    with pytest.raises(SessionNotFoundError):
        store.load(SessionId(junk))
    with pytest.raises(SessionNotFoundError):
        store.append(SessionId(junk), [Message.user("hi")])
    with pytest.raises(SessionNotFoundError):
        write_side(store, SessionId(junk), TOTALS)
    with pytest.raises(SessionNotFoundError):
        store.replace_transcript(SessionId(junk), [])
    with pytest.raises(SessionNotFoundError):
        store.delete(SessionId(junk))


def test_appended_messages_load_in_order(
    make_store: StoreMaker, project: str, clock: FakeClock, conversation: tuple[Message, ...]
) -> None:
    record = new_record(project, clock)
    store = make_store()
    store.create(record)

    store.append(record.id, conversation[:2])
    store.append(record.id, [])
    store.append(record.id, conversation[2:], sync=True)

    loaded = make_store().load(record.id)
    assert loaded.transcript.messages == conversation
    assert loaded.updated_at > record.updated_at
    assert loaded.load_warnings == ()


def test_title_is_the_first_user_text_cut_to_80(
    make_store: StoreMaker, project: str, clock: FakeClock
) -> None:
    record = new_record(project, clock)
    store = make_store()
    store.create(record)

    store.append(record.id, [Message(role="user", content=())])
    store.append(record.id, [Message.user("  word\n" * 30)])
    store.append(record.id, [Message.user("a later question")])

    title = make_store().load(record.id).title
    assert len(title) == 80
    assert title.startswith("word word ")
    assert title.endswith("…")


def test_side_state_written_twice_is_not_double_counted(
    make_store: StoreMaker, project: str, clock: FakeClock
) -> None:
    record = new_record(project, clock)
    store = make_store()
    store.create(record)

    write_side(store, record.id, TOTALS)
    write_side(store, record.id, TOTALS)

    loaded = make_store().load(record.id)
    assert loaded.totals == TOTALS
    assert loaded.budget_override == BudgetOverride(max_iterations=7, max_seconds=1.5)
    assert loaded.compaction_failure_count == 1
    assert loaded.approvals == ("Bash(git status)",)
    assert loaded.model_choice == ModelChoice(model="gpt-5.4", provider="openai")


def test_latest_side_state_wins(make_store: StoreMaker, project: str, clock: FakeClock) -> None:
    record = new_record(project, clock)
    store = make_store()
    store.create(record)
    later = dataclasses.replace(TOTALS, turns=3, cost_usd=0.5)

    write_side(store, record.id, TOTALS)
    store.append(record.id, [Message.user("hi")])
    store.write_side(
        record.id,
        totals=later,
        budget_override=None,
        compaction_failure_count=0,
        approvals=(),
        sync=True,
    )

    loaded = make_store().load(record.id)
    assert (loaded.totals, loaded.budget_override, loaded.approvals) == (later, None, ())


def test_replace_transcript_keeps_title_and_side_state(
    make_store: StoreMaker, project: str, clock: FakeClock, conversation: tuple[Message, ...]
) -> None:
    record = new_record(project, clock)
    store = make_store()
    store.create(record)
    store.append(record.id, conversation)
    write_side(store, record.id, TOTALS)
    summary = Message.user("Summary of the session so far.")

    store.replace_transcript(record.id, [summary])
    store.append(record.id, conversation[-1:])

    loaded = make_store().load(record.id)
    assert loaded.transcript.messages == (summary, conversation[-1])
    assert loaded.title == "Fix the failing test in parser.py please"
    assert loaded.totals == TOTALS
    assert loaded.approvals == ("Bash(git status)",)
    assert loaded.load_warnings == ()


def test_list_is_newest_first_with_limit_and_project_filter(
    make_store: StoreMaker, project: str, clock: FakeClock
) -> None:
    store = make_store()
    other_project = project + "-other"
    ids = []
    for n in range(4):
        record = new_record(project if n != 2 else other_project, clock)
        store.create(record)
        store.append(record.id, [Message.user(f"question {n}")] * (n + 1))
        ids.append(record.id)
    store.append(ids[0], [Message.user("more")])  # session 0 is now the newest

    listed = make_store().list_sessions()
    assert [s.id for s in listed] == [ids[0], ids[3], ids[2], ids[1]]
    assert [s.message_count for s in listed] == [2, 4, 3, 2]
    assert [s.title for s in listed] == ["question 0", "question 3", "question 2", "question 1"]
    assert listed[2].project_root == other_project
    assert listed[0].agent_ref == "default"
    assert [s.id for s in make_store().list_sessions(limit=2)] == [ids[0], ids[3]]
    in_project = make_store().list_sessions(project_root=project)
    assert [s.id for s in in_project] == [ids[0], ids[3], ids[1]]
    assert [s.id for s in make_store().list_sessions(project_root=other_project)] == [ids[2]]
    assert make_store().list_sessions(project_root=project + "-none") == ()
    assert make_store().list_sessions(limit=0) == ()


def test_delete_removes_the_session(
    store: SessionRecordStore, project: str, clock: FakeClock
) -> None:
    kept, gone = new_record(project, clock), new_record(project, clock)
    store.create(kept)
    store.create(gone)

    store.delete(gone.id)

    with pytest.raises(SessionNotFoundError):
        store.load(gone.id)
    assert [s.id for s in store.list_sessions()] == [kept.id]
    store.create(gone)  # the id is free again
    assert store.load(gone.id) == gone


def test_writes_under_a_stale_lease_are_refused(
    store: SessionRecordStore, project: str, clock: FakeClock
) -> None:
    record = new_record(project, clock)
    store.create(record)
    leases = MemorySessionLeaseStore()
    lease = leases.acquire(record.id, "me")
    store.append(record.id, [Message.user("first")], lease=lease)
    lease.release()
    newer = leases.acquire(record.id, "someone else")

    with pytest.raises(StaleLeaseError):
        store.append(record.id, [Message.user("late")], lease=lease)
    with pytest.raises(StaleLeaseError):
        store.write_side(
            record.id,
            totals=TOTALS,
            budget_override=None,
            compaction_failure_count=0,
            approvals=(),
            lease=lease,
        )
    with pytest.raises(StaleLeaseError):
        store.replace_transcript(record.id, [], lease=lease)
    with pytest.raises(StaleLeaseError):
        store.delete(record.id, lease=lease)
    store.append(record.id, [Message.user("second")], lease=newer)

    assert [m.text for m in store.load(record.id).transcript] == ["first", "second"]
    assert store.load(record.id).totals == SessionTotals()


def test_a_lease_on_another_session_is_refused(
    store: SessionRecordStore, project: str, clock: FakeClock
) -> None:
    record, other = new_record(project, clock), new_record(project, clock)
    store.create(record)
    store.create(other)
    lease = MemorySessionLeaseStore().acquire(other.id, "me")

    with pytest.raises(ValueError, match="used to write"):
        store.append(record.id, [Message.user("x")], lease=lease)


def test_started_tool_calls_are_kept_until_answered(
    make_store: StoreMaker, project: str, clock: FakeClock
) -> None:
    from aimon_core.llm import TextBlock, ToolResultBlock, ToolUseBlock

    store = make_store()
    record = new_record(project, clock)
    store.create(record)
    calls = Message(role="assistant", content=(
        ToolUseBlock(id="t1", name="Write", input={}),
        ToolUseBlock(id="t2", name="Bash", input={})))
    store.append(record.id, [Message.user("go"), calls])
    store.mark_tool_started(record.id, ["t1"])
    store.mark_tool_started(record.id, ["t2"], sync=True)
    assert make_store().load(record.id).started_tool_ids == ("t1", "t2")

    answer = ToolResultBlock(tool_use_id="t1", content=(TextBlock(text="ok"),))
    store.append(record.id, [Message(role="user", content=(answer,))])
    assert make_store().load(record.id).started_tool_ids == ("t2",)

    store.replace_transcript(record.id, [Message.user("summary"), calls])
    assert make_store().load(record.id).started_tool_ids == ("t2",)


def test_mark_tool_started_checks_the_lease(
    make_store: StoreMaker, project: str, clock: FakeClock
) -> None:
    store = make_store()
    record = new_record(project, clock)
    store.create(record)
    leases = MemorySessionLeaseStore()
    lease = leases.acquire(record.id, "me")
    lease.release()
    with pytest.raises(StaleLeaseError):
        store.mark_tool_started(record.id, ["t1"], lease=lease)
