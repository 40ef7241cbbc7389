"""The caps and the ledger through the `aimon` command: print mode stops before the call that
would pass the daily cap; `aimon usage --json` sums match the sessions' own totals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aimon_core.session import FileSessionRecordStore, user_data_dir
from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall

AIMON = str(Path(sys.executable).with_name("aimon"))
MODEL = "gpt-5.4"


@pytest.fixture
def server() -> Iterator[LoopbackModelServer]:
    with LoopbackModelServer(provider="openai") as srv:
        yield srv


def settings(**budget: float) -> None:
    """Price the model's output at $100 a million tokens (input free); set the caps."""
    path = Path(os.environ["AIMON_HOME"]) / "config" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"prices": {MODEL: {"input": 0, "output": 100}},
                                "budget": budget}))


def aimon(server: LoopbackModelServer, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `aimon ARGS` on the server's model (`-p`), or a subcommand when args start with one."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "OPENAI_", "AIMON_PROVIDER", "AIMON_MODEL",
                                "OTEL_"))}
    env.update(OPENAI_API_KEY="k", OPENAI_BASE_URL=server.base_url, AIMON_NO_LOCAL_PROBE="1")
    model = () if args[0] == "usage" else ("--provider", "openai", "--model", MODEL)
    return subprocess.run([AIMON, *model, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def glob(n: int) -> Reply:
    return Reply(text=f"step {n}", output_tokens=1000,
                 tool_calls=(ScriptedToolCall(name="Glob", input={"pattern": f"*.{n}"}),))


def test_print_mode_stops_before_the_call_that_would_pass_the_daily_cap(
        server: LoopbackModelServer, tmp_path: Path) -> None:
    settings(dailyUsd=0.25)
    server.add(glob(1), glob(2), Reply(text="never sent", output_tokens=1000))
    done = aimon(server, tmp_path, "-p", "go")
    assert len(server.requests) == 2  # $0.20 spent; the third (~$0.10) would pass $0.25
    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert "daily cap of $0.25 (budget.dailyUsd)" in said, said
    assert "raise budget.dailyUsd" in said


def test_usage_json_sums_match_the_sessions_totals(server: LoopbackModelServer,
                                                   tmp_path: Path) -> None:
    settings()
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    server.add(glob(1), Reply(text="a", output_tokens=500), Reply(text="b", output_tokens=250))
    assert aimon(server, one, "-p", "first").returncode == 0
    assert aimon(server, two, "-p", "second").returncode == 0
    store = FileSessionRecordStore(user_data_dir())
    totals = {s.id: store.load(s.id).totals.cost_usd for s in store.list_sessions(None)}
    assert sorted(round(t, 6) for t in totals.values()) == [0.025, 0.15]
    shown = aimon(server, tmp_path, "usage", "--json", "--by", "session", "--since", "today")
    rows = json.loads(shown.stdout)["rows"]
    assert {r["key"]: r["cost_usd"] for r in rows} == {
        k: round(v, 6) for k, v in totals.items()}
    assert {r["key"]: r["calls"] for r in rows} == {
        k: (2 if round(v, 6) == 0.15 else 1) for k, v in totals.items()}
    by_project = json.loads(aimon(server, tmp_path, "usage", "--json", "--by",
                                  "project").stdout)
    assert {r["key"] for r in by_project["rows"]} == {str(one.resolve()), str(two.resolve())}
    assert by_project["total_usd"] == round(sum(totals.values()), 6)
    table = aimon(server, tmp_path, "usage", "--by", "model").stdout
    assert MODEL in table and "$0.1750" in table
