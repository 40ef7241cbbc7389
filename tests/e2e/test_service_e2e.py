"""The service end to end: real `aimon` processes (`serve`, `--bg`, `ps`, `send`, `stop`,
`attach`, `-p`) against one loopback model server, one service per module.

Each test has its own session and a token in its first prompt; the model server answers each
request from the script of the test whose token the conversation starts with, and tells the
test when a request arrives. Tests wait on those arrivals, on the session's events (a watcher
attached through the protocol), on FIFOs the model's commands write, and on process exits;
never on a fixed sleep.
"""

from __future__ import annotations

import json
import os
import queue
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pexpect
import pytest

from aimon_core.service import ServiceClient, ServicePaths, from_wire
from aimon_core.testing import (
    LoopbackModelServer,
    RecordedRequest,
    Reply,
    ScriptedToolCall,
    StallStream,
    Step,
)

from .conftest import AIMON, MODEL_ARGS, aimon_env

WAIT = 60.0
Script = Callable[[RecordedRequest, int], Step]


@dataclass
class _Test:
    script: Script
    arrivals: queue.Queue[RecordedRequest] = field(default_factory=queue.Queue)
    count: int = 0


class Service:
    """The module's service, its model server, and the scripts of the tests."""

    def __init__(self, home: Path, project: Path) -> None:
        self.home = home
        self.project = project
        self.tests: dict[str, _Test] = {}
        self.server = LoopbackModelServer(self._respond, provider="openai").start()
        self.env = aimon_env(self.server, AIMON_HOME=str(home),
                             CLAUDE_CONFIG_DIR=str(home / "claude"))
        self.paths = ServicePaths(folder=home / "data" / "service")

    def _respond(self, request: RecordedRequest) -> Step:
        first = next((text for role, text in request.conversation() if role == "user"), "")
        test = next((t for token, t in self.tests.items() if first.startswith(token)), None)
        if test is None:
            return Reply(text="no script for this prompt")
        test.count += 1
        step = test.script(request, test.count)
        test.arrivals.put(request)
        return step

    def script(self, token: str, script: Script) -> _Test:
        """Answer the conversations that start with `token` with `script`."""
        self.tests[token] = _Test(script=script)
        return self.tests[token]

    def aimon(self, *args: str, check: bool = True, stdin: str | None = None
              ) -> subprocess.CompletedProcess[str]:
        """Run `aimon ARGS` in the project, with the module's environment."""
        done = subprocess.run([AIMON, *args], cwd=self.project, env=self.env, text=True,
                              capture_output=True, timeout=WAIT, check=False,
                              input=stdin if stdin is not None else "")
        if check and done.returncode != 0:
            raise AssertionError(f"aimon {args} failed ({done.returncode}): {done.stderr}")
        return done

    def background(self, prompt: str, *flags: str) -> str:
        """Start a background session with `prompt`; return its id."""
        return self.aimon(*MODEL_ARGS, *flags, "--bg", prompt).stdout.strip()

    def client(self) -> ServiceClient:
        """Return a protocol connection to the service."""
        return ServiceClient.connect(self.paths, client_name="test")

    def summary(self, session_id: str) -> dict[str, Any]:
        """Return the session's line of `aimon ps --json`."""
        listed = json.loads(self.aimon("ps", "--json").stdout)["sessions"]
        return next(item for item in listed if item["session_id"] == session_id)

    def pid(self) -> int:
        """Return the running service's pid (from its lock file)."""
        return int(self.paths.lock.read_text().split()[0])

    def stop(self) -> None:
        """Stop the service (if one runs) and wait for its process to end."""
        if self.paths.socket.exists():
            pid = self.pid()
            if self.aimon("serve", "--stop", check=False).returncode == 0:
                wait_exit(pid)
        self.server.stop()


