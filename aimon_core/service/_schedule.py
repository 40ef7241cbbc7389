"""The service's routines: its scheduling engine and the `schedule/*` methods.

The engine belongs to the service's application scope: made with the service, started when
it listens, closed at its shutdown (runs still going are recorded as interrupted). Its
routines and runs are kept in the service's SQLite file, so they survive restarts; the
service does not leave when idle while a routine is scheduled.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aimon_core.scheduling import (
    EngineOptions,
    Notifier,
    RoutineError,
    SchedulingEngine,
    SessionRoutineRunner,
    TriggerError,
    UnknownRoutineError,
    routine_from_json,
    routine_report,
    run_to_json,
)
from aimon_core.service._wire import ErrorCode, RemoteError

if TYPE_CHECKING:
    from aimon_core.runtime import AgentAssembly, Application, RuntimeParts
    from aimon_core.scheduling import RoutineStore, RunLog
    from aimon_core.service._paths import ServicePaths
    from aimon_core.service._server import ServiceStores
    from aimon_core.service._settings import ServiceSettings

Handler = Callable[[SchedulingEngine, Mapping[str, Any]], Awaitable[Any]]
SCHEDULE_METHODS: dict[str, Handler] = {}


def make_engine(app: Application, paths: ServicePaths, stores: ServiceStores,
                notifier: Notifier, settings: ServiceSettings
                ) -> tuple[SchedulingEngine, RuntimeParts]:
    """Return the service's engine on its stores (those given; else PostgreSQL if the
    settings name one; else the service's SQLite file), and the parts its runtimes get: the
    model's three scheduling tools, answered by the engine."""
    from aimon_core.runtime import RuntimeParts
    from aimon_core.scheduling import schedule_tools, vet_origin

    routines, runs = _stores(paths, stores, settings.routines_store)

    engines: list[SchedulingEngine] = []

    async def call(method: str, params: Mapping[str, Any]) -> Any:
        return await call_schedule(engines[0], method, params)

    parts = RuntimeParts(tools=schedule_tools(call))
    holder = f"aimon serve {socket.gethostname()} {paths.folder}"
    engine = SchedulingEngine(
        routines, runs, SessionRoutineRunner(app, holder="aimon routine", parts=parts),
        options=EngineOptions(holder=holder, on_run_end=notifier, vet=vet_origin,
                              limits=settings.routines))
    engines.append(engine)
    return engine, parts


def _stores(paths: ServicePaths, stores: ServiceStores, dsn: str
            ) -> tuple[RoutineStore, RunLog]:
    from aimon_core.scheduling import SQLiteRoutineStore, SQLiteRunLog

    if stores.routines is not None and stores.runs is not None:
        return stores.routines, stores.runs
    if dsn:
        from aimon_core.scheduling import PostgresRoutineStore, PostgresRunLog

        return PostgresRoutineStore(dsn), PostgresRunLog(dsn)
    return SQLiteRoutineStore(paths.database), SQLiteRunLog(paths.database)


