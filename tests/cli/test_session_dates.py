"""Session listings say the date when it is not today: one formatter for all three listings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from aimon_cli._picker import picker_lines
from aimon_cli._sessions_cli import summary_line
from aimon_core.command import format_when, sessions_text
from aimon_core.session import SessionId, SessionSummary

BERLIN_WINTER = timezone(timedelta(hours=1))
NOW = datetime(2026, 11, 30, 16, 30, tzinfo=BERLIN_WINTER)


@pytest.mark.parametrize(("moment", "shown"), [
    (datetime(2026, 11, 30, 14, 5, tzinfo=BERLIN_WINTER), "14:05"),
    (datetime(2026, 11, 30, 0, 0, tzinfo=BERLIN_WINTER), "00:00"),
    (datetime(2026, 11, 29, 23, 59, tzinfo=BERLIN_WINTER), "Nov 29 23:59"),
    (datetime(2026, 11, 28, 14, 5, tzinfo=BERLIN_WINTER), "Nov 28 14:05"),
    (datetime(2026, 1, 3, 9, 7, tzinfo=BERLIN_WINTER), "Jan 3 09:07"),
    (datetime(2025, 11, 28, 14, 5, tzinfo=BERLIN_WINTER), "Nov 28 2025 14:05"),
    (datetime(2025, 12, 31, 23, 0, tzinfo=BERLIN_WINTER), "Dec 31 2025 23:00"),
    # Stored times are UTC: they are shown in now's time zone (23:30 UTC is tomorrow here).
    (datetime(2026, 11, 29, 23, 30, tzinfo=UTC), "00:30"),
    (datetime(2026, 11, 29, 22, 30, tzinfo=UTC), "Nov 29 23:30"),
])
def test_format_when(moment: datetime, shown: str) -> None:
    assert format_when(moment, NOW) == shown


def test_format_when_defaults_to_the_local_clock() -> None:
    just_now = datetime.now(UTC)
    assert format_when(just_now) == just_now.astimezone().strftime("%H:%M")


def _summary(number: int, updated: datetime, title: str = "fix the build") -> SessionSummary:
    return SessionSummary(
        id=SessionId(f"20261130-14050{number}-abcdef"), title=title, created_at=updated,
        updated_at=updated, message_count=4, project_root="/p", agent_ref="default")


TODAY = _summary(1, datetime(2026, 11, 30, 14, 5, tzinfo=BERLIN_WINTER))
EARLIER = _summary(2, datetime(2026, 11, 28, 14, 5, tzinfo=BERLIN_WINTER), "add tests")
LAST_YEAR = _summary(3, datetime(2025, 11, 28, 14, 5, tzinfo=BERLIN_WINTER), "old")


def test_every_listing_uses_the_same_dates() -> None:
    listings = {
        "/sessions": sessions_text((TODAY, EARLIER, LAST_YEAR), current=TODAY.id, now=NOW),
        "picker": "\n".join(picker_lines((TODAY, EARLIER, LAST_YEAR), now=NOW)),
        "aimon sessions": "\n".join(summary_line(s, NOW) for s in (TODAY, EARLIER, LAST_YEAR)),
    }
    for where, text in listings.items():
        lines = text.splitlines()
        assert len(lines) == 3, where
        assert " 14:05  " in lines[0] and "Nov" not in lines[0], where
        assert " Nov 28 14:05  " in lines[1], where
        assert " Nov 28 2025 14:05  " in lines[2], where
        assert "ago" not in text, where


def test_sessions_text_lines_up_the_times() -> None:
    text = sessions_text((TODAY, EARLIER), current=EARLIER.id, now=NOW)
    assert text.splitlines() == [
        f"  {TODAY.id}         14:05     4 messages  fix the build",
        f"* {EARLIER.id}  Nov 28 14:05     4 messages  add tests",
    ]
    assert picker_lines((TODAY,), now=NOW) == [
        f"1. {TODAY.id}  14:05     4 messages  fix the build"]