def wait_exit(pid: int, timeout: float = WAIT) -> None:
    """Wait until process `pid` (not a child of ours) has ended."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"process {pid} did not end in {timeout} s"
    finally:
        os.close(fd)


class Watcher:
    """A client attached to one session: its events, read by a thread, in a queue."""

    def __init__(self, service: Service, session_id: str) -> None:
        self._client = service.client()
        opened = self._client.call("session/attach", {"session_id": session_id,
                                                      "replay": False})
        # Attaching and reading the state happen in one step of the service's loop: an
        # event after this is in the queue, one before it is in this state.
        self.state_when_attached: str = opened["session"]["state"]
        self.events: queue.Queue[Any] = queue.Queue()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            while True:
                message = self._client.receive()
                params = getattr(message, "params", {})
                if getattr(message, "method", "") == "session/event":
                    self.events.put(from_wire(params["event"]))
        except (ConnectionError, OSError, ValueError):
            self.events.put(None)

    def wait_for(self, kind: str, timeout: float = WAIT) -> Any:
        """Return the next event of class `kind` (events before it are dropped)."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            event = self.events.get(timeout=left)
            assert event is not None, "the service closed the watcher's connection"
            if type(event).__name__ == kind:
                return event
        raise AssertionError(f"no {kind} event in {timeout} s")

    def close(self) -> None:
        self._client.close()


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    home = tmp_path_factory.mktemp("svc")
    project = tmp_path_factory.mktemp("proj")
    (project / "README").write_text("hello\n")
    (home / "config").mkdir()
    (home / "config" / "settings.json").write_text(json.dumps({"service": {"idleMinutes": 0}}))
    started = Service(home, project)
    try:
        yield started
    finally:
        started.stop()


def arrived(test: _Test) -> RecordedRequest:
    """Wait for the next request of `test`'s conversation to reach the model."""
    return test.arrivals.get(timeout=WAIT)


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


# ------------------------------------------------------------------------------ tests


def test_bg_runs_in_the_service_and_ps_shows_it_running_then_idle(service: Service) -> None:
    test = service.script("T-bg", lambda request, n: StallStream(
        reply=Reply(text="a slow answer"), after_events=2, seconds=WAIT, released=True))
    session_id = service.background("T-bg: take your time")
    assert session_id and "\n" not in session_id
    arrived(test)  # the turn runs: the model is answering, slowly
    watcher = Watcher(service, session_id)
    try:
        line = service.summary(session_id)
        assert (line["state"], line["project"], line["agent"]) == (
            "running", str(service.project), "default")
        assert line["title"].startswith("T-bg")
        service.server.release()
        finished = watcher.wait_for("TurnFinished")
        assert finished.result.text == "a slow answer"
    finally:
        watcher.close()
    line = service.summary(session_id)
    assert line["state"] == "idle"
    assert line["turns"] == 1 and line["input_tokens"] > 0 and line["cost_usd"] >= 0


def test_send_reaches_the_model_as_the_next_turn_once_per_key(service: Service) -> None:
    test = service.script("T-send", lambda request, n: Reply(text=f"answer {n}"))
    session_id = service.background("T-send: first")
    arrived(test)
    watcher = Watcher(service, session_id)
    try:
        if watcher.state_when_attached != "idle":
            watcher.wait_for("TurnFinished")
        sent = service.aimon("send", session_id[-6:], "T-send: the next one", "--key", "k1")
        assert "started a turn" in sent.stdout
        request = arrived(test)
        assert request.conversation()[-1] == ("user", "T-send: the next one")
        assert [text for role, text in request.conversation() if role == "assistant"] == [
            "answer 1"]
        assert watcher.wait_for("TurnFinished").result.text == "answer 2"
    finally:
        watcher.close()
    again = service.aimon("send", session_id, "T-send: the next one", "--key", "k1")
    assert "already delivered with this key" in again.stdout
    assert service.summary(session_id)["turns"] == 2


def test_stop_interrupts_the_running_turn(service: Service) -> None:
    test = service.script("T-stop", lambda request, n: StallStream(
        reply=Reply(text="never finished"), after_events=2, seconds=WAIT, released=True))
    session_id = service.background("T-stop: a long answer")
    arrived(test)
    watcher = Watcher(service, session_id)
    try:
        stopped = service.aimon("stop", session_id)
        assert "interrupted its turn" in stopped.stdout
        finished = watcher.wait_for("TurnFinished")
        assert finished.result.stop.value == "interrupted"
    finally:
        watcher.close()
        service.server.release()  # let the stalled response's thread go
    assert service.summary(session_id)["state"] == "failed"


