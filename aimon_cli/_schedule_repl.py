"""`/schedule` and the model's scheduling tools outside the service: through its client."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aimon_core.command import CommandRegistry
    from aimon_core.runtime import RuntimeParts


async def service_call(method: str, params: Mapping[str, Any]) -> Any:
    """Call a `schedule/*` method of the service (started if none runs: it keeps and runs
    the routines); a ScheduleCall for `/schedule` and the model's scheduling tools."""
    return await asyncio.to_thread(_call, method, dict(params))


def register_schedule_here(commands: CommandRegistry | None) -> None:
    """Give the REPL's commands `/schedule` (once), answered by the service."""
    from aimon_core.scheduling import register_schedule

    register_schedule(commands, service_call)


def schedule_parts() -> RuntimeParts:
    """Return the parts that give a runtime the model's three scheduling tools."""
    from aimon_core.runtime import RuntimeParts
    from aimon_core.scheduling import schedule_tools

    return RuntimeParts(tools=schedule_tools(service_call))


def _call(method: str, params: dict[str, Any]) -> Any:
    # Imported here: the service's client and Typer stay off the REPL's start.
    from aimon_cli._service_cli import connect

    with connect(start=True, client_name="aimon /schedule") as client:
        return client.call(method, params)
