"""`/bg` in the REPL: hand the current session to the service and leave it running there."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aimon_core.command import CommandHost, CommandOutcome, CommandRegistry
    from aimon_core.runtime import RuntimeFlags


def register_bg(commands: CommandRegistry | None, flags: RuntimeFlags) -> None:
    """Give the REPL's commands `/bg [PROMPT]` (once)."""
    from aimon_core.command import SlashCommand

    if commands is None or commands.get("bg") is not None:
        return

    async def bg(args: str, host: CommandHost) -> CommandOutcome:
        return await background(args.strip(), host, flags)

    commands.register(SlashCommand(
        name="bg", usage="/bg [PROMPT]", run=bg,
        description="Move this session to the background service (with PROMPT as its next "
                    "turn); aimon attach ID comes back to it"), system=True)


async def background(prompt: str, host: CommandHost, flags: RuntimeFlags) -> CommandOutcome:
    """Close the session here, have the service host it (and run `prompt`), leave the REPL."""
    from aimon_core.command import CommandOutcome

    live = host.live
    if live is None:
        return CommandOutcome.error("The session is still opening; try again in a moment.")
    if live.turn_running():
        return CommandOutcome.error("A turn is running: let it finish or interrupt it (Esc), "
                                    "then /bg.")
    if not live.is_stored and not prompt:
        return CommandOutcome.error("Nothing to move yet: /bg PROMPT runs PROMPT in the "
                                    "background (aimon --bg does the same from the shell).")
    fresh = not live.is_stored
    session_id, root = str(live.id), str(live.project_root)
    await live.close()  # its lease goes, so the service can take the session
    try:
        session_id = await asyncio.to_thread(_hand_over, session_id, root, prompt, flags, fresh)
    except Exception as exc:  # the service could not start or refused: say so, stay here
        return CommandOutcome.error(f"The service did not take the session: {exc}. It is "
                                    f"stored: aimon --resume {session_id}")
    host.request_exit()
    return CommandOutcome.message(f"{session_id} runs in the background service now: "
                                  f"aimon attach {session_id} comes back to it; aimon ps "
                                  "lists it.")


def _hand_over(session_id: str, root: str, prompt: str, flags: RuntimeFlags,
               fresh: bool) -> str:
    from aimon_cli._service_cli import connect

    flag_values: dict[str, Any] = {
        key: list(value) if isinstance(value, tuple) else value
        for key, value in dataclasses.asdict(flags).items() if value not in (None, ())}
    with connect(start=True, client_name="aimon /bg") as client:
        if not client.same_environment:
            raise RuntimeError("it runs with other model settings (aimon serve --stop, then "
                               "/bg again)")
        if fresh:  # never stored: a new session there
            session_id = client.call("session/new", {"cwd": root, "flags": flag_values})[
                "session_id"]
        params = {"session_id": session_id, "flags": flag_values}
        if prompt:
            client.call("session/send", {**params, "text": prompt})
        else:
            client.call("session/attach", {**params, "replay": False})
            client.call("session/detach", {"session_id": session_id})
    return session_id