def test_attach_replays_and_answers_a_waiting_approval(service: Service) -> None:
    marker = service.project / "attached.txt"
    test = service.script("T-attach", lambda request, n: Reply(
        text="Writing it.", tool_calls=(ScriptedToolCall(name="Bash", input={
            "command": f"echo hi > {marker.name}", "description": "write"}),))
        if n == 1 else Reply(text="It is written."))
    session_id = service.background("T-attach: write the marker")
    arrived(test)
    watcher = Watcher(service, session_id)
    try:
        if watcher.state_when_attached != "waiting":
            asked = watcher.wait_for("ApprovalRequested")
        else:
            asked = None
        line = service.summary(session_id)
        assert line["state"] == "waiting" and line["pending_approvals"] == 1
        child = pexpect.spawn(AIMON, ["attach", session_id[-6:]], cwd=str(service.project),
                              env=service.env, encoding="utf-8", timeout=WAIT,
                              dimensions=(40, 160))
        try:
            child.expect("T-attach: write the marker")  # the history, replayed
            child.expect("needs your approval")
            child.expect("yes once")
            child.send("y\r")
            resolved = watcher.wait_for("ApprovalResolved")
            assert resolved.answer.allowed
            if asked is not None:  # a second answer comes too late: the first one won
                late = watcher_answer(service, session_id, asked.request.id)
                assert late == {"accepted": False}
            child.expect("It is written")
            child.sendcontrol("d")
            child.expect("Detached")
            child.expect(pexpect.EOF)
        finally:
            child.close()
        assert child.exitstatus == 0
    finally:
        watcher.close()
    assert marker.read_text() == "hi\n"
    assert service.summary(session_id)["state"] == "idle"  # it runs on, detached


def watcher_answer(service: Service, session_id: str, request_id: str) -> dict[str, Any]:
    with service.client() as client:
        return dict(client.call("session/answer", {
            "session_id": session_id, "request_id": request_id,
            "answer": {"$type": "ApprovalAnswer", "allowed": False}}))


def test_unattended_bg_refuses_what_would_ask(service: Service) -> None:
    marker = service.project / "unattended.txt"
    test = service.script("T-unattended", lambda request, n: Reply(
        tool_calls=(ScriptedToolCall(name="Bash", id="call_u", input={
            "command": f"echo hi > {marker}", "description": "write"}),))
        if n == 1 else Reply(text="could not"))
    session_id = service.aimon(*MODEL_ARGS, "-p", "--bg", "T-unattended: write").stdout.strip()
    arrived(test)
    result = arrived(test).tool_outcomes()["call_u"]
    assert result[0] and "cannot ask" in result[1]
    assert not marker.exists()
    watcher = Watcher(service, session_id)
    try:
        if watcher.state_when_attached != "finished":
            watcher.wait_for("TurnFinished")
    finally:
        watcher.close()
    assert service.summary(session_id)["state"] == "finished"


def test_a_background_command_that_finishes_while_idle_wakes_the_session(
        service: Service) -> None:
    release = fifo(service.project / "rewake-release")
    test = service.script("T-rewake", lambda request, n: (
        Reply(tool_calls=(ScriptedToolCall(name="Bash", input={
            "command": f"cat {release}; echo background-done", "run_in_background": True,
            "description": "wait"}),)) if n == 1 else Reply(text=f"turn {n}")))
    session_id = service.background("T-rewake: start it", "--allowed-tools", "Bash")
    arrived(test)
    arrived(test)  # the call's result: the job runs in the background; the turn ends
    watcher = Watcher(service, session_id)
    try:
        if watcher.state_when_attached != "idle":
            watcher.wait_for("TurnFinished")
        with release.open("w") as writer:  # the job's `cat` ends: the job finishes
            writer.write("go\n")
        woken = arrived(test)
        role, text = woken.conversation()[-1]
        assert role == "user" and text.startswith("[rewake]")
        assert "background-done" in text and "completed" in text
        watcher.wait_for("TurnFinished")
    finally:
        watcher.close()
    with service.client() as client:
        listed = client.call("session/rewakes", {"session_id": session_id})
    assert [r["state"] for r in listed["rewakes"]] == ["delivered"]
    assert "delivered" in listed["text"]


