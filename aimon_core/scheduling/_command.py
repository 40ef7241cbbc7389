"""`/schedule`: the routines from inside a session.

The command speaks to the scheduling engine through the service protocol's `schedule/*`
methods (`ScheduleCall`): in a session the service hosts, straight to its handlers; in the
REPL, through a client of the service. Registering it loads nothing more: the REPL starts
with it (what a call needs is imported when it runs).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aimon_core.command import CommandHost, CommandOutcome, CommandRegistry

# Calls one `schedule/*` method of the service protocol; returns its result, raises on error.
ScheduleCall = Callable[[str, Mapping[str, Any]], Awaitable[Any]]


_USAGE = ("/schedule [list | runs NAME | run NAME | pause NAME|--all | resume NAME | rm NAME "
          "| add NAME --cron EXPR|--every D|--at TIME|--in D PROMPT]")


def register_schedule(commands: CommandRegistry | None, call: ScheduleCall) -> None:
    """Give a runtime's commands `/schedule` (once), speaking through `call`."""
    from aimon_core.command import SlashCommand

    if commands is None or commands.get("schedule") is not None:
        return

    async def schedule(args: str, host: CommandHost) -> CommandOutcome:
        return await run_schedule(args, host, call)

    commands.register(SlashCommand(
        name="schedule", usage=_USAGE, run=schedule,
        description="List, add, run, pause, resume or remove routines (prompts that run on "
                    "a schedule in the background service)"), system=True)


async def run_schedule(args: str, host: CommandHost, call: ScheduleCall) -> CommandOutcome:
    """Carry out `/schedule ARGS`."""
    from aimon_core.command import CommandOutcome
    from aimon_core.scheduling._report import list_lines, runs_lines
    from aimon_core.scheduling._trigger import TriggerError

    words = _words(args)
    verb, rest = (words[0][0], [word for word, _ in words[1:]]) if words else ("list", [])
    try:
        match verb, rest:
            case "list", []:
                done = await call("schedule/list", {})
                return CommandOutcome.message("\n".join(list_lines(done["routines"])))
            case "runs", [name]:
                done = await call("schedule/runs", {"name": name})
                return CommandOutcome.message("\n".join(runs_lines(done["runs"])))
            case "run", [name]:
                done = await call("schedule/run", {"name": name, "wait": False})
                return CommandOutcome.message(f"Started a run of {name} ({done['run']['id']}); "
                                              f"/schedule runs {name} shows it.")
            case "pause", ["--all"]:
                done = await call("schedule/pause", {"all": True})
                return CommandOutcome.message(f"Paused {len(done['paused'])} routine(s) and "
                                              "stopped their runs.")
            case ("pause" | "resume" | "rm") as what, [name]:
                method = {"rm": "schedule/remove"}.get(what, f"schedule/{what}")
                await call(method, {"name": name})
                return CommandOutcome.message(f"{name}: {_DONE[what]}.")
            case "add", [name, *_]:
                return await _add(name, args, words[2:], host, call)
    except (TriggerError, ValueError) as exc:
        return CommandOutcome.error(str(exc))
    except Exception as exc:  # the service refused: its message says why
        return CommandOutcome.error(f"{getattr(exc, 'message', None) or exc}")
    return CommandOutcome.error(f"usage: {_USAGE}")


_WORD = re.compile(r"""\s*('([^']*)'|"([^"]*)"|(\S+))""")


def _words(text: str) -> list[tuple[str, int]]:
    """Return the words of `text` (quotes group, as in a shell) with where each starts."""
    found, position = [], 0
    while (match := _WORD.match(text, position)) is not None:
        word = next(group for group in match.groups()[1:] if group is not None)
        found.append((word, match.start(1)))
        position = match.end()
    return found


_DONE = {"pause": "paused", "resume": "resumed", "rm": "removed"}
_TRIGGER_OPTIONS = {"--cron": "cron", "--every": "every", "--at": "at", "--in": "in_",
                    "--tz": "zone"}


async def _add(name: str, text: str, words: list[tuple[str, int]], host: CommandHost,
               call: ScheduleCall) -> CommandOutcome:
    """`/schedule add NAME OPTIONS PROMPT`: the prompt is the rest of the line, as typed."""
    from aimon_core.command import CommandOutcome
    from aimon_core.scheduling._report import local_time
    from aimon_core.scheduling._request import AddChoice, TriggerChoice, add_request

    options: dict[str, str] = {}
    index, prompt = 0, ""
    while index < len(words):
        word, start = words[index]
        if word in _TRIGGER_OPTIONS and index + 1 < len(words):
            options[_TRIGGER_OPTIONS[word]] = words[index + 1][0]
            index += 2
            continue
        prompt = text[start:]
        break
    live = host.live
    if live is None:
        return CommandOutcome.error("The session is still opening; try again in a moment.")
    choice = AddChoice(name=name, prompt=prompt, project=str(live.project_root),
                       trigger=TriggerChoice(**options))
    done = await call("schedule/add", add_request(choice))
    return CommandOutcome.message(f"Added {name}: {done['trigger_text']}; next run "
                                  f"{local_time(done.get('next_run'))}.")
