"""What a resumed session shows of its past: its last prompts, each with the tool calls it
made (folded), the answers, the calls that failed or were denied, and turns that ended
without an answer. Only the end of the transcript is looked at."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.text import Text

from aimon_cli._lines import result_tail, tool_label
from aimon_core.command import Called, Said, conversation, plural, shell_call
from aimon_core.llm import Message, TextBlock, ToolResultBlock

REPLAY_PROMPTS = 3
REPLAY_LINES = 12
NO_ANSWER = "⚠ No answer: the turn was interrupted or stopped by a limit."


def is_prompt(message: Message) -> bool:
    """Tell whether `message` is a prompt the person sent (not tool results)."""
    if message.role != "user" or not message.content:
        return False
    first = message.content[0]
    return isinstance(first, TextBlock) and bool(first.text.strip()) and not any(
        isinstance(block, ToolResultBlock) for block in message.content)


def last_prompts(messages: Sequence[Message], count: int) -> Sequence[Message]:
    """Return the end of `messages` that holds its last `count` prompts and what followed."""
    found = 0
    for index in range(len(messages) - 1, -1, -1):
        if is_prompt(messages[index]):
            found += 1
            if found == count:
                return messages[index:]
    return messages


def replay_lines(messages: Sequence[Message], session_id: str, project_root: Path | None,
                 *, prompts: int = REPLAY_PROMPTS) -> list[Text | str]:
    """Return what a resume prints: a header, then each item (Markdown answers as `str`)."""
    shown = last_prompts(messages, prompts)
    out: list[Text | str] = [Text(f"Resumed session {session_id} "
                                  f"({plural(len(messages), 'message')}); the last "
                                  f"{plural(prompts, 'prompt')}:", style="dim")]
    answered = True
    for item in conversation(shown):
        match item:
            case Said(text=text, by_user=True):
                if not answered:
                    out.append(Text(NO_ANSWER, style="yellow"))
                out.append(Text(f"› {_cut(_prompt_text(text))}", style="bold"))
                shell = shell_call(text)
                if shell is not None:  # a `!command`: its output, and no answer is due
                    out.extend(_call_lines(shell, project_root))
                answered = shell is not None
            case Said(text=text):
                out.append(_cut(text))
                answered = True
            case Called() as call:
                out.extend(_call_lines(call, project_root))
                answered = False
    if not answered and shown:
        out.append(Text(NO_ANSWER, style="yellow"))
    return out


def _prompt_text(text: str) -> str:
    """Return a prompt as typed: a `!command`'s record shows as `!command`."""
    if text.startswith("<bash-input>"):
        command = text.removeprefix("<bash-input>").split("</bash-input>", 1)[0]
        return f"!{command}"
    return text


def _call_lines(call: Called, project_root: Path | None) -> list[Text | str]:
    label = tool_label(call.name, call.input, project_root)
    failed = call.is_error or not call.answered
    bullet = Text.assemble(("✗ " if failed else "● ", "bold red" if failed else "bold"),
                           (label, "bold"))
    rows = result_tail(call.result or "(no result)", error=failed)
    return [bullet, *(Text.assemble(("  ⎿ " if n == 0 else "    ", "dim"), row)
                      for n, row in enumerate(rows))]


def _cut(text: str) -> str:
    lines = text.strip().splitlines()
    return "\n".join(lines[:REPLAY_LINES]) + ("\n…" if len(lines) > REPLAY_LINES else "")
