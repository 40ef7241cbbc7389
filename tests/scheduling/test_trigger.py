"""Triggers: cron in a time zone (daylight-saving nights too), intervals, one-shots."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from aimon_core.scheduling import (
    Cron,
    Every,
    Once,
    TriggerError,
    after,
    at,
    catch_up,
    cron,
    describe,
    every,
    local_zone,
    next_time,
    parse_duration,
    routine_from_json,
    routine_to_json,
    trigger_from_json,
    trigger_to_json,
)
from aimon_core.scheduling import Routine as RoutineValue

BERLIN = ZoneInfo("Europe/Berlin")


def _t(*fields: int, zone: ZoneInfo = BERLIN) -> float:
    return datetime(*fields, tzinfo=zone).timestamp()  # type: ignore[misc]


def _wall(moment: float, zone: ZoneInfo = BERLIN) -> str:
    return datetime.fromtimestamp(moment, zone).isoformat()


def _times(trigger: Cron, start: float, count: int) -> list[str]:
    found, moment = [], start
    for _ in range(count):
        following = next_time(trigger, moment)
        assert following is not None
        found.append(_wall(following))
        moment = following
    return found


@pytest.mark.parametrize(("text", "seconds"), [
    ("30m", 1800), ("2s", 2), ("1h30m", 5400), ("1d", 86400), ("1w", 604800),
    ("250ms", 0.25), ("1.5h", 5400), ("1h 5m", 3900), ("2S", 2),
])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "30", "m", "30x", "-5m", "0s", "5m garbage", "m5"])
def test_durations_refused(text: str) -> None:
    with pytest.raises(TriggerError, match="a duration is"):
        parse_duration(text)


def test_an_interval_under_a_second_is_refused() -> None:
    with pytest.raises(TriggerError, match="at least"):
        every("500ms")
    assert every("2s") == Every(seconds=2.0)


def test_cron_runs_in_its_time_zone() -> None:
    weekdays = cron("0 9 * * 1-5", "Europe/Berlin")
    # Friday 2026-12-04 10:00 in Berlin: next is Monday 09:00 Berlin (08:00 UTC).
    following = next_time(weekdays, _t(2026, 12, 4, 10, 0))
    assert following is not None and _wall(following) == "2026-12-07T09:00:00+01:00"
    in_utc = next_time(cron("0 9 * * 1-5", "UTC"), _t(2026, 12, 4, 10, 0))
    assert in_utc is not None and following - in_utc == -3600


def test_cron_on_the_night_clocks_go_forward_runs_once_after_the_gap() -> None:
    daily = cron("30 2 * * *", "Europe/Berlin")  # 02:30 does not exist on 2026-03-29
    assert _times(daily, _t(2026, 3, 28, 12, 0), 3) == [
        "2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00", "2026-03-31T02:30:00+02:00"]


def test_cron_on_the_night_clocks_go_back_runs_a_wall_time_once() -> None:
    daily = cron("30 2 * * *", "Europe/Berlin")  # 02:30 happens twice on 2026-10-25
    assert _times(daily, _t(2026, 10, 24, 12, 0), 3) == [
        "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00", "2026-10-27T02:30:00+01:00"]
    hourly = cron("0 * * * *", "Europe/Berlin")
    assert _times(hourly, _t(2026, 10, 25, 0, 30), 4) == [
        "2026-10-25T01:00:00+02:00", "2026-10-25T02:00:00+02:00",
        "2026-10-25T03:00:00+01:00", "2026-10-25T04:00:00+01:00"]


@pytest.mark.parametrize("expression", ["", "* * * *", "61 * * * *", "* * * * * *", "hello"])
def test_bad_cron_is_refused(expression: str) -> None:
    with pytest.raises(TriggerError, match="five fields"):
        cron(expression, "UTC")


def test_unknown_zone_is_refused() -> None:
    with pytest.raises(TriggerError, match="time zone"):
        cron("0 9 * * *", "Mars/Olympus")


def test_at_reads_a_wall_time_in_the_zone_and_an_offset_as_given() -> None:
    assert at("2026-12-02T09:00", "Europe/Berlin") == Once(at=_t(2026, 12, 2, 9, 0))
    assert at("2026-12-02T09:00+00:00", "Europe/Berlin") == Once(
        at=_t(2026, 12, 2, 9, 0, zone=ZoneInfo("UTC")))
    # A wall time skipped by the clocks going forward is read past the gap.
    skipped = at("2026-03-29T02:30", "Europe/Berlin").at
    assert _wall(skipped) == "2026-03-29T03:30:00+02:00"
    with pytest.raises(TriggerError, match="ISO 8601"):
        at("tomorrow", "UTC")


def test_once_fires_once() -> None:
    once = after("20m", 1000.0)
    assert once == Once(at=2200.0)
    assert next_time(once, 1000.0) == 2200.0
    assert next_time(once, 2200.0) is None


def test_interval_counts_from_its_last_occurrence() -> None:
    assert next_time(Every(seconds=60), 100.0) == 160.0


def test_catch_up_coalesces_missed_occurrences() -> None:
    interval = Every(seconds=60)
    assert catch_up(interval, 100.0, 100.0) == 160.0  # on time
    assert catch_up(interval, 100.0, 400.0) == 460.0  # four missed: one run, then in rhythm
    hourly = cron("0 * * * *", "UTC")
    due = _t(2026, 1, 1, 1, 0, zone=ZoneInfo("UTC"))
    later = catch_up(hourly, due, due + 5 * 3600 + 60)
    assert later == _t(2026, 1, 1, 7, 0, zone=ZoneInfo("UTC"))
    assert catch_up(Once(at=due), due, due + 10) is None


def test_trigger_json_round_trip_and_refusals() -> None:
    for trigger in (Cron(expression="*/5 * * * *", zone="Asia/Tokyo"), Every(seconds=2.0),
                    Once(at=123.5)):
        assert trigger_from_json(trigger_to_json(trigger)) == trigger
    for data in (None, {}, {"every": -1}, {"every": True}, {"cron": "bad", "zone": "UTC"}):
        with pytest.raises(TriggerError):
            trigger_from_json(data)


def test_routine_json_refuses_bad_values() -> None:
    base = routine_to_json(RoutineValue(name="ok", trigger=Every(seconds=5), prompt="p",
                                        project="/x"))
    assert routine_from_json(base).name == "ok"
    for bad in ({"name": "../x"}, {"prompt": ""}, {"limits": {"max_runs": 0}},
                {"limits": {"max_cost_usd": -1}}, {"state": "weird"}, {"agent": 5}):
        with pytest.raises(ValueError):
            routine_from_json({**base, **bad})


def test_local_zone() -> None:
    assert local_zone({"TZ": "Asia/Tokyo"}) == "Asia/Tokyo"
    assert local_zone({"TZ": ":Europe/Paris"}) == "Europe/Paris"
    ZoneInfo(local_zone({"TZ": "Nowhere/Else"}))  # falls back to a real zone


def test_describe() -> None:
    assert describe(Every(seconds=5400)) == "every 1h30m"
    assert describe(Cron(expression="0 9 * * *", zone="UTC")) == "cron '0 9 * * *' (UTC)"
    assert describe(Once(at=datetime(2026, 1, 1, tzinfo=UTC).timestamp())).startswith("once at")
