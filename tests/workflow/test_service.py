"""A workflow in the service: a background session runs `/workflow`, and what it tells (each
task's change, the run's end) reaches an attached client through the wire.

This is how a routine starts a workflow: a session of the service, given `/workflow NAME`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from aimon_core.agent import RunState, TaskState
from aimon_core.testing import RecordedRequest, Reply, Step
from tests.e2e.conftest import MODEL_ARGS
from tests.e2e.test_service_e2e import WAIT, Service, Watcher
from tests.workflow.conftest import make_project


@pytest.fixture
def service(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    home = tmp_path_factory.mktemp("svc")  # a short path: the socket's must fit 107 bytes
    (home / "config").mkdir(parents=True)
    (home / "config" / "settings.json").write_text(json.dumps({"service": {"idleMinutes": 0}}))
    started = Service(home, make_project(tmp_path / "p"))
    try:
        yield started
    finally:
        started.stop()


def test_a_background_session_runs_a_workflow_and_its_events_cross_the_wire(
        service: Service) -> None:
    watching = threading.Event()

    def explore(answer: str):  # type: ignore[no-untyped-def]
        def step(request: RecordedRequest, n: int) -> Step:
            watching.wait(WAIT)  # answered once a client watches the session
            return Reply(text=answer)
        return step

    service.script("List the functions", explore("add(a, b)"))
    service.script("List the tests", explore("one assert"))
    service.script("Summarise", lambda request, n: Reply(text="REPORT"))
    session_id = service.aimon(*MODEL_ARGS, "-p", "--bg", "/workflow survey").stdout.strip()
    watcher = Watcher(service, session_id)
    try:
        watching.set()
        changes = []
        while True:
            event = watcher.events.get(timeout=WAIT)
            assert event is not None, "the service closed the watcher's connection"
            if type(event).__name__ == "WorkflowTaskChanged":
                changes.append((event.label, event.state))
            if type(event).__name__ == "WorkflowRunChanged" and event.state is not \
                    RunState.RUNNING:
                break
        assert event.state is RunState.COMPLETED, event.reason
        assert ("report/0", TaskState.COMPLETED) in changes
        assert {label for label, state in changes if state is TaskState.COMPLETED} == {
            "explore/0", "explore/1", "report/0"}
        finished = watcher.wait_for("CommandRan")
        assert finished.outcome.text.endswith("\n\nREPORT")
    finally:
        watcher.close()
    (run,) = json.loads(service.aimon("workflow", "runs", "--json").stdout)
    assert (run["workflow"], run["state"], run["completed"]) == ("survey", "completed", 3)
