"""The service's settings: the `service` block of the user's settings file.

    {"service": {"idleMinutes": 30, "rewake": true,
                 "routines": {"maxConcurrent": 2, "runsPerDay": 48, "costPerDayUsd": 5,
                              "tokensPerDay": 2000000,
                              "store": "postgresql://aimon@db/aimon"}}}

`idleMinutes`: how long the service waits with no client connected and no session working
before it exits (default 30; 0: never). `rewake`: wake a session when its background work
finishes while it is idle (default true). `routines`: the limits over all routines (runs at
once, runs and cost in any 24 hours; `aimon_core.scheduling.limits_from_settings`) and where
they are kept (`store`: a PostgreSQL connection string, for services that share them; by
default the service's SQLite file). Only the user's file counts: the service is the user's,
not a project's.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aimon_core.scheduling import SchedulingLimits

log = logging.getLogger(__name__)

DEFAULT_IDLE_MINUTES = 30.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceSettings:
    """How the service runs."""

    idle_seconds: float = DEFAULT_IDLE_MINUTES * 60
    rewake: bool = True
    routines: SchedulingLimits = field(default_factory=lambda: _limits())
    routines_store: str = ""  # a PostgreSQL connection string; "": the SQLite file


def _limits() -> SchedulingLimits:
    from aimon_core.scheduling import SchedulingLimits

    return SchedulingLimits()


def service_settings(path: Path | None = None) -> tuple[ServiceSettings, list[str]]:
    """Return the settings in the user's settings file, and what in it was not understood."""
    if path is None:
        from aimon_core.session import user_config_dir

        path = user_config_dir() / "settings.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ServiceSettings(), []
    except (OSError, ValueError) as exc:
        return ServiceSettings(), [f"{path}: not read ({exc}); the service's defaults apply"]
    block = data.get("service") if isinstance(data, dict) else None
    if block is None:
        return ServiceSettings(), []
    if not isinstance(block, dict):
        return ServiceSettings(), [f"{path}: service must be an object; defaults apply"]
    problems: list[str] = []
    settings = ServiceSettings()
    idle = block.get("idleMinutes", DEFAULT_IDLE_MINUTES)
    if isinstance(idle, int | float) and not isinstance(idle, bool) and idle >= 0:
        settings = ServiceSettings(idle_seconds=float(idle) * 60, rewake=settings.rewake)
    else:
        problems.append(f"{path}: service.idleMinutes must be a number >= 0")
    rewake = block.get("rewake", True)
    if isinstance(rewake, bool):
        settings = ServiceSettings(idle_seconds=settings.idle_seconds, rewake=rewake)
    else:
        problems.append(f"{path}: service.rewake must be true or false")
    if "routines" in block:
        from aimon_core.scheduling import limits_from_settings

        routines = block["routines"]
        store = routines.pop("store", "") if isinstance(routines, dict) else ""
        limits, wrong = limits_from_settings(routines)
        if isinstance(store, str):
            settings = replace(settings, routines=limits, routines_store=store)
        else:
            settings = replace(settings, routines=limits)
            wrong.append("store: must be a PostgreSQL connection string")
        problems.extend(f"{path}: service.routines: {text}" for text in wrong)
    problems.extend(f"{path}: service.{key}: unknown key" for key in block
                    if key not in ("idleMinutes", "rewake", "routines"))
    return settings, problems
