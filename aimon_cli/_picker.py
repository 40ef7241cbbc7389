"""`aimon -r` without an id: choose one of the project's recent sessions by number."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from aimon_core.command import format_when

if TYPE_CHECKING:
    from aimon_core.session import SessionSummary


def picker_lines(summaries: Sequence[SessionSummary], now: datetime | None = None) -> list[str]:
    """Return the numbered listing lines (times as `format_when` writes them)."""
    width = len(str(len(summaries)))
    times = [format_when(item.updated_at, now) for item in summaries]
    at_width = max(map(len, times), default=0)
    return [
        f"{number:>{width}}. {item.id}  {at:>{at_width}}  "
        f"{item.message_count:>4} message{'s' * (item.message_count != 1)}  "
        f"{item.title or '(no prompt yet)'}"
        for number, (item, at) in enumerate(zip(summaries, times, strict=True), 1)
    ]


def choose(answer: str, summaries: Sequence[SessionSummary]) -> str | None:
    """Return the session an answer names (its number, or its id or the end of it)."""
    answer = answer.strip()
    if answer.isdigit() and 1 <= int(answer) <= len(summaries):
        return summaries[int(answer) - 1].id
    found = [s.id for s in summaries if answer and (s.id == answer or s.id.endswith(answer))]
    return found[0] if len(found) == 1 else None


async def pick_session(summaries: Sequence[SessionSummary], *,
                       console: Console | None = None) -> str | None:
    """List recent sessions and return the one chosen (None: none, or cancelled).

    ↑/↓ (or a number key 1-9) highlight a session, Enter resumes it, Esc cancels.
    """
    import asyncio

    from aimon_cli._choose import Choice, choose

    out = console or Console(highlight=False)
    summaries = [s for s in summaries if s.message_count > 0]  # an empty one has nothing
    if not summaries:
        out.print("No sessions in this project yet. Start one with: aimon")
        return None
    out.print(Text("Recent sessions in this project (newest first):", style="bold"))
    choices = [Choice(keys=(str(number),) if number < 10 else (), value=item.id,
                      label=f"{number}.", hint=line.split(". ", 1)[1])
               for number, (item, line) in enumerate(
                   zip(summaries, picker_lines(summaries), strict=True), 1)]
    choices += [Choice(keys=("escape", "c-c"), value="", immediate=True)]
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    count = min(len(summaries), 9)
    chosen = await choose("Resume which session?", tuple(choices), done=never,
                          on_typed=lambda _: None, guard=0,
                          keys=("1" if count == 1 else f"1-{count}") + " · Esc cancels")
    return chosen or None
