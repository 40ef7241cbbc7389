"""Telling a person that a run ended: a line for the log and a desktop notification.

The desktop notification is sent with `notify-send` (libnotify) where it is installed and a
desktop session is reachable (`DISPLAY`, `WAYLAND_DISPLAY` or `DBUS_SESSION_BUS_ADDRESS`);
elsewhere (a server, CI) nothing is sent. Hooks are told in the run's session (`_runner.py`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import Mapping

from aimon_core.scheduling._routine import Routine, RoutineRun, RunOutcome

log = logging.getLogger(__name__)

_DESKTOP_VARIABLES = ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS")


def run_line(routine: Routine, run: RoutineRun) -> str:
    """Return one line telling how a run ended."""
    text = f"routine {routine.name}: {run.outcome.value}"
    if run.outcome is not RunOutcome.SKIPPED and run.cost_usd:
        text += f" (${run.cost_usd:.4f})"
    if run.message:
        text += f": {' '.join(run.message.split())[:160]}"
    return text


def desktop_command(title: str, body: str, env: Mapping[str, str] | None = None
                    ) -> list[str] | None:
    """Return the command that shows a desktop notification here, or None if none can."""
    env = os.environ if env is None else env
    program = shutil.which("notify-send", path=env.get("PATH"))
    if program is None or not any(env.get(name) for name in _DESKTOP_VARIABLES):
        return None
    return [program, "--app-name=aimon", "--", title, body]


class Notifier:
    """Tells the end of each run: the log, and the desktop where it has one."""

    def __init__(self, *, desktop: bool = True) -> None:
        self._desktop = desktop
        self._tasks: set[asyncio.Task[None]] = set()

    def __call__(self, routine: Routine, run: RoutineRun) -> None:
        """Tell that `run` ended (a RunListener)."""
        line = run_line(routine, run)
        log.info("%s", line)
        if not self._desktop or run.outcome is RunOutcome.SKIPPED:
            return
        command = desktop_command(f"aimon routine {routine.name}", line)
        if command is not None:
            task = asyncio.get_running_loop().create_task(_show(command))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def aclose(self) -> None:
        """Wait for the notifications being shown."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


async def _show(command: list[str]) -> None:
    try:
        process = await asyncio.create_subprocess_exec(
            *command, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        log.info("no desktop notification: %s", exc)
        return
    try:
        await asyncio.wait_for(process.wait(), 10.0)
    except TimeoutError:
        process.kill()
        await process.wait()