def test_killing_the_service_mid_call_loses_nothing(service: Service) -> None:
    release = fifo(service.project / "kill-release")
    # A call that may change something (`touch`) is recorded, durably and after every line
    # before it, as started before it runs: the case where "may have run" matters.
    test = service.script("T-kill", lambda request, n: Reply(
        text="Running it.", tool_calls=(ScriptedToolCall(name="Bash", id="call_k", input={
            "command": f"cat {release.name} && touch kill-after", "description": "wait"}),))
        if n == 1 else Reply(text="Carrying on."))
    session_id = service.background("T-kill: run the long command", "--allowed-tools", "Bash")
    arrived(test)
    # Opening the FIFO returns once the command has opened it: the call runs (and was
    # recorded as started before it ran).
    with release.open("w") as writer:
        pid = service.pid()
        os.kill(pid, signal.SIGKILL)
        wait_exit(pid)
        writer.write("done\n")  # the orphaned command ends
    sent = service.aimon("send", session_id, "T-kill: go on")  # starts the service again
    assert "started a turn" in sent.stdout
    request = arrived(test)
    assert service.pid() != pid
    conversation = request.conversation()
    assert conversation[0] == ("user", "T-kill: run the long command")
    assert conversation[-1] == ("user", "T-kill: go on")
    assert "may have run" in request.tool_results()["call_k"]


def test_warm_print_mode_runs_in_the_service_without_the_sdk(service: Service) -> None:
    service.script("T-warm", lambda request, n: Reply(text="warm answer"))
    if not service.paths.socket.exists():
        service.background("T-warm: start the service")
    done = subprocess.run(
        [str(Path(AIMON).with_name("python")), "-X", "importtime", "-m", "aimon_cli.app",
         *MODEL_ARGS, "-p", "T-warm: hello", "--output-format", "json"],
        cwd=service.project, env={**service.env, "AIMON_FULL_EXIT": "1"}, text=True,
        capture_output=True, timeout=WAIT, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert (result["type"], result["result"]) == ("result", "warm answer")
    imported = {line.split("|")[-1].strip().split(".")[0]
                for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "aimon_core" in imported
    assert not imported & {"openai", "anthropic", "httpx2", "pydantic", "rich", "typer"}
    warm = service.aimon(*MODEL_ARGS, "-p", "T-warm: hello")
    cold = subprocess.run([AIMON, *MODEL_ARGS, "-p", "T-warm: hello"], cwd=service.project,
                          env={**service.env, "AIMON_NO_SERVICE": "1"}, text=True,
                          capture_output=True, timeout=WAIT, check=False)
    assert warm.stdout == cold.stdout == "warm answer\n"
    assert (warm.returncode, cold.returncode) == (0, 0)


def test_the_folder_and_the_socket_are_the_users_alone(service: Service) -> None:
    if not service.paths.socket.exists():
        service.script("T-perm", lambda request, n: Reply(text="ok"))
        service.background("T-perm: start the service")
    assert service.paths.folder.stat().st_mode & 0o777 == 0o700
    assert service.paths.socket.stat().st_mode & 0o777 == 0o600


def test_bg_in_the_repl_moves_the_session_to_the_service(service: Service) -> None:
    test = service.script("T-repl", lambda request, n: Reply(text=f"reply {n}"))
    child = pexpect.spawn(AIMON, [*MODEL_ARGS], cwd=str(service.project), env=service.env,
                          encoding="utf-8", timeout=WAIT, dimensions=(40, 160))
    try:
        child.send("T-repl: here first\r")
        child.expect("reply 1")
        child.send("/bg T-repl: then there\r")
        child.expect("runs in the background service now")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    arrived(test)
    request = arrived(test)  # the next turn runs in the service
    assert request.conversation()[-3:] == [
        ("user", "T-repl: here first"), ("assistant", "reply 1"), ("user", "T-repl: then there")]
    with service.client() as client:
        hosted = client.call("sessions/list", {})["sessions"]
    assert any(item["title"].startswith("T-repl") for item in hosted)
