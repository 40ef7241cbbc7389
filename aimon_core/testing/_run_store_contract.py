"""The RunStore contract: the tests every workflow run store passes, for any backend.

A backend (files, memory, PostgreSQL...) proves that it keeps runs as the runner and resume
need by running this suite. Subclass `RunStoreContract` in a pytest module (the class name
must start with `Test` there) and return a store from `make_store`; every call must return a
store on the same data (a second store reads what the first wrote):

    class TestMyRunStore(RunStoreContract):
        def setup_method(self) -> None:
            self.folder = tempfile.mkdtemp()

        def make_store(self) -> RunStore:
            return MyRunStore(self.folder)

The checks are plain asserts; nothing here needs pytest.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from aimon_core.agent import RunState, TaskState
from aimon_core.llm import Message, Usage
from aimon_core.testing._store_contract import every_block_conversation
from aimon_core.workflow import (
    RunEnded,
    RunExistsError,
    RunId,
    RunLockedError,
    RunNotFoundError,
    RunRecord,
    RunStore,
    StageChecked,
    StageRecord,
    TaskChanged,
    TaskMessage,
    TaskRecord,
    new_run_id,
    parse_pipeline,
    pipeline_to_mapping,
)

_DEFINITION = """\
name: contract
inputs: {file: {default: calc.py}}
budget: {tokens: 50k, cost: 1.5, time: 10m}
stages:
  - name: look
    concurrency: 2
    tasks:
      - {agent: explore, prompt: "Look at {{inputs.file}}"}
      - {agent: explore, prompt: "Look again", limits: {iterations: 5, cost: 0.25}}
  - name: fix
    retry: 1
    until: {command: "pytest -q", max_rounds: 4}
    tasks:
      - {agent: general-purpose, prompt: "Fix {{stages.look.output}}", worktree: true}
  - name: merge
    merge: [fix]
