"""The routine stores on a real PostgreSQL server (the test session's, tests/conftest.py):
the store contract, and two engines on one database running each occurrence once.

Skipped where PostgreSQL's server programs or psycopg are missing.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from aimon_core.scheduling import RoutineStore, RunLog, RunOutcome
from aimon_core.testing import RoutineStoreContract

psycopg = pytest.importorskip("psycopg")


@pytest.fixture
def clean(postgres_url: str) -> str:
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("DROP TABLE IF EXISTS aimon_routines, aimon_routine_runs")
    return postgres_url


class TestPostgresRoutineStore(RoutineStoreContract):
    @pytest.fixture(autouse=True)
    def _database(self, clean: str) -> None:
        self.dsn = clean

    def make_stores(self) -> tuple[RoutineStore, RunLog]:
        from aimon_core.scheduling._postgres import PostgresRoutineStore, PostgresRunLog

        return PostgresRoutineStore(self.dsn), PostgresRunLog(self.dsn)


def test_two_engines_on_one_postgres_run_each_of_20_occurrences_once(clean: str) -> None:
    from aimon_core.scheduling._postgres import PostgresRoutineStore, PostgresRunLog

    from .test_engine import twenty_occurrences_on_two_engines

    asyncio.run(twenty_occurrences_on_two_engines(
        lambda: (PostgresRoutineStore(clean), PostgresRunLog(clean))))


def test_two_services_on_one_postgres_share_a_routine_and_run_it_max_runs_times(
        clean: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Two real `aimon serve` processes (two homes), one database: `--every 1s --max-runs 3`
    added through one runs exactly three times in all."""
    import json
    import queue
    import sys
    import time

    from aimon_core.scheduling._postgres import PostgresRunLog
    from aimon_core.testing import LoopbackModelServer, RecordedRequest, Reply, Step

    aimon = str(Path(sys.executable).with_name("aimon"))
    arrivals: queue.Queue[str] = queue.Queue()

    def respond(request: RecordedRequest) -> Step:
        arrivals.put(request.conversation()[0][1])
        return Reply(text="shared answer")

    project = tmp_path_factory.mktemp("proj")
    with LoopbackModelServer(respond, provider="openai") as server:
        envs = []
        for number in range(2):
            home = tmp_path_factory.mktemp(f"h{number}")
            (home / "config").mkdir()
            (home / "config" / "settings.json").write_text(json.dumps(
                {"service": {"idleMinutes": 0, "routines": {"store": clean}}}))
            env = {key: value for key, value in os.environ.items()
                   if not key.startswith(("ANTHROPIC_", "OPENAI_", "AIMON_"))}
            env.update(AIMON_HOME=str(home), OPENAI_API_KEY="k", AIMON_NO_LOCAL_PROBE="1",
                       OPENAI_BASE_URL=server.base_url, AIMON_PROVIDER="openai",
                       AIMON_MODEL="gpt-5.4", CLAUDE_CONFIG_DIR=str(home / "claude"))
            envs.append(env)

        def run(env: dict[str, str], *args: str) -> str:
            done = subprocess.run([aimon, *args], cwd=project, env=env, text=True,
                                  capture_output=True, timeout=60, check=False)
            assert done.returncode == 0, done.stderr
            return done.stdout

        try:
            run(envs[1], "schedule", "list")  # the second service runs, empty-handed
            run(envs[0], "schedule", "add", "shared", "--every", "1s", "--max-runs", "3",
                "C-shared: look")
            assert run(envs[1], "schedule", "list").startswith("shared  [")  # it sees it
            for _ in range(3):
                assert arrivals.get(timeout=60) == "C-shared: look"
            deadline = time.monotonic() + 60
            while True:
                runs = [r for r in PostgresRunLog(clean).runs("shared")
                        if r.outcome is not RunOutcome.SKIPPED]
                if len(runs) == 3 and all(r.outcome is not RunOutcome.RUNNING for r in runs):
                    break
                assert time.monotonic() < deadline, runs
                time.sleep(0.05)  # a poll's interval, bounded by the deadline
            assert [r.outcome for r in runs] == [RunOutcome.OK] * 3
            assert arrivals.empty()
        finally:
            for env in envs:
                subprocess.run([aimon, "serve", "--stop"], env=env, capture_output=True,
                               timeout=60, check=False)