def _method(name: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        SCHEDULE_METHODS[name] = handler
        return handler

    return register


async def call_schedule(engine: SchedulingEngine, method: str, params: Mapping[str, Any]
                        ) -> Any:
    """Run one `schedule/*` method; raise RemoteError with the code a client is told."""
    handler = SCHEDULE_METHODS.get(method)
    if handler is None:
        raise RemoteError(ErrorCode.METHOD_NOT_FOUND, f"no method {method!r}")
    try:
        return await handler(engine, params)
    except UnknownRoutineError as exc:
        raise RemoteError(ErrorCode.UNKNOWN_ROUTINE, str(exc)) from None
    except (RoutineError, TriggerError) as exc:
        raise RemoteError(ErrorCode.INVALID_PARAMS, str(exc)) from None


def register_schedule_command(engine: SchedulingEngine, assembly: AgentAssembly) -> None:
    """Give the runtime's sessions `/schedule`, answered by the engine here."""
    from aimon_core.scheduling import register_schedule

    async def call(method: str, params: Mapping[str, Any]) -> Any:
        return await call_schedule(engine, method, params)

    register_schedule(assembly.commands, call)


def _not_from_a_run(engine: SchedulingEngine, params: Mapping[str, Any]) -> None:
    """Refuse a change asked from the session of a routine's run (a routine never makes or
    removes routines: it could not be stopped by pausing it)."""
    asker = params.get("from_session")
    if asker and any(run.session_id == asker for run in engine.running()):
        raise RemoteError(ErrorCode.INVALID_REQUEST,
                          "a routine's run cannot schedule or cancel routines")


def _name(params: Mapping[str, Any]) -> str:
    name = params.get("name")
    if not isinstance(name, str) or not name:
        raise RemoteError(ErrorCode.INVALID_PARAMS, "name must be a non-empty string")
    return name


async def _report(engine: SchedulingEngine, name: str) -> dict[str, Any]:
    routine = await asyncio.to_thread(engine.routines.get, name)
    if routine is None:
        raise UnknownRoutineError(name)
    runs = await asyncio.to_thread(engine.log.runs, name, limit=1000)
    running = {run.routine: run for run in engine.running()}
    return routine_report(routine, runs, running.get(name))


def _is_folder(path: Path) -> bool:
    return path.is_absolute() and path.is_dir()


@_method("schedule/add")
async def _add(engine: SchedulingEngine, params: Mapping[str, Any]) -> dict[str, Any]:
    data = params.get("routine")
    if not isinstance(data, Mapping):
        raise RemoteError(ErrorCode.INVALID_PARAMS, "routine must be an object")
    _not_from_a_run(engine, params)
    routine = routine_from_json(data)
    if not _is_folder(Path(routine.project)):
        raise RemoteError(ErrorCode.INVALID_PARAMS,
                          f"project {routine.project!r} is not an absolute folder")
    if routine.origin:  # a file's routine: scheduled only as its trusted file reads now
        from aimon_core.scheduling import vet_origin

        why = await asyncio.to_thread(vet_origin, routine)
        if why:
            raise RemoteError(ErrorCode.INVALID_PARAMS, why.removeprefix("paused: "))
    added = await engine.add(routine, replace_existing=params.get("replace") is True)
    return routine_report(added, ())


@_method("schedule/list")
async def _list(engine: SchedulingEngine, params: Mapping[str, Any]) -> dict[str, Any]:
    routines = await asyncio.to_thread(engine.routines.all)
    return {"routines": [await _report(engine, routine.name) for routine in routines],
            "running": [run_to_json(run) for run in engine.running()]}


@_method("schedule/runs")
async def _runs(engine: SchedulingEngine, params: Mapping[str, Any]) -> dict[str, Any]:
    name = _name(params)
    limit = params.get("limit", 20)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise RemoteError(ErrorCode.INVALID_PARAMS, "limit must be a whole number above 0")
    runs = await asyncio.to_thread(engine.log.runs, name, limit=limit)
    if not runs and await asyncio.to_thread(engine.routines.get, name) is None:
        raise UnknownRoutineError(name)
    return {"runs": [run_to_json(run) for run in runs]}


@_method("schedule/run")
async def _run(engine: SchedulingEngine, params: Mapping[str, Any]) -> dict[str, Any]:
    name = _name(params)
    task = await engine.run_now(name)
    if params.get("wait") is True:
        # A client that goes away does not stop the run: it was asked for and goes on.
        return {"run": run_to_json(await asyncio.shield(task))}
    running = {run.routine: run for run in engine.running()}
    found = running.get(name)
    return {"run": run_to_json(found) if found is not None else None}


@_method("schedule/pause")
async def _pause(engine: SchedulingEngine, params: Mapping[str, Any]) -> dict[str, Any]:
    if params.get("all") is True:
        return {"paused": list(await engine.pause_all())}
    name = _name(params)
    await engine.pause(name)
    return {"paused": [name], "routine": await _report(engine, name)}


@_method("schedule/resume")
async def _resume(engine: SchedulingEngine, params: Mapping[str, Any]) -> dict[str, Any]:
    from aimon_core.scheduling import RoutineState

    if params.get("all") is True:
        paused = [routine.name for routine in await asyncio.to_thread(engine.routines.all)
                  if routine.state is RoutineState.PAUSED]
        for name in paused:
            await engine.resume(name)
        return {"resumed": paused}
    name = _name(params)
    await engine.resume(name)
    return {"resumed": [name], "routine": await _report(engine, name)}


@_method("schedule/remove")
async def _remove(engine: SchedulingEngine, params: Mapping[str, Any]) -> dict[str, Any]:
    name = _name(params)
    _not_from_a_run(engine, params)
    if not await engine.remove(name):
        raise UnknownRoutineError(name)
    return {"removed": name}
