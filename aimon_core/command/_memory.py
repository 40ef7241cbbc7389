"""/memory: list, add, accept, edit and forget what aimon remembers; `# text` adds a note."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from aimon_core.command._registry import CommandHost, CommandOutcome, SlashCommand

if TYPE_CHECKING:
    from aimon_core.memory import MemoryBook, Observation

USAGE = ("/memory [list | add [--user|--agent] TEXT | accept ID|all | edit ID TEXT | "
         "forget ID]")


def memory_shorthand(prompt: str) -> str | None:
    """Return the note of a `# text` prompt (as in Claude Code), else None.

    `#` then a space and text is a note; a Markdown heading of two or more `#`, or `#` alone,
    goes to the model as typed.
    """
    if not prompt.startswith("# ") or "\n" in prompt.strip():
        return None
    note = prompt[2:].strip()
    return note or None


def listing(book: MemoryBook) -> str:
    """Return the accepted memory and the inbox, one observation a line with its id."""
    accepted, inbox = book.accepted(), book.inbox()
    if not accepted and not inbox:
        return ("Nothing remembered yet. Add a note with `# text` or /memory add TEXT; the "
                "model proposes with Remember, and you accept here.")
    lines = ["Remembered (in every prompt that fits):"] if accepted else []
    lines += [_line(o) for o in accepted]
    if inbox:
        lines += ["", "Proposed, waiting for you (/memory accept ID, /memory forget ID):"]
        lines += [_line(o) for o in inbox]
    return "\n".join(lines).strip()


def _line(entry: Observation) -> str:
    return f"  {entry.id}  ({entry.scope.value}, {entry.source.value}) {entry.text}"


def memory_command(book: MemoryBook) -> SlashCommand:
    """Return /memory bound to one owner's memory."""

    async def run(args: str, host: CommandHost) -> CommandOutcome:
        return await asyncio.to_thread(memory_action, book, args)  # files, under a lock

    return SlashCommand(name="memory", description="What aimon remembers: list, add, accept, "
                        "edit, forget", run=run, usage=USAGE)


def memory_action(book: MemoryBook, args: str) -> CommandOutcome:
    """Do what `/memory ARGS` asks and say what was done."""
    from aimon_core.memory import MemoryScope

    verb, _, rest = args.strip().partition(" ")
    rest = rest.strip()
    try:
        match verb:
            case "" | "list":
                return CommandOutcome.message(listing(book))
            case "add":
                scope = MemoryScope.PROJECT
                for flag, chosen in (("--user", MemoryScope.USER), ("--agent", MemoryScope.AGENT)):
                    if rest.startswith(flag + " "):
                        scope, rest = chosen, rest[len(flag):].strip()
                entry = book.remember(rest, scope)
                return CommandOutcome.message(f"Remembered ({scope.value}, {entry.id}): "
                                              f"{entry.text}")
            case "accept":
                ids = [o.id for o in book.inbox()] if rest == "all" else rest.split()
                done = [o.id for i in ids if (o := book.accept(i)) is not None]
                missing = [i for i in ids if i not in done]
                if missing:
                    return CommandOutcome.error(f"no proposal {', '.join(missing)}; "
                                                "/memory lists them")
                return CommandOutcome.message(f"Accepted {', '.join(done) or 'nothing'}.")
            case "edit":
                ident, _, text = rest.partition(" ")
                if book.store.update(book.owner, ident, text=text) is None or not text.strip():
                    return CommandOutcome.error(f"usage: /memory edit ID TEXT (no {ident!r}?)")
                return CommandOutcome.message(f"Changed {ident}.")
            case "forget" | "rm":
                if not book.store.remove(book.owner, rest):
                    return CommandOutcome.error(f"nothing remembered as {rest!r}")
                return CommandOutcome.message(f"Forgot {rest}.")
            case _:
                return CommandOutcome.error(f"usage: {USAGE}")
    except (ValueError, OSError) as exc:
        return CommandOutcome.error(f"memory: {exc}")