"""
_START = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def _record(project: str = "/work/p", at: datetime = _START) -> RunRecord:
    return RunRecord(id=new_run_id(at), pipeline=parse_pipeline(_DEFINITION, source="c.yaml"),
                     inputs={"file": "calc.py"}, project_root=project, created_at=at,
                     updated_at=at, base_commit="0" * 40)


def _task(stage: int, index: int, **changes: object) -> TaskRecord:
    base = TaskRecord(stage=stage, index=index, label=f"s{stage}/{index}", agent="explore",
                      state=TaskState.RUNNING, execution_id="exec-1", started_at=_START)
    return replace(base, **changes)  # type: ignore[arg-type]


class RunStoreContract:
    """The tests every RunStore passes. Subclass it and implement `make_store`."""

    def make_store(self) -> RunStore:
        """Return a store on the data this test uses (a new object each call)."""
        raise NotImplementedError

    def test_a_created_run_reads_back_whole(self) -> None:
        record = _record()
        self.make_store().create(record)
        loaded = self.make_store().load(record.id)
        assert loaded.id == record.id and loaded.project_root == "/work/p"
        assert pipeline_to_mapping(loaded.pipeline) == pipeline_to_mapping(record.pipeline)
        assert loaded.inputs == {"file": "calc.py"} and loaded.base_commit == "0" * 40
        assert loaded.created_at == _START and loaded.state is RunState.RUNNING
        assert loaded.tasks == () and loaded.load_warnings == ()

    def test_an_id_is_created_once(self) -> None:
        record = _record()
        store = self.make_store()
        store.create(record)
        try:
            self.make_store().create(record)
        except RunExistsError as exc:
            assert exc.run_id == record.id
        else:
            raise AssertionError("a second create of the same id must fail")

    def test_changes_fold_in_as_appended(self) -> None:
        record = _record()
        store = self.make_store()
        store.create(record)
        messages = every_block_conversation()
        store.append(record.id, TaskChanged(task=_task(0, 0)))
        for message in messages:
            store.append(record.id, TaskMessage(stage=0, index=0, round=1, message=message))
        done = _task(0, 0, state=TaskState.COMPLETED, output="found it", cost_usd=0.0125,
                     usage=Usage(input_tokens=100, output_tokens=20, cache_read_tokens=3,
                                 cache_write_tokens=4), duration_s=2.5,
                     finished_at=_START + timedelta(seconds=3), worktree="/w/fix-0",
                     branch="aimon/x/fix-0", diff="+a\n-b\n")
        store.append(record.id, TaskChanged(task=done))
        store.append(record.id, StageChecked(stage=StageRecord(
            stage=1, rounds=2, passed=False, check_output="1 failed", failing=(0,))))
        store.append(record.id, RunEnded(state=RunState.STOPPED, reason="budget",
                                          at=_START + timedelta(minutes=1)))
        loaded = self.make_store().load(record.id)
        task = loaded.task(0, 0)
        assert task is not None
        assert replace(task, transcript=()) == done
        assert task.transcript == messages
        assert loaded.stage(1) == StageRecord(stage=1, rounds=2, passed=False,
                                              check_output="1 failed", failing=(0,))
        assert loaded.state is RunState.STOPPED and loaded.reason == "budget"
        assert loaded.updated_at == _START + timedelta(minutes=1)
        assert loaded.cost_usd == 0.0125 and loaded.usage.total_tokens == 127

    def test_a_new_attempt_drops_its_rounds_messages_and_keeps_earlier_rounds(self) -> None:
        record = _record()
        store = self.make_store()
        store.create(record)
        first, second, again = (Message.user("round one"), Message.user("round two"),
                                Message.user("round two again"))
        store.append(record.id, TaskChanged(task=_task(1, 0)))
        store.append(record.id, TaskMessage(stage=1, index=0, round=1, message=first))
        store.append(record.id, TaskChanged(task=_task(1, 0, round=2)))
        store.append(record.id, TaskMessage(stage=1, index=0, round=2, message=second))
        store.append(record.id, TaskChanged(task=_task(1, 0, round=2, attempt=2)))
        store.append(record.id, TaskMessage(stage=1, index=0, round=2, message=again))
        task = self.make_store().load(record.id).task(1, 0)
        assert task is not None and task.transcript == (first, again)

    def test_unknown_runs_are_not_found(self) -> None:
        store = self.make_store()
        missing = new_run_id(_START)
        for attempt in (lambda: store.load(missing),
                        lambda: store.append(missing, RunEnded(state=RunState.FAILED)),
                        lambda: store.load(RunId("not-a-run-id"))):
            try:
                attempt()
            except RunNotFoundError:
                continue
            raise AssertionError("an unknown run must raise RunNotFoundError")

    def test_runs_list_newest_first_by_project(self) -> None:
        store = self.make_store()
        old, new = _record(at=_START), _record(at=_START + timedelta(hours=1))
        other = _record("/work/q", at=_START + timedelta(hours=2))
        for record in (old, new, other):
            store.create(record)
        store.append(old.id, TaskChanged(task=_task(0, 0, state=TaskState.COMPLETED,
                                                    cost_usd=0.5)))
        reader = self.make_store()
        listed = reader.list_runs("/work/p", 10)
        assert [s.id for s in listed] == [new.id, old.id]
        assert listed[1].completed == 1 and listed[1].tasks == 3 and listed[1].cost_usd == 0.5
        assert listed[1].workflow == "contract"
        assert [s.id for s in reader.list_runs(None, 2)] == [other.id, new.id]

    def test_one_holder_at_a_time(self) -> None:
        record = _record()
        store = self.make_store()
        store.create(record)
        lease = store.acquire(record.id, "pid 1 on a")
        try:
            self.make_store().acquire(record.id, "pid 2 on b")
        except RunLockedError as exc:
            assert "pid 1 on a" in exc.holder
        else:
            raise AssertionError("a second holder must be refused")
        lease.release()
        lease.release()  # twice does nothing
        with self.make_store().acquire(record.id, "pid 3 on c") as again:
            assert not again.released
        assert again.released
