"""Lines wrapped for the screen (`hanging`): never at the margin, never mid-word, a table's
rows the same way whatever the width of its first column."""

from __future__ import annotations

import pytest

from aimon_cli._early import banner_text
from aimon_cli._rules import hanging

WIDE = ("  /commit [what the change is for]         Review the staged changes and commit "
        "them with a Conventional Commits message")
NARROW = "  /trust   Trust this folder's settings that wait for it (hooks, env, wider permissions)"


@pytest.mark.parametrize("width", [30, 40, 50, 60, 80])
@pytest.mark.parametrize("line", [WIDE, NARROW, "Budget    at most 100 iterations · no token "
                                  "limit · no time limit per turn", "word " * 30])
def test_no_row_is_too_long_starts_at_the_margin_or_splits_a_word(line: str, width: int) -> None:
    rows = hanging(line, width)
    assert all(len(row) <= width for row in rows), rows
    assert all(row.startswith(" ") for row in rows[1:]) or not line.startswith(" "), rows
    assert " ".join(" ".join(rows).split()) == " ".join(line.split())  # every word whole


def test_a_first_column_too_wide_puts_the_text_under_it() -> None:
    assert hanging(WIDE, 60) == [
        "  /commit [what the change is for]",
        "      Review the staged changes and commit them with a",
        "      Conventional Commits message"]
    assert hanging(NARROW, 60)[1].startswith(" " * 11 + "(hooks")  # under its text


def test_the_banner_breaks_between_its_parts() -> None:
    assert banner_text("1.0", "/p") == "aimon 1.0 · /p · /help for commands"
    assert banner_text("1.0", "/a/long/project", 30).splitlines() == [
        "aimon 1.0 · /a/long/project", "/help for commands"]
    assert banner_text("1.0", "/p", 10).splitlines() == ["aimon 1.0", "/p", "/help for commands"]
