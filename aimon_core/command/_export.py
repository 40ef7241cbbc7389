"""/export (the conversation as Markdown) and /copy (the last answer), and the walk of a
transcript into what a person reads: prompts, answers and tool calls with their results."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aimon_core.command._registry import CommandError, CommandHost, CommandOutcome, SlashCommand

if TYPE_CHECKING:
    from aimon_core.live import LiveSession
    from aimon_core.llm import Message

EXPORT_USAGE = "/export [FILE]"
# A tool result in an export: this many lines, then how many more there were.
_RESULT_LINES = 20


@dataclass(frozen=True, slots=True, kw_only=True)
class Said:
    """A prompt (`by_user`) or an answer of the model."""

    text: str
    by_user: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Called:
    """A tool call and its result ("" and not `answered` when it has none)."""

    name: str
    input: Mapping[str, Any]
    result: str
    is_error: bool
    answered: bool


Item = Said | Called


def conversation(messages: Sequence[Message]) -> Iterator[Item]:
    """Yield what a transcript says, in order: prompts, answers, tool calls with results.

    Only the first text of a user message is the prompt: what follows it (an attached file,
    a hook's context) was added for the model.
    """
    from aimon_core.llm import TextBlock, ToolResultBlock, ToolUseBlock

    results = {block.tool_use_id: block for message in messages if message.role == "user"
               for block in message.content if isinstance(block, ToolResultBlock)}
    for message in messages:
        if message.role == "user":
            first = next((b.text for b in message.content if isinstance(b, TextBlock)), "")
            if first.strip():
                yield Said(text=first, by_user=True)
            continue
        for block in message.content:
            match block:
                case TextBlock(text=text) if text.strip():
                    yield Said(text=text, by_user=False)
                case ToolUseBlock(id=tool_id, name=name, input=tool_input):
                    found = results.get(tool_id)
                    yield Called(name=name, input=tool_input,
                                 result=found.text if found is not None else "",
                                 is_error=found is not None and found.is_error,
                                 answered=found is not None)
                case _:
                    pass


def shell_call(text: str) -> Called | None:
    """Return a prompt that records a `!command` as the Bash call it ran, else None."""
    if not text.startswith("<bash-input>"):
        return None
    command, _, rest = text.removeprefix("<bash-input>").partition("</bash-input>")
    output = rest.partition("<bash-stdout>")[2].rpartition("</bash-stdout>")[0]
    interrupted = output.endswith("(interrupted by the user)")
    return Called(name="Bash", input={"command": command}, result=output.strip(),
                  is_error=interrupted, answered=True)


def export_markdown(live: LiveSession, now: datetime | None = None) -> str:
    """Return the session's conversation as a Markdown document."""
    when = (now or datetime.now(UTC)).astimezone().strftime("%Y-%m-%d %H:%M")
    lines = [f"# aimon session {live.id}", "",
             f"Project `{live.project_root}` · model {live.runtime.model} · exported {when}", ""]
    for item in conversation(live.record.transcript.messages):
        match item:
            case Said(text=text, by_user=True) if (shell := shell_call(text)) is not None:
                lines += ["## You", "", f"`!{shell.input['command']}`", "",
                          *_call_lines(shell, live)]
            case Said(text=text, by_user=True):
                lines += ["## You", "", text.strip(), ""]
            case Said(text=text):
                lines += ["## aimon", "", text.strip(), ""]
            case Called() as call:
                lines += _call_lines(call, live)
    return "\n".join(lines).rstrip() + "\n"


def _call_lines(call: Called, live: LiveSession) -> list[str]:
    from aimon_core.tools import call_label

    tool = live.runtime.tools.get(call.name)
    label = call_label(call.name, call.input, tool.describe if tool else None,
                       live.project_root)
    return [f"**{'✗' if call.is_error else '●'} {label}**", "",
            *_fenced(call.result or "(no result)"), ""]


def _fenced(text: str) -> list[str]:
    rows = text.rstrip("\n").splitlines() or [""]
    more = len(rows) - _RESULT_LINES
    rows = rows[:_RESULT_LINES] + ([f"… {more} more lines"] if more > 0 else [])
    fence = "````" if any(row.startswith("```") for row in rows) else "```"
    return [fence, *rows, fence]


def last_answer(messages: Sequence[Message]) -> str:
    """Return the model's last answer: the text of its last message that has any."""
    return next((m.text for m in reversed(messages) if m.role == "assistant" and m.text.strip()),
                "")


async def _export(args: str, host: CommandHost) -> CommandOutcome:
    live = await host.live_session()
    if not live.record.transcript.messages:
        return CommandOutcome.message("Nothing to export: the conversation is empty.")
    path, exists = await asyncio.to_thread(_target, args.strip(), live)
    if exists and not await host.confirm(f"{path} exists. Overwrite it?", ""):
        return CommandOutcome.message("Nothing exported.")
    from aimon_core._atomic import write_atomic

    text = export_markdown(live)
    try:
        await asyncio.to_thread(write_atomic, path, text.encode("utf-8"))
    except OSError as exc:
        raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None
    return CommandOutcome.message(f"Exported the conversation to {path} "
                                  f"({len(text.splitlines()):,} lines of Markdown).")


def _target(named: str, live: LiveSession) -> tuple[Path, bool]:
    """Return the file /export writes (`named`, or one named after the session) and whether
    it exists; raise CommandError for a folder."""
    path = Path(named).expanduser() if named else live.project_root / f"aimon-{live.id}.md"
    if not path.is_absolute():
        path = live.tool_context.cwd / path
    if path.is_dir():
        raise CommandError(f"{path} is a folder: name a file to write.")
    return path, path.exists()


async def _copy(args: str, host: CommandHost) -> CommandOutcome:
    if args:
        raise CommandError("/copy takes no arguments: it copies the last answer.")
    live = await host.live_session()
    answer = last_answer(live.record.transcript.messages)
    if not answer:
        return CommandOutcome.message("Nothing to copy: the model has not answered yet.")
    # A host with a clipboard (the REPL) copies it and says where it went; without one
    # (print mode) the answer is the output, for a pipe to take.
    copy = getattr(host, "copy_text", None)
    if not callable(copy):
        return CommandOutcome.message(answer)
    return CommandOutcome.message(str(await copy(answer)))


def export_commands() -> tuple[SlashCommand, ...]:
    """Return /export and /copy."""
    return (
        SlashCommand(name="export", description="Write the conversation to a Markdown file",
                     run=_export, usage=EXPORT_USAGE),
        SlashCommand(name="copy", description="Copy the last answer to the clipboard",
                     run=_copy),
    )
