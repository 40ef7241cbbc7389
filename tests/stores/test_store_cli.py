"""`aimon --store URL`, AIMON_STORE_URL and `aimon store migrate` against a real PostgreSQL."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from aimon_core.llm import Message
from aimon_core.service import SQLiteInbox
from aimon_core.session import SessionRecord
from aimon_core.stores import open_backend
from aimon_core.testing import LoopbackModelServer, Reply

from ..e2e.conftest import AIMON, MODEL_ARGS, aimon_env


@pytest.fixture
def empty_postgres(postgres_url: str) -> Iterator[str]:
    backend = open_backend(postgres_url)
    with backend.store.records.database.connection() as db:  # type: ignore[attr-defined]
        db.execute("TRUNCATE aimon_sessions, aimon_inbox CASCADE")
    backend.close()
    yield postgres_url


def _aimon(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AIMON, *args], cwd=cwd, env=env, text=True, capture_output=True,
                          timeout=60, check=False, stdin=subprocess.DEVNULL)


def test_print_mode_keeps_its_session_in_the_chosen_store(
        tmp_path: Path, empty_postgres: str) -> None:
    with LoopbackModelServer([Reply(text="stored in postgres")], provider="openai") as server:
        env = aimon_env(server, AIMON_HOME=str(tmp_path / "home"))
        done = _aimon(env, tmp_path, "--store", empty_postgres, *MODEL_ARGS, "-p", "hello pg")
    assert done.returncode == 0, done.stderr
    assert "stored in postgres" in done.stdout
    backend = open_backend(empty_postgres)
    try:
        (summary,) = backend.store.records.list_sessions(None)
        record = backend.store.records.load(summary.id)
        assert [m.first_text for m in record.transcript] == ["hello pg", "stored in postgres"]
    finally:
        backend.close()
    # Nothing went to the file store; `sessions list` reads the chosen store.
    assert not (tmp_path / "home" / "data" / "projects").exists()
    env["AIMON_STORE_URL"] = empty_postgres
    listed = _aimon(env, tmp_path, "sessions", "list")
    assert summary.id in listed.stdout, listed.stdout + listed.stderr


def test_migrate_copies_every_session_and_checks_it(tmp_path: Path, empty_postgres: str) -> None:
    home = tmp_path / "home"
    files = open_backend(None, data_dir=home / "data")
    ids = []
    for n in range(3):
        record = SessionRecord.new(project_root=str(tmp_path), agent_ref="default")
        files.store.records.create(record)
        files.store.records.append(record.id, [Message.user(f"question {n}")])
        ids.append(record.id)
    # Text sent to a session and not run yet waits in the embedded service's inbox.
    (home / "data" / "service").mkdir(parents=True, mode=0o700)
    SQLiteInbox(home / "data" / "service" / "service.sqlite3").deliver(ids[1], "run me next")
    env = {"PATH": "/usr/bin:/bin", "AIMON_HOME": str(home)}
    done = _aimon(env, tmp_path, "store", "migrate", "--to", empty_postgres)
    assert done.returncode == 0, done.stderr
    assert "3 sessions copied (3 messages), checked" in done.stdout
    assert "1 inbox items not run yet moved" in done.stdout
    again = _aimon(env, tmp_path, "store", "migrate", "--to", empty_postgres)
    assert "0 sessions copied" in again.stdout and "3 already there" in again.stdout
    assert "0 inbox items" in again.stdout
    backend = open_backend(empty_postgres)
    try:
        assert sorted(s.id for s in backend.store.records.list_sessions(None)) == sorted(ids)
        assert backend.service is not None
        assert [i.text for i in backend.service.inbox.pending(ids[1])] == ["run me next"]
    finally:
        backend.close()
    same = _aimon(env, tmp_path, "store", "migrate", "--to", "file:")
    assert same.returncode == 2


def test_an_unreachable_store_is_told_plainly(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "AIMON_HOME": str(tmp_path / "home"),
           "AIMON_STORE_URL": f"postgresql://nobody@/none?host={tmp_path}&connect_timeout=2"}
    for args in (("store", "info"), ("sessions", "list"),
                 ("--provider", "openai", "--model", "m", "-p", "hi")):
        done = _aimon(env, tmp_path, *args)
        assert done.returncode == 1, (args, done)
        assert "cannot reach the store" in done.stderr
        assert "Traceback" not in done.stderr, done.stderr
