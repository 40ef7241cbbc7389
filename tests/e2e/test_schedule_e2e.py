"""Routines end to end: the real `aimon schedule` and `aimon serve` against a loopback model.

The model answers each routine's prompt with a token-bearing reply and tells the test when a
request arrives; the test waits on those arrivals, on the service's process exit, and on
the run records the service keeps (polled through the protocol until a deadline).
"""

from __future__ import annotations

import json
import os
import queue
import select
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aimon_core.agent import ApprovalAnswer
from aimon_core.service import ServiceClient, ServicePaths, from_wire, to_wire
from aimon_core.testing import (
    LoopbackModelServer,
    RecordedRequest,
    Reply,
    ScriptedToolCall,
    StallStream,
    Step,
)

from .conftest import AIMON, aimon_env

WAIT = 60.0


class Env:
    """One service's home, its project, the model server, and the requests it saw."""

    def __init__(self, home: Path, project: Path) -> None:
        self.home, self.project = home, project
        self.arrivals: queue.Queue[str] = queue.Queue()
        self.server = LoopbackModelServer(self._respond, provider="openai").start()
        # Routines run with the service's settings: the model is chosen by the environment.
        self.env = aimon_env(self.server, AIMON_HOME=str(home), AIMON_PROVIDER="openai",
                             AIMON_MODEL="gpt-5.4", CLAUDE_CONFIG_DIR=str(home / "claude"))
        self.paths = ServicePaths(folder=home / "data" / "service")

    def _respond(self, request: RecordedRequest) -> Step:
        conversation = request.conversation()
        first = next((text for role, text in conversation if role == "user"), "")
        self.arrivals.put(first)
        if first.startswith("R-stall"):
            return StallStream(reply=Reply(text="slow"), after_events=2, seconds=WAIT,
                               released=True)
        if first.startswith("T-tool") and len(conversation) == 1:
            return Reply(tool_calls=(ScriptedToolCall(name="schedule_task", input={
                "name": "morning", "cron": "0 9 * * *", "timezone": "Europe/Berlin",
                "prompt": "R-morning: review yesterday's commits"}),))
        return Reply(text=f"answered: {first}")

    def aimon(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([AIMON, *args], cwd=self.project, env=self.env, text=True,
                              capture_output=True, timeout=WAIT, check=False, input="")
        if check and done.returncode != 0:
            raise AssertionError(f"aimon {args} failed ({done.returncode}): {done.stderr}")
        return done

    def call(self, method: str, params: dict[str, Any]) -> Any:
        with ServiceClient.connect(self.paths, client_name="test") as client:
            return client.call(method, params)

    def runs_until(self, name: str, count: int) -> list[dict[str, Any]]:
        """Return the routine's runs (not the skipped occurrences) once `count` have ended."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            runs = [run for run in self.call("schedule/runs", {"name": name})["runs"]
                    if run["outcome"] != "skipped"]
            if sum(run["outcome"] != "running" for run in runs) >= count:
                return runs
            time.sleep(0.05)  # a poll's interval, bounded by the deadline
        raise AssertionError(f"{name} did not end {count} run(s) in {WAIT} s")

    def stop_service(self) -> None:
        if not self.paths.socket.exists():
            return
        pid = int(self.paths.lock.read_text().split()[0])
        if self.aimon("serve", "--stop", check=False).returncode == 0:
            fd = os.pidfd_open(pid)
            try:
                assert select.select([fd], [], [], WAIT)[0], "the service did not stop"
            finally:
                os.close(fd)


@pytest.fixture
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    # A short folder: the service's socket path must fit a unix socket's 107 bytes.
    folder = tmp_path_factory.mktemp("sch")
    home, project = folder / "home", folder / "project"
    (home / "config").mkdir(parents=True)
    project.mkdir()
    (home / "config" / "settings.json").write_text(json.dumps({"service": {"idleMinutes": 0}}))
    started = Env(home, project)
    try:
        yield started
    finally:
        started.stop_service()
        started.server.stop()


def test_every_2s_with_max_runs_2_runs_exactly_twice_with_transcripts(env: Env) -> None:
    added = env.aimon("schedule", "add", "twice", "--every", "2s", "--max-runs", "2",
                      "R-twice: check the build")
    assert added.stdout.startswith("twice: every 2s, next run ")
    assert env.arrivals.get(timeout=WAIT) == "R-twice: check the build"
    assert env.arrivals.get(timeout=WAIT) == "R-twice: check the build"
    runs = env.runs_until("twice", 2)
    # A first run slower than 2 s (the runtime is built) makes the next occurrence skipped,
    # never overlapping: still two runs.
    assert [run["outcome"] for run in runs] == ["ok", "ok"]
    skipped = [run for run in env.call("schedule/runs", {"name": "twice"})["runs"]
               if run["outcome"] == "skipped"]
    assert all("still running" in run["message"] for run in skipped)
    assert len({run["session_id"] for run in runs}) == 2
    assert all(run["message"] == "answered: R-twice: check the build" for run in runs)
    listed = json.loads(env.aimon("schedule", "list", "--json").stdout)["routines"]
    [twice] = listed
    assert twice["state"] == "done" and twice["runs"] == 2 and twice["totals"]["runs"] == 2
    assert env.arrivals.empty()  # no third run
    text = env.aimon("schedule", "runs", "twice").stdout
    assert text.count(" ok ") == 2 and runs[0]["session_id"] in text
    transcript = env.aimon("schedule", "runs", "twice", "--transcript").stdout
    assert "user> R-twice: check the build" in transcript
    assert "assistant> answered: R-twice: check the build" in transcript
    ps = env.aimon("ps").stdout
    assert "Routine runs" in ps and "twice: " in ps


def test_a_restart_of_the_service_keeps_the_routine(env: Env) -> None:
    env.aimon("schedule", "add", "hourly", "--every", "1h", "R-hourly: look")
    before = env.call("schedule/list", {})["routines"]
    env.stop_service()
    assert not env.paths.socket.exists()
    after = json.loads(env.aimon("schedule", "list", "--json").stdout)["routines"]
    assert [(r["name"], r["next_run"], r["state"]) for r in after] == [
        (r["name"], r["next_run"], r["state"]) for r in before]
    assert env.aimon("schedule", "rm", "hourly").stdout == "hourly: removed\n"
    missing = env.aimon("schedule", "rm", "hourly", check=False)
    assert missing.returncode == 1 and "no such routine" in missing.stderr


def test_run_now_pause_all_and_bad_input(env: Env) -> None:
    env.aimon("schedule", "add", "manual", "--every", "1d", "R-manual: now")
    done = env.aimon("schedule", "run", "manual")
    assert " ok " in done.stdout and env.arrivals.get(timeout=WAIT) == "R-manual: now"
    paused = env.aimon("schedule", "pause", "--all").stdout
    assert paused.startswith("1 routine(s) paused")
    [manual] = env.call("schedule/list", {})["routines"]
    assert manual["state"] == "paused" and "kill switch" in manual["note"]
    assert env.aimon("schedule", "resume", "manual").stdout == "manual: resumed\n"
    bad = env.aimon("schedule", "add", "x", "--every", "1h", "--cron", "* * * * *", "p",
                    check=False)
    assert bad.returncode == 2 and "give one of" in bad.stderr
    bad = env.aimon("schedule", "add", "x", "--cron", "61 * * * *", "p", check=False)
    assert bad.returncode == 2 and "five fields" in bad.stderr


def test_schedule_task_called_by_the_model_asks_first(env: Env) -> None:
    assert env.aimon("schedule", "list").stdout.startswith("No routines")  # starts the service
    with ServiceClient.connect(env.paths, client_name="test") as client:
        opened = client.call("session/new", {"cwd": str(env.project)})
        session_id = opened["session_id"]
        client.call("session/attach", {"session_id": session_id, "replay": False})
        client.call("session/send", {"session_id": session_id, "text": "T-tool: every morning"})
        deadline = time.monotonic() + WAIT
        request = None
        while request is None and time.monotonic() < deadline:
            message = client.receive()
            params = getattr(message, "params", {})
            if getattr(message, "method", "") == "session/event":
                event = from_wire(params["event"])
                if type(event).__name__ == "ApprovalRequested":
                    request = event.request
        assert request is not None, "no question was asked"
        assert request.tool_name == "schedule_task"
        assert request.label == ("schedule_task(morning, cron 0 9 * * *: R-morning: review "
                                 "yesterday's commits)")
        assert env.call("schedule/list", {})["routines"] == []  # nothing before the answer
        assert client.call("session/answer", {
            "session_id": session_id, "request_id": request.id,
            "answer": to_wire(ApprovalAnswer(allowed=True))})["accepted"]
    runs_deadline = time.monotonic() + WAIT
    while not (routines := env.call("schedule/list", {})["routines"]):
        assert time.monotonic() < runs_deadline, "the routine was not added"
        time.sleep(0.05)  # a poll's interval, bounded by the deadline
    [morning] = routines
    assert morning["trigger"] == {"cron": "0 9 * * *", "zone": "Europe/Berlin"}
    assert morning["project"] == str(env.project.resolve())


def test_routine_files_are_scheduled_once_trusted(env: Env) -> None:
    folder = env.project / ".aimon" / "routines"
    folder.mkdir(parents=True)
    (folder / "daily.md").write_text("---\nevery: 1d\nmax-cost: 0.2\n---\nR-daily: look\n")
    refused = env.aimon("schedule", "load", check=False)  # no terminal to ask in
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert env.call("schedule/list", {})["routines"] == []
    loaded = env.aimon("schedule", "load", "--yes").stdout
    assert "daily (.aimon/routines/daily.md, new or changed): every 1d: R-daily: look" in loaded
    assert loaded.endswith("1 scheduled, 0 unchanged, 0 removed (their files are gone)\n")
    [daily] = env.call("schedule/list", {})["routines"]
    assert daily["origin"] == str(folder / "daily.md") and daily["limits"]["max_cost_usd"] == 0.2
    again = env.aimon("schedule", "load").stdout  # nothing new: nothing asked
    assert again.endswith("0 scheduled, 1 unchanged, 0 removed (their files are gone)\n")
    (folder / "daily.md").unlink()
    gone = env.aimon("schedule", "load").stdout
    assert gone.endswith("0 scheduled, 0 unchanged, 1 removed (their files are gone)\n")
    assert env.call("schedule/list", {})["routines"] == []


def test_a_service_killed_mid_run_leaves_the_run_interrupted(env: Env) -> None:
    env.aimon("schedule", "add", "stall", "--every", "1d", "R-stall: think long")
    started = env.aimon("schedule", "run", "stall", "--detach").stdout
    assert started.startswith("stall: started exec-")
    assert env.arrivals.get(timeout=WAIT) == "R-stall: think long"  # the run is mid-answer
    [running] = env.call("schedule/runs", {"name": "stall"})["runs"]
    assert running["outcome"] == "running" and running["session_id"]
    pid = int(env.paths.lock.read_text().split()[0])
    fd = os.pidfd_open(pid)
    try:
        os.kill(pid, signal.SIGKILL)
        assert select.select([fd], [], [], WAIT)[0], "the service did not die"
    finally:
        os.close(fd)
    env.server.release()
    [after] = json.loads(env.aimon("schedule", "runs", "stall", "--json").stdout)["runs"]
    assert after["id"] == running["id"] and after["outcome"] == "interrupted"
    assert after["session_id"] == running["session_id"]
    assert after["message"] == "the service stopped while it ran"
