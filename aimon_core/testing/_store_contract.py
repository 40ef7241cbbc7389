"""The SessionRecordStore contract: the tests every record store passes, for any backend.

A backend (files, memory, PostgreSQL, Redis...) proves that it keeps sessions as aimon needs
by running this suite. Subclass `SessionRecordStoreContract` in a pytest module (the class
name must start with `Test` there) and return a store from `make_store`; every call must
return a store on the same data (a new connection to the same database, a new object on the
same folder), since the tests check what a second store reads:

    class TestMyStore(SessionRecordStoreContract):
        def setup_method(self) -> None:
            super().setup_method()
            self.folder = tempfile.mkdtemp()

        def make_store(self) -> SessionRecordStore:
            return MyStore(self.folder, clock=self.clock)

The checks are plain asserts; nothing here needs pytest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from aimon_core.llm import (
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
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


class FakeClock:
    """A clock that moves one second forward every time it is read."""

    def __init__(self) -> None:
        self.now = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def every_block_conversation() -> tuple[Message, ...]:
    """Messages holding every kind of content block."""
    return (
        Message.user("Fix the failing test in parser.py please"),
        Message(
            role="assistant",
            content=(
                ThinkingBlock(thinking="Look first.", signature="sig=="),
                ThinkingBlock(thinking="", redacted_data="opaque"),
                TextBlock(text="Reading it — ünïcödé, \u2028 and a lone \udce9 survive."),
                ToolUseBlock(id="t1", name="read", input={"path": "parser.py", "n": [1, 2.5]}),
                ToolUseBlock(id="t2", name="bash", input={}, input_error="bad JSON"),
            ),
        ),
        Message(
            role="user",
            content=(
                ToolResultBlock(
                    tool_use_id="t1",
                    content=(
                        TextBlock(text="line 1\nline 2"),
                        ImageBlock(media_type="image/png", data="iVBO"),
                    ),
                ),
                ToolResultBlock(tool_use_id="t2", content=(TextBlock(text="no"),), is_error=True),
                DocumentBlock(media_type="application/pdf", data="JVBE", title="spec"),
                DocumentBlock(media_type="text/plain", data="aGk="),
            ),
        ),
        Message(role="assistant", content=(TextBlock(text="Done."),)),
    )


_TOTALS = SessionTotals(
    turns=2,
    iterations=5,
    input_tokens=1000,
    output_tokens=200,
    cache_read_tokens=300,
    cache_write_tokens=40,
    cost_usd=0.0125,
)


def _new_record(project: str, clock: FakeClock, agent_ref: str = "default") -> SessionRecord:
    return SessionRecord.new(project_root=project, agent_ref=agent_ref, now=clock())


def _write_side(store: SessionRecordStore, session_id: SessionId, totals: SessionTotals) -> None:
    store.write_side(
        session_id,
        totals=totals,
        budget_override=BudgetOverride(max_iterations=7, max_seconds=1.5),
        compaction_failure_count=1,
        approvals=("Bash(git status)",),
        model_choice=ModelChoice(model="gpt-5.4", provider="openai"),
    )


@contextlib.contextmanager
def _raises(kind: type[BaseException], match: str | None = None) -> Iterator[_Caught]:
    """Check that the block raises `kind` (and, with `match`, a message that matches)."""
    caught = _Caught()
    try:
        yield caught
    except kind as exc:
        caught.value = exc
        if match is not None and re.search(match, str(exc)) is None:
            raise AssertionError(f"{type(exc).__name__} {str(exc)!r} does not match "
                                 f"{match!r}") from exc
        return
    raise AssertionError(f"{kind.__name__} was not raised")


class _Caught:
    """What `_raises` caught."""

    value: BaseException | None = None


class SessionRecordStoreContract:
    """The tests every SessionRecordStore passes (see the module docs)."""

    project = "/contract/work/my.repo"

    def setup_method(self) -> None:
        """Start each test with a fresh clock."""
        self.clock = FakeClock()

    def make_store(self) -> SessionRecordStore:
        """Return a store on the data of this test (override it)."""
        raise NotImplementedError

    def test_created_record_loads_unchanged(self) -> None:
        make_store = self.make_store
        project = self.project
        clock = self.clock
        record = _new_record(project, clock)
        make_store().create(record)

        loaded = make_store().load(record.id)

        assert loaded == record
        assert loaded.title == ""
        assert len(loaded.transcript) == 0
        assert loaded.totals == SessionTotals()
        assert loaded.load_warnings == ()

    def test_create_with_state_keeps_every_field(self) -> None:
        make_store = self.make_store
        project = self.project
        clock = self.clock
        conversation = every_block_conversation()
        record = dataclasses.replace(
            _new_record(project, clock),
            transcript=_new_record(project, clock).transcript.appended(conversation),
            totals=_TOTALS,
            budget_override=BudgetOverride(max_tokens=10),
            compaction_failure_count=2,
            approvals=("Read(*)",),
            started_tool_ids=("t2",),
        )
        make_store().create(record)

        loaded = make_store().load(record.id)

        assert loaded.transcript.messages == conversation
        assert loaded.started_tool_ids == ("t2",)
        assert loaded.title == "Fix the failing test in parser.py please"
        assert loaded.snapshot == record.snapshot

    def test_create_refuses_a_taken_id(self) -> None:
        store = self.make_store()
        project = self.project
        clock = self.clock
        record = _new_record(project, clock)
        store.create(record)

        with _raises(SessionExistsError) as caught:
            store.create(dataclasses.replace(record, agent_ref="other"))

        assert isinstance(caught.value, SessionExistsError)
        assert caught.value.session_id == record.id
        assert store.load(record.id).agent_ref == "default"

    def test_unknown_id_raises_not_found(self) -> None:
        store = self.make_store()
        for junk in ["20240101-000000-abcdef", "../x", "", "20250101-000000-ZZZZZZ"]:
            with _raises(SessionNotFoundError):
                store.load(SessionId(junk))
            with _raises(SessionNotFoundError):
                store.append(SessionId(junk), [Message.user("hi")])
            with _raises(SessionNotFoundError):
                _write_side(store, SessionId(junk), _TOTALS)
            with _raises(SessionNotFoundError):
                store.replace_transcript(SessionId(junk), [])
            with _raises(SessionNotFoundError):
                store.delete(SessionId(junk))

    def test_appended_messages_load_in_order(self) -> None:
        make_store = self.make_store
        project = self.project
        clock = self.clock
        conversation = every_block_conversation()
        record = _new_record(project, clock)
        store = make_store()
        store.create(record)

        store.append(record.id, conversation[:2])
        store.append(record.id, [])
        store.append(record.id, conversation[2:], sync=True)

        loaded = make_store().load(record.id)
        assert loaded.transcript.messages == conversation
        assert loaded.updated_at > record.updated_at
        assert loaded.load_warnings == ()

    def test_title_is_the_first_user_text_cut_to_80(self) -> None:
        make_store = self.make_store
        project = self.project
        clock = self.clock
        record = _new_record(project, clock)
        store = make_store()
        store.create(record)

        store.append(record.id, [Message(role="user", content=())])
        store.append(record.id, [Message.user("  word\n" * 30)])
        store.append(record.id, [Message.user("a later question")])

        title = make_store().load(record.id).title
        assert len(title) == 80
        assert title.startswith("word word ")
        assert title.endswith("…")

    def test_side_state_written_twice_is_not_double_counted(self) -> None:
        make_store = self.make_store
        project = self.project
        clock = self.clock
        record = _new_record(project, clock)
        store = make_store()
        store.create(record)

        _write_side(store, record.id, _TOTALS)
        _write_side(store, record.id, _TOTALS)

        loaded = make_store().load(record.id)
        assert loaded.totals == _TOTALS
        assert loaded.budget_override == BudgetOverride(max_iterations=7, max_seconds=1.5)
        assert loaded.compaction_failure_count == 1
        assert loaded.approvals == ("Bash(git status)",)
        assert loaded.model_choice == ModelChoice(model="gpt-5.4", provider="openai")

    def test_latest_side_state_wins(self) -> None:
        make_store = self.make_store
        project = self.project
        clock = self.clock
        record = _new_record(project, clock)
        store = make_store()
        store.create(record)
        later = dataclasses.replace(_TOTALS, turns=3, cost_usd=0.5)

        _write_side(store, record.id, _TOTALS)
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

    def test_replace_transcript_keeps_title_and_side_state(self) -> None:
        make_store = self.make_store
        project = self.project
        clock = self.clock
        conversation = every_block_conversation()
        record = _new_record(project, clock)
        store = make_store()
        store.create(record)
        store.append(record.id, conversation)
        _write_side(store, record.id, _TOTALS)
        summary = Message.user("Summary of the session so far.")

        store.replace_transcript(record.id, [summary])
        store.append(record.id, conversation[-1:])

        loaded = make_store().load(record.id)
        assert loaded.transcript.messages == (summary, conversation[-1])
        assert loaded.title == "Fix the failing test in parser.py please"
        assert loaded.totals == _TOTALS
        assert loaded.approvals == ("Bash(git status)",)
        assert loaded.load_warnings == ()

    def test_list_is_newest_first_with_limit_and_project_filter(self) -> None:
        make_store = self.make_store
        project = self.project
        clock = self.clock
        store = make_store()
        other_project = project + "-other"
        ids = []
        for n in range(4):
            record = _new_record(project if n != 2 else other_project, clock)
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

    def test_delete_removes_the_session(self) -> None:
        store = self.make_store()
        project = self.project
        clock = self.clock
        kept, gone = _new_record(project, clock), _new_record(project, clock)
        store.create(kept)
        store.create(gone)

        store.delete(gone.id)

        with _raises(SessionNotFoundError):
            store.load(gone.id)
        assert [s.id for s in store.list_sessions()] == [kept.id]
        store.create(gone)  # the id is free again
        assert store.load(gone.id) == gone

    def test_writes_under_a_stale_lease_are_refused(self) -> None:
        store = self.make_store()
        project = self.project
        clock = self.clock
        record = _new_record(project, clock)
        store.create(record)
        leases = MemorySessionLeaseStore()
        lease = leases.acquire(record.id, "me")
        store.append(record.id, [Message.user("first")], lease=lease)
        lease.release()
        newer = leases.acquire(record.id, "someone else")

        with _raises(StaleLeaseError):
            store.append(record.id, [Message.user("late")], lease=lease)
        with _raises(StaleLeaseError):
            store.write_side(
                record.id,
                totals=_TOTALS,
                budget_override=None,
                compaction_failure_count=0,
                approvals=(),
                lease=lease,
            )
        with _raises(StaleLeaseError):
            store.replace_transcript(record.id, [], lease=lease)
        with _raises(StaleLeaseError):
            store.delete(record.id, lease=lease)
        store.append(record.id, [Message.user("second")], lease=newer)

        assert [m.text for m in store.load(record.id).transcript] == ["first", "second"]
        assert store.load(record.id).totals == SessionTotals()

    def test_a_lease_on_another_session_is_refused(self) -> None:
        store = self.make_store()
        project = self.project
        clock = self.clock
        record, other = _new_record(project, clock), _new_record(project, clock)
        store.create(record)
        store.create(other)
        lease = MemorySessionLeaseStore().acquire(other.id, "me")

        with _raises(ValueError, match="used to write"):
            store.append(record.id, [Message.user("x")], lease=lease)

    def test_started_tool_calls_are_kept_until_answered(self) -> None:
        make_store = self.make_store
        project = self.project
        clock = self.clock
        from aimon_core.llm import TextBlock, ToolResultBlock, ToolUseBlock

        store = make_store()
        record = _new_record(project, clock)
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

    def test_mark_tool_started_checks_the_lease(self) -> None:
        make_store = self.make_store
        project = self.project
        clock = self.clock
        store = make_store()
        record = _new_record(project, clock)
        store.create(record)
        leases = MemorySessionLeaseStore()
        lease = leases.acquire(record.id, "me")
        lease.release()
        with _raises(StaleLeaseError):
            store.mark_tool_started(record.id, ["t1"], lease=lease)
