"""The contract of the routine stores: the tests every RoutineStore and RunLog backend passes.

Subclass it in a pytest module (its name starting with `Test`) and return stores from
`make_stores`; every call must return stores on the same data (new connections to the same
database), since the tests check what a second engine sees:

    class TestMyRoutineStore(RoutineStoreContract):
        def make_stores(self) -> tuple[RoutineStore, RunLog]:
            return MyRoutineStore(self.url), MyRunLog(self.url)

The checks are plain asserts; nothing here needs pytest.
"""

from __future__ import annotations

import threading
from dataclasses import replace

from aimon_core.scheduling import (
    Cron,
    Every,
    Once,
    Routine,
    RoutineError,
    RoutineLimits,
    RoutineRun,
    RoutineState,
    RoutineStore,
    RunLog,
    RunOutcome,
)


def _routine(name: str = "nightly", **changes: object) -> Routine:
    base = Routine(name=name, trigger=Cron(expression="0 3 * * *", zone="Europe/Berlin"),
                   prompt="review yesterday's commits", project="/tmp/project", agent="reviewer",
                   limits=RoutineLimits(max_runs=5, max_cost_usd=0.5, runs_per_day=2),
                   created=1000.0, next_run=2000.0)
    return replace(base, **changes)  # type: ignore[arg-type]


class RoutineStoreContract:
    """What every RoutineStore and RunLog do."""

    def make_stores(self) -> tuple[RoutineStore, RunLog]:
        """Return a routine store and a run log on this test's data."""
        raise NotImplementedError

    def test_a_routine_is_kept_whole(self) -> None:
        store, _ = self.make_stores()
        for routine in (_routine(), _routine("every", trigger=Every(seconds=1800.0),
                                             session="abc", skip_missed=True),
                        _routine("once", trigger=Once(at=12345.5), agent=None,
                                 state=RoutineState.DONE, note="ran")):
            store.put(routine)
            assert self.make_stores()[0].get(routine.name) == routine
        assert [r.name for r in self.make_stores()[0].all()] == ["every", "nightly", "once"]

    def test_a_name_is_taken_once_unless_replaced(self) -> None:
        store, _ = self.make_stores()
        store.put(_routine())
        try:
            self.make_stores()[0].put(_routine(prompt="other"))
        except RoutineError:
            pass
        else:
            raise AssertionError("a second routine of one name was stored")
        store.put(_routine(prompt="other"), replace_existing=True)
        found = store.get("nightly")
        assert found is not None and found.prompt == "other"

    def test_remove(self) -> None:
        store, _ = self.make_stores()
        store.put(_routine())
        assert self.make_stores()[0].remove("nightly")
        assert not store.remove("nightly")
        assert store.get("nightly") is None and store.all() == ()

    def test_change_writes_what_it_returns_and_nothing_for_none(self) -> None:
        store, _ = self.make_stores()
        store.put(_routine())
        changed = store.change("nightly", lambda r: replace(r, runs=r.runs + 1))
        assert changed is not None and changed.runs == 1
        assert store.change("nightly", lambda r: None) is None
        assert store.change("missing", lambda r: replace(r, runs=9)) is None
        found = self.make_stores()[0].get("nightly")
        assert found is not None and found.runs == 1

    def test_racing_engines_claim_an_occurrence_once(self) -> None:
        self.make_stores()[0].put(_routine())
        claimed: list[int] = []
        barrier = threading.Barrier(6)

        def claim(number: int) -> None:
            store, _ = self.make_stores()
            barrier.wait()
            done = store.change("nightly", lambda r: replace(r, next_run=3000.0, runs=r.runs + 1)
                                if r.next_run == 2000.0 else None)
            if done is not None:
                claimed.append(number)

        threads = [threading.Thread(target=claim, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(claimed) == 1
        found = self.make_stores()[0].get("nightly")
        assert found is not None and found.runs == 1 and found.next_run == 3000.0

    def test_runs_are_logged_newest_first_and_filtered(self) -> None:
        _, runs = self.make_stores()
        for number, name in enumerate(("a", "b", "a")):
            runs.begin(RoutineRun(id=f"r{number}", routine=name, started=100.0 + number,
                                  holder="h"))
        ended = RoutineRun(id="r0", routine="a", started=100.0, finished=105.0,
                           outcome=RunOutcome.OK, session_id="s1", cost_usd=0.25,
                           input_tokens=10, output_tokens=5, refusals=1, message="done",
                           holder="h")
        self.make_stores()[1].end(ended)
        log = self.make_stores()[1]
        assert [run.id for run in log.runs()] == ["r2", "r1", "r0"]
        assert [run.id for run in log.runs("a")] == ["r2", "r0"]
        assert [run.id for run in log.runs(since=101.0)] == ["r2", "r1"]
        assert [run.id for run in log.runs(limit=1)] == ["r2"]
        assert log.runs("a")[-1] == ended

    def test_runs_left_running_by_a_holder_are_interrupted(self) -> None:
        _, runs = self.make_stores()
        runs.begin(RoutineRun(id="mine", routine="a", started=1.0, holder="here"))
        runs.begin(RoutineRun(id="theirs", routine="a", started=2.0, holder="there"))
        runs.end(RoutineRun(id="ended", routine="a", started=3.0, finished=4.0,
                            outcome=RunOutcome.OK, holder="here"))
        assert self.make_stores()[1].interrupt_running("here", 10.0) == 1
        found = {run.id: run for run in runs.runs()}
        assert found["mine"].outcome is RunOutcome.INTERRUPTED
        assert found["mine"].finished == 10.0
        assert found["theirs"].outcome is RunOutcome.RUNNING
        assert found["ended"].outcome is RunOutcome.OK
