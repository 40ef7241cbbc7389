"""`pick`: a command's picker over the host's `choose`."""

from __future__ import annotations

import asyncio
from typing import cast

from aimon_core.command import CommandHost
from aimon_core.command._registry import CANCELLED, pick


class _Host:
    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.offered: tuple[tuple[str, str], ...] = ()

    async def choose(self, question: str, options: tuple[tuple[str, str], ...],
                     details: str) -> str | None:
        self.offered = options
        return self.answer


def _pick(answer: str | None, count: int = 3, current: str | None = None) -> tuple[
        str | None, _Host]:
    host = _Host(answer)
    choices = tuple((f"v{n}", f"value {n}") for n in range(1, count + 1))
    return asyncio.run(pick(cast(CommandHost, host), "Which?", choices, current)), host


def test_the_key_chosen_gives_its_value_and_the_current_one_is_marked() -> None:
    value, host = _pick("2", current="v2")
    assert value == "v2"
    assert host.offered[1] == ("2", "v2  value 2  (current)")


def test_past_nine_choices_have_no_one_key_shortcut() -> None:
    value, host = _pick("#11", count=12)
    assert value == "v11" and host.offered[8][0] == "9" and host.offered[9][0] == "#10"


def test_cancelled_and_no_one_to_ask_are_told_apart() -> None:
    assert _pick(CANCELLED)[0] == CANCELLED
    assert _pick(None)[0] is None
    assert _pick("x")[0] == CANCELLED  # a key no choice has
    assert asyncio.run(pick(cast(CommandHost, _Host("1")), "Which?", ())) is None
