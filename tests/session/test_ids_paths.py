"""Session ids, user-level paths and project keys."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import platformdirs
import pytest

from aimon_core.session import (
    InvalidSessionIdError,
    SessionNotFoundError,
    new_session_id,
    parse_session_id,
    project_key,
    user_config_dir,
    user_data_dir,
)


def test_new_ids_sort_by_creation_time() -> None:
    start = datetime(2025, 12, 31, 23, 59, 58, tzinfo=UTC)
    ids = [new_session_id(start + timedelta(seconds=n)) for n in range(3)]

    assert ids == sorted(ids)
    assert ids[0].startswith("20251231-235958-")
    assert all(parse_session_id(i) == i for i in ids)
    assert len({new_session_id(start) for _ in range(100)}) == 100


def test_parse_accepts_surrounding_whitespace() -> None:
    assert parse_session_id(" 20250101-120000-0a1b2c\n") == "20250101-120000-0a1b2c"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("../x", "looks like a path"),
        ("a/b", "looks like a path"),
        (".hidden", "looks like a path"),
        ("20250101-120000-0A1B2C", "expected the form"),
        ("20250101-120000-0a1b2c.jsonl", "expected the form"),
        ("latest", "expected the form"),
    ],
)
def test_junk_ids_are_refused_clearly(text: str, reason: str) -> None:
    with pytest.raises(InvalidSessionIdError, match=reason) as caught:
        parse_session_id(text)

    assert isinstance(caught.value, SessionNotFoundError)
    assert isinstance(caught.value, ValueError)
    assert repr(text) in str(caught.value)


def test_aimon_home_overrides_user_dirs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AIMON_HOME", str(tmp_path))
    assert user_data_dir() == tmp_path / "data"
    assert user_config_dir() == tmp_path / "config"

    monkeypatch.setenv("AIMON_HOME", "")
    assert user_data_dir() == Path(platformdirs.user_data_dir("aimon"))
    assert user_config_dir() == Path(platformdirs.user_config_dir("aimon"))


def test_project_keys_are_readable_safe_and_distinct() -> None:
    key = project_key("/home/me/my repo.git")

    assert re.fullmatch(r"-home-me-my-repo-git-[0-9a-f]{8}", key)
    assert project_key("/home/me/my-repo.git") != key  # sanitizes alike, hashes differently
    assert project_key("/home/me/my repo.git") == key
    long_key = project_key("/x" * 200 + "/the-repo")
    assert len(long_key) <= 89
    assert "the-repo" in long_key
    assert re.fullmatch(r"[A-Za-z0-9_-]+", project_key("/tmp/ü/../..\\x"))
