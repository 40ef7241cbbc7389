"""Choosing a store by URL, opening it, and copying every session between backends."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from aimon_core.llm import Message, ToolUseBlock
from aimon_core.session import BudgetOverride, ModelChoice, SessionTotals
from aimon_core.stores import (
    StoreChoice,
    StoreURLError,
    copy_sessions,
    open_backend,
    store_url,
)
from aimon_core.testing import every_block_conversation


def test_the_flag_beats_the_environment_beats_the_settings(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text('{"store": {"url": "postgresql:///s", "coordination": "redis://r"}}')
    env = {"AIMON_STORE_URL": "postgresql:///e"}
    assert store_url("postgresql:///f", environ=env, settings_path=settings).url == \
        "postgresql:///f"
    assert store_url(None, environ=env, settings_path=settings).url == "postgresql:///e"
    chosen = store_url(None, environ={}, settings_path=settings)
    assert (chosen.url, chosen.coordination) == ("postgresql:///s", "redis://r")
    assert store_url(None, environ={}, settings_path=tmp_path / "none.json") == StoreChoice()


def test_bad_settings_are_told_not_fatal(tmp_path: Path) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text('{"store": {"url": 3, "colour": "red"}}')
    chosen = store_url(None, environ={}, settings_path=settings)
    assert chosen.url is None
    assert any("unknown key" in p for p in chosen.problems)
    assert any("store.url must be" in p for p in chosen.problems)


def test_passwords_never_show_in_the_name() -> None:
    choice = StoreChoice(url="postgresql://me:s3cret@db/aimon", coordination="redis://:pw@r/0")
    assert "s3cret" not in choice.name and "pw@" not in choice.name
    assert "me:***@db" in choice.name


@pytest.mark.parametrize("url", ["mysql://db/x", "http://example.invalid/", "sqlite:///x"])
def test_an_unknown_scheme_is_refused(url: str) -> None:
    with pytest.raises(StoreURLError):
        open_backend(url)


def test_the_default_is_the_file_store(tmp_path: Path) -> None:
    backend = open_backend(None, data_dir=tmp_path)
    assert backend.service is None
    assert type(backend.store.records).__name__ == "FileSessionRecordStore"
    backend.close()


def _stored_sessions(store_records: object, count: int) -> list[str]:
    from aimon_core.session import SessionRecord

    records = store_records
    ids = []
    for n in range(count):
        record = SessionRecord.new(project_root=f"/p/{n % 2}", agent_ref="default")
        records.create(record)  # type: ignore[attr-defined]
        records.append(record.id, every_block_conversation())  # type: ignore[attr-defined]
        records.append(record.id, [Message(role="assistant", content=(  # type: ignore[attr-defined]
            ToolUseBlock(id=f"c{n}", name="Bash", input={}),))])
        records.mark_tool_started(record.id, [f"c{n}"])  # type: ignore[attr-defined]
        records.write_side(  # type: ignore[attr-defined]
            record.id, totals=SessionTotals(turns=n + 1, cost_usd=0.5),
            budget_override=BudgetOverride(max_iterations=3), compaction_failure_count=1,
            approvals=("Bash(ls)",), reads=(("/p/a.py", "abc"),),
            model_choice=ModelChoice(model="m", provider="openai"))
        ids.append(record.id)
    return ids


def test_copying_file_sessions_to_postgres_and_back(tmp_path: Path, postgres_url: str) -> None:
    source = open_backend(None, data_dir=tmp_path / "a")
    ids = _stored_sessions(source.store.records, 3)
    target = open_backend(postgres_url)
    try:
        with target.store.records.database.connection() as db:  # type: ignore[attr-defined]
            db.execute("TRUNCATE aimon_sessions CASCADE")
        report = copy_sessions(source.store.records, target.store.records)
        assert sorted(report.copied) == sorted(ids)
        assert report.messages == 3 * 5
        for session_id in ids:
            assert target.store.records.load(session_id) == dataclasses.replace(
                source.store.records.load(session_id), load_warnings=())
        # Again: nothing to copy, everything checked equal.
        again = copy_sessions(source.store.records, target.store.records)
        assert again.copied == () and sorted(again.skipped) == sorted(ids)
        back = open_backend(None, data_dir=tmp_path / "b")
        assert sorted(copy_sessions(target.store.records, back.store.records).copied) == \
            sorted(ids)
        assert back.store.records.load(ids[0]).started_tool_ids == ("c0",)
    finally:
        target.close()


def test_redis_alone_keeps_everything(tmp_path: Path, redis_url: str) -> None:
    from aimon_core.stores._redis import connect

    client = connect(redis_url)
    client.flushdb()
    client.close()
    source = open_backend(None, data_dir=tmp_path / "a")
    ids = _stored_sessions(source.store.records, 2)
    target = open_backend(redis_url)
    try:
        assert type(target.store.records).__name__ == "RedisSessionRecordStore"
        assert type(target.store.leases).__name__ == "RedisSessionLeaseStore"
        assert target.service is not None
        assert sorted(copy_sessions(source.store.records, target.store.records).copied) == \
            sorted(ids)
        claimed = target.store.claim(ids[0], project_root="/p/0", agent_ref="default")
        assert claimed.record.started_tool_ids == ("c0",)
        target.store.release(claimed)
    finally:
        target.close()


def test_postgres_records_with_redis_coordination(postgres_url: str, redis_url: str) -> None:
    backend = open_backend(StoreChoice(url=postgres_url, coordination=redis_url))
    try:
        assert type(backend.store.records).__name__ == "PostgresSessionRecordStore"
        assert type(backend.store.leases).__name__ == "RedisSessionLeaseStore"
        assert backend.service is not None
        assert type(backend.service.signals).__name__ == "RedisSignalBus"
    finally:
        backend.close()


def test_the_store_block_is_a_known_settings_key() -> None:
    from aimon_core.config._validate import check_layer

    values = check_layer({"store": {"url": "postgresql://aimon@db/aimon"}, "colour": 1},
                         path=None, display="settings.json")
    assert values.unused == ("colour",)
