"""The cost ledger and its hard caps: every call kept, a call that would pass a cap not made.

Prices come from settings (`prices`), so a scripted model has a price: output at $100 per
million tokens, input free, and each scripted answer gives 1,000 output tokens ($0.10).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from aimon_core.agent import StopCause
from aimon_core.llm import (
    ResponseCompleted,
    TextDelta,
    Usage,
    UsageReported,
    reply,
    script,
)
from aimon_core.observe import BudgetCapError, LedgerEntry, SQLiteLedgerStore, ledger_path
from aimon_core.observe._ledger import start_of_day
from aimon_core.runtime import RuntimeParts, build_runtime
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore

from ..live.test_interrupted_usage import StallingClient
from .conftest import interrupt_after_text

COST = Usage(input_tokens=0, output_tokens=1000)


def write_user_settings(settings: dict[str, object]) -> None:
    path = Path(os.environ["AIMON_HOME"]) / "config" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(settings))


def priced(**budget: float) -> None:
    write_user_settings({"prices": {"scripted": {"input": 0, "output": 100}},
                         "budget": budget})


def step(n: int) -> object:
    return reply(f"step {n}", ("Glob", {"pattern": f"*.{n}"}), usage=COST)


async def turn(root: Path, *steps: object, prompts: tuple[str, ...] = ("go",)) -> list[object]:
    client = script(*steps)
    store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
    results: list[object] = []
    parts = RuntimeParts(client=client, trust_all=True)
    async with build_runtime(root, parts=parts) as built, await built.open_session(store) as live:
        for prompt in prompts:
            results.append(await live.submit(prompt))
        results.append(live.record)
    return results


def test_every_call_is_kept_and_sums_match_the_session_totals(tmp_path: Path) -> None:
    priced()
    done = asyncio.run(turn(tmp_path, step(1), step(2), step(3), reply("done", usage=COST)))
    record = done[-1]
    entries = SQLiteLedgerStore(ledger_path()).entries()
    assert len(entries) == 4
    assert {e.session_id for e in entries} == {record.id}
    assert {e.project for e in entries} == {str(tmp_path.resolve())}
    assert sum(e.cost_usd for e in entries) == record.totals.cost_usd
    assert round(record.totals.cost_usd, 6) == 0.4
    assert ledger_path().stat().st_mode & 0o777 == 0o600  # the user's alone, as sessions are


def test_the_daily_cap_stops_the_turn_before_the_call_that_would_pass_it(tmp_path: Path
                                                                          ) -> None:
    priced(dailyUsd=0.25)
    # Two calls cost $0.20; the third would cost about $0.10 more: it is never made (the
    # script holds only two steps, and fails the test on a third call).
    result, _ = asyncio.run(turn(tmp_path, step(1), step(2)))
    assert result.stop is StopCause.MODEL_ERROR
    assert isinstance(result.error, BudgetCapError)
    assert result.error.cap == "budget.dailyUsd"
    assert "daily cap of $0.25" in result.reason
    assert "raise budget.dailyUsd" in result.reason
    # The session stays well formed: every call answered, the next turn can go on.
    messages = result.new_messages
    assert messages[-1].role == "user" and messages[-1].content[0].tool_use_id
    assert len(SQLiteLedgerStore(ledger_path()).entries()) == 2


def test_spending_earlier_today_counts_and_yesterday_does_not(tmp_path: Path) -> None:
    priced(dailyUsd=0.25)
    store = SQLiteLedgerStore(ledger_path())
    today = start_of_day(time.time())
    for at in (today - 1, today):  # the last second of yesterday, the first of today
        store.add(LedgerEntry(at=at, session_id="s", project="p", agent="a", model="scripted",
                              provider="scripted", usage=COST, cost_usd=0.1))
    # $0.10 earlier today, and this turn's first call $0.10: the second would pass $0.25.
    result, _ = asyncio.run(turn(tmp_path, step(1)))
    assert isinstance(result.error, BudgetCapError)
    assert result.error.spent == pytest.approx(0.2)  # yesterday's $0.10 not among them
    store.close()


def test_the_per_turn_cap_counts_from_zero_each_turn(tmp_path: Path) -> None:
    priced(perTurnUsd=0.15)
    first, second, _ = asyncio.run(turn(tmp_path, step(1), reply("a", usage=COST),
                                        prompts=("one", "two")))
    # Turn one: $0.10, then the next call (~$0.10) would pass $0.15: stopped.
    assert isinstance(first.error, BudgetCapError)
    assert first.error.cap == "budget.perTurnUsd"
    # Turn two starts from zero again.
    assert second.stop is StopCause.ANSWERED


def test_a_project_file_cannot_raise_a_users_cap(tmp_path: Path) -> None:
    priced(dailyUsd=0.05)
    (tmp_path / ".aimon").mkdir()
    (tmp_path / ".aimon" / "settings.json").write_text(json.dumps(
        {"budget": {"dailyUsd": 1000}, "prices": {"scripted": {"output": 0}}}))
    result, _ = asyncio.run(turn(tmp_path, step(1)))
    assert isinstance(result.error, BudgetCapError)
    assert "(set in the user settings)" in result.reason


def test_cost_shows_the_session_today_and_the_caps(tmp_path: Path) -> None:
    priced(dailyUsd=5)
    done = asyncio.run(turn(tmp_path, step(1), reply("done", usage=COST),
                            prompts=("go", "/cost")))
    text = done[1].text
    assert "This session: $0.2000 · 2 model calls" in text
    assert "Today:        $0.2000 of $5.00 (budget.dailyUsd)" in text
    assert "This month:   $0.2000 (no cap; set budget.monthlyUsd to have one)" in text
    assert "Prices:       scripted from settings (prices.scripted)" in text


def test_a_summary_call_is_kept_and_priced_as_the_session_counts_it(tmp_path: Path) -> None:
    priced()
    done = asyncio.run(turn(tmp_path, reply("one", usage=COST), reply("two", usage=COST),
                            reply("the summary", usage=COST), prompts=("a", "b", "/compact")))
    record = done[-1]
    entries = SQLiteLedgerStore(ledger_path()).entries()
    assert len(entries) == 3
    assert round(sum(e.cost_usd for e in entries), 6) == round(record.totals.cost_usd, 6) == 0.3
    assert {e.session_id for e in entries} == {record.id}  # the summary's row too


def test_an_interrupted_call_is_kept_as_the_session_counts_it(tmp_path: Path) -> None:
    started = Usage(input_tokens=1200, cache_read_tokens=300, output_tokens=1)
    _, total = interrupt_after_text(tmp_path, StallingClient(
        UsageReported(usage=started), TextDelta(text="word " * 80)))
    [entry] = SQLiteLedgerStore(ledger_path()).entries()
    assert entry.usage == Usage(input_tokens=1200, cache_read_tokens=300, output_tokens=100)
    assert total > 0 and entry.cost_usd == pytest.approx(total)


def test_a_call_completed_before_the_interrupt_is_kept_once(tmp_path: Path) -> None:
    answer = reply("word " * 80, usage=Usage(input_tokens=1000, output_tokens=100))
    _, total = interrupt_after_text(tmp_path, StallingClient(
        TextDelta(text="word " * 80), ResponseCompleted(response=answer)))
    [entry] = SQLiteLedgerStore(ledger_path()).entries()
    assert entry.usage == Usage(input_tokens=1000, output_tokens=100)
    assert entry.cost_usd == pytest.approx(total)


def test_a_subagents_calls_count_to_the_turn_that_started_it(tmp_path: Path) -> None:
    priced(perTurnUsd=0.25)
    task = ("Task", {"description": "look", "prompt": "Where is x?",
                     "subagent_type": "general-purpose"})
    # The turn's call ($0.10), the subagent's ($0.10): the turn's next call (~$0.10) would
    # pass $0.25, so it is not made (the script has no step for it).
    result, _ = asyncio.run(turn(tmp_path, reply("", task, usage=COST),
                                 reply("in a.py", usage=COST)))
    assert isinstance(result.error, BudgetCapError)
    assert result.error.cap == "budget.perTurnUsd"
    assert result.error.spent == pytest.approx(0.2)
    agents = [e.agent for e in SQLiteLedgerStore(ledger_path()).entries()]
    assert agents == ["default", "general-purpose"]  # aimon usage --by agent splits them


@pytest.mark.parametrize(("text", "expected"), [
    ("today", "2026-12-01T00:00:00"), ("month", "2026-12-01T00:00:00"),
    ("7d", "2026-11-24T15:30:00"), ("12h", "2026-12-01T03:30:00"),
    ("2w", "2026-11-17T15:30:00"), ("2026-11-03", "2026-11-03T00:00:00"),
])
def test_since_reads_days_spans_and_dates(text: str, expected: str) -> None:
    from datetime import datetime

    from aimon_core.observe._usage import parse_since

    now = datetime.fromisoformat("2026-12-01T15:30:00").timestamp()
    assert parse_since(text, now) == datetime.fromisoformat(expected).timestamp()


def test_usage_says_what_since_takes(capsys: pytest.CaptureFixture[str]) -> None:
    from aimon_cli._usage_cli import usage_command

    assert usage_command(["--since", "last tuesday"]) == 2
    assert "give today, month, all, a span such as 7d" in capsys.readouterr().err
