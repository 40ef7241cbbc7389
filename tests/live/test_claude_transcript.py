"""The Claude Code-shaped transcript a live session writes beside its record."""

from __future__ import annotations

import json
import logging
import stat
from pathlib import Path

import pytest

from aimon_core.live._claude import ClaudeTranscript
from aimon_core.llm import Message


def _transcript(path: Path) -> ClaudeTranscript:
    return ClaudeTranscript(path=path, session_id="s1", cwd=Path("/repo"), model="m")


def test_lines_chain_and_a_missing_folder_is_made_private(tmp_path: Path) -> None:
    path = tmp_path / "gone" / "deeper" / "s1.claude.jsonl"
    transcript = _transcript(path)
    transcript.append(Message.user("one"))
    transcript.append(Message.user("two ü"))
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [line["message"]["content"][0]["text"] for line in lines] == ["one", "two ü"]
    assert lines[0]["parentUuid"] is None and lines[1]["parentUuid"] == lines[0]["uuid"]
    assert stat.S_IMODE((tmp_path / "gone").stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    # The folder removed while the session runs: made again on the next message.
    path.unlink()
    path.parent.rmdir()
    transcript.append(Message.user("three"))
    assert json.loads(path.read_text())["parentUuid"] == lines[1]["uuid"]


def test_a_line_that_cannot_be_written_is_logged_and_the_next_one_is(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "s1.claude.jsonl"
    transcript = _transcript(path)
    with caplog.at_level(logging.WARNING):
        transcript.append(Message.user("a lone \udce9 surrogate"))
    assert "cannot write the Claude Code transcript" in caplog.text
    transcript.append(Message.user("next"))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["parentUuid"] is None
