"""Two services sharing one PostgreSQL: a session moves to B when A dies; B's stop reaches A.

Each "host" is an `aimon serve` process with its own data folder (AIMON_HOME) and its own
model server, as on two machines; they share only the database (AIMON_STORE_URL). Waits are
on the model servers' arrivals, on the sessions' events and on process exits.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aimon_core.llm import Message
from aimon_core.session import SessionId, SessionLease, StaleLeaseError
from aimon_core.stores import open_backend
from aimon_core.testing import Reply, ScriptedToolCall, StallStream

from ..e2e.test_service_e2e import WAIT, Service, Watcher, arrived, fifo, wait_exit

# Long enough that B's `send` (B's service already up) lands while A's lease still stands,
# so it is routed to A, finds it gone, and B takes the session over once the lease expires.
LEASE_SECONDS = "3"


class Host(Service):
    """One machine's service, on the shared database."""

    def __init__(self, home: Path, project: Path, url: str) -> None:
        (home / "config").mkdir(parents=True)
        (home / "config" / "settings.json").write_text(json.dumps({"service": {
            "idleMinutes": 0}}))
        super().__init__(home, project)
        # A session moved to B runs with B's model settings (B was not given its flags).
        self.env.update(AIMON_STORE_URL=url, AIMON_STORE_LEASE_SECONDS=LEASE_SECONDS,
                        AIMON_PROVIDER="openai", AIMON_MODEL="gpt-5.4")


@pytest.fixture
def hosts(tmp_path: Path, postgres_url: str) -> Iterator[tuple[Host, Host]]:
    backend = open_backend(postgres_url)
    with backend.store.records.database.connection() as db:  # type: ignore[attr-defined]
        db.execute("TRUNCATE aimon_sessions, aimon_messages, aimon_snapshots, aimon_leases, "
                   "aimon_inbox, aimon_idempotency, aimon_listeners, aimon_signals")
    backend.close()
    project = tmp_path / "proj"
    project.mkdir()
    # A unix socket's path is at most 107 bytes: the homes are short folders of their own.
    homes = Path(tempfile.mkdtemp(prefix="aimon-2h-"))
    a = Host(homes / "a", project, postgres_url)
    b = Host(homes / "b", project, postgres_url)
    try:
        yield a, b
    finally:
        for host in (a, b):
            try:
                host.stop()
            except (AssertionError, OSError):
                host.server.stop()
        shutil.rmtree(homes, ignore_errors=True)


def _lease_token(url: str, session_id: str) -> int:
    backend = open_backend(url)
    try:
        with backend.store.records.database.connection() as db:  # type: ignore[attr-defined]
            row = db.execute("SELECT token FROM aimon_leases WHERE session_id = %s",
                             (session_id,)).fetchone()
        assert row is not None, "the session is not leased"
        return int(row[0])
    finally:
        backend.close()


def test_b_takes_over_when_a_dies_mid_call_and_a_stale_a_cannot_write(
        hosts: tuple[Host, Host], postgres_url: str) -> None:
    a, b = hosts
    release = fifo(a.project / "two-release")
    on_a = a.script("T-two", lambda request, n: Reply(
        text="Running it.", tool_calls=(ScriptedToolCall(name="Bash", id="call_two", input={
            "command": f"cat {release.name} && touch two-after", "description": "wait"}),)))
    on_b = b.script("T-two", lambda request, n: Reply(text="Carrying on, on B."))
    b.script("T-up", lambda request, n: Reply(text="B is up"))
    b.background("T-up: start B's service")
    session_id = a.background("T-two: run the long command", "--allowed-tools", "Bash")
    arrived(on_a)
    old_token = _lease_token(postgres_url, session_id)
    with release.open("w") as writer:  # the call runs on A
        pid = a.pid()
        os.kill(pid, signal.SIGKILL)
        wait_exit(pid)
        writer.write("done\n")

    sent = b.aimon("send", session_id, "T-two: go on")
    # Routed to A's service, which does not answer; or, on a slow machine, A's lease had
    # expired already and B claimed it at once.
    assert "takes the session over" in sent.stdout or "started a turn" in sent.stdout, sent
    request = arrived(on_b)
    conversation = request.conversation()
    assert conversation[0] == ("user", "T-two: run the long command")
    assert conversation[-1] == ("user", "T-two: go on")
    assert "may have run" in request.tool_results()["call_two"]
    assert _lease_token(postgres_url, session_id) > old_token

    # A comes back with its old token: the database refuses its writes.
    backend = open_backend(postgres_url)
    try:
        stale = SessionLease(session_id=SessionId(session_id), holder="A", token=old_token,
                             release=lambda: None, newest_token=lambda: None)
        with pytest.raises(StaleLeaseError):
            backend.store.records.append(SessionId(session_id), [Message.user("late")],
                                         lease=stale)
        texts = [m.text for m in backend.store.records.load(SessionId(session_id)).transcript]
        assert "late" not in texts and "T-two: go on" in texts
    finally:
        backend.close()


def test_stop_on_b_interrupts_a_turn_running_on_a(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    on_a = a.script("T-far", lambda request, n: StallStream(
        reply=Reply(text="never finished"), after_events=2, seconds=WAIT, released=True))
    b.script("T-near", lambda request, n: Reply(text="B is up"))
    session_id = a.background("T-far: a long answer")
    arrived(on_a)
    watcher = Watcher(a, session_id)
    try:
        b.background("T-near: start B's service")
        stopped = b.aimon("stop", session_id)
        assert "interrupted its turn" in stopped.stdout, stopped
        finished = watcher.wait_for("TurnFinished")
        assert finished.result.stop.value == "interrupted"
    finally:
        watcher.close()
        a.server.release()


def test_a_restarted_service_hosts_its_sessions_again_once_its_old_lease_expires(
        hosts: tuple[Host, Host]) -> None:
    a, _ = hosts
    on_a = a.script("T-back", lambda request, n: Reply(text="hello"))
    session_id = a.background("T-back: say hello")
    arrived(on_a)
    pid = a.pid()
    os.kill(pid, signal.SIGKILL)  # its lease lives on in the database for a while
    wait_exit(pid)
    a.script("T-again", lambda request, n: Reply(text="up again"))
    a.background("T-again: start the service again")
    deadline = time.monotonic() + WAIT
    while True:  # hosted again once the dead process's lease expires (3 s)
        listed = json.loads(a.aimon("ps", "--json").stdout)["sessions"]
        if any(item["session_id"] == session_id for item in listed):
            break
        assert time.monotonic() < deadline, "the session was not hosted again"
        # Each look is a whole `aimon ps` run; the lease expires on the database's clock.
