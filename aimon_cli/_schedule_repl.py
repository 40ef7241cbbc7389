"""`/schedule` in the REPL: the routines of the background service, through its client."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aimon_core.command import CommandRegistry


def register_schedule_here(commands: CommandRegistry | None) -> None:
    """Give the REPL's commands `/schedule` (once), answered by the service (started if none
    runs: it keeps and runs the routines)."""
    from aimon_core.scheduling import register_schedule

    async def call(method: str, params: Mapping[str, Any]) -> Any:
        return await asyncio.to_thread(_call, method, dict(params))

    register_schedule(commands, call)


def _call(method: str, params: dict[str, Any]) -> Any:
    # Imported here: the service's client and Typer stay off the REPL's start.
    from aimon_cli._service_cli import connect

    with connect(start=True, client_name="aimon /schedule") as client:
        return client.call(method, params)
