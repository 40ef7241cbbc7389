"""`aimon -r` without an id: choose one of the project's recent sessions by number."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from prompt_toolkit import PromptSession
from rich.console import Console
from rich.text import Text

from aimon_core.command import format_ago

if TYPE_CHECKING:
    from aimon_core.session import SessionSummary


def picker_lines(summaries: Sequence[SessionSummary]) -> list[str]:
    """Return the numbered listing lines."""
    width = len(str(len(summaries)))
    return [
        f"{number:>{width}}. {item.id}  {format_ago(item.updated_at):>12}  "
        f"{item.message_count:>4} messages  {item.title or '(no prompt yet)'}"
        for number, item in enumerate(summaries, 1)
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
    """List recent sessions, numbered, and return the one chosen (None: none, or cancelled)."""
    out = console or Console(highlight=False)
    summaries = [s for s in summaries if s.message_count > 0]  # an empty one has nothing
    if not summaries:
        out.print("No sessions in this project yet. Start one with: aimon")
        return None
    out.print(Text("Recent sessions in this project (newest first):", style="bold"))
    for line in picker_lines(summaries):
        out.print(Text(line))
    prompt: PromptSession[str] = PromptSession()
    while True:
        try:
            answer = await prompt.prompt_async(
                f"Resume which session? 1-{len(summaries)} (Enter to cancel): ")
        except (KeyboardInterrupt, EOFError):
            return None
        if not answer.strip():
            return None
        chosen = choose(answer, summaries)
        if chosen is not None:
            return chosen
        out.print(Text(f"Type a number from 1 to {len(summaries)}, or press Enter to cancel.",
                       style="yellow"))
