"""The service protocol's methods: what each request does (docs/PROTOCOL.md lists them)."""

from __future__ import annotations

import asyncio
import io
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from aimon_core.service._router import HeldElsewhere
from aimon_core.service._stores import Signal
from aimon_core.service._values import from_wire, to_wire
from aimon_core.service._wire import PROTOCOL_VERSION, ErrorCode, RemoteError

if TYPE_CHECKING:
    from aimon_core.runtime import AgentAssembly, RuntimeFlags
    from aimon_core.service._hosted import HostedSession
    from aimon_core.service._server import Connection, Service

Handler = Callable[["Service", "Connection", dict[str, Any]], Awaitable[Any]]
_METHODS: dict[str, Handler] = {}


def _method(name: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        _METHODS[name] = handler
        return handler

    return register


async def dispatch(service: Service, connection: Connection, method: str,
                   params: dict[str, Any]) -> Any:
    """Run one request; raise RemoteError with the code the client is told."""
    if method != "initialize" and not connection.initialized:
        raise RemoteError(ErrorCode.INVALID_REQUEST, "send initialize first")
    if method.startswith("schedule/"):
        from aimon_core.service._schedule import call_schedule

        return await call_schedule(service.scheduling, method, params)
    handler = _METHODS.get(method)
    if handler is None:
        raise RemoteError(ErrorCode.METHOD_NOT_FOUND, f"no method {method!r}")
    return await handler(service, connection, params)


# ----------------------------------------------------------------------------- params


def _text(params: Mapping[str, Any], key: str, *, required: bool = True) -> str:
    value = params.get(key)
    if isinstance(value, str) and (value or not required):
        return value
    if value is None and not required:
        return ""
    raise RemoteError(ErrorCode.INVALID_PARAMS, f"{key} must be a non-empty string")


def _flag(params: Mapping[str, Any], key: str) -> bool:
    value = params.get(key, False)
    if not isinstance(value, bool):
        raise RemoteError(ErrorCode.INVALID_PARAMS, f"{key} must be true or false")
    return value


_FLAG_FIELDS = ("provider", "model", "base_url", "agent", "permission_mode")


def runtime_flags(params: Mapping[str, Any]) -> RuntimeFlags:
    """Return the RuntimeFlags a request names (`flags`: an object of the flag fields)."""
    from aimon_core.runtime import RuntimeFlags

    raw = params.get("flags") or {}
    if not isinstance(raw, dict):
        raise RemoteError(ErrorCode.INVALID_PARAMS, "flags must be an object")
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _FLAG_FIELDS and (value is None or isinstance(value, str)):
            values[key] = value
        elif key in ("allowed", "disallowed") and isinstance(value, list) \
                and all(isinstance(item, str) for item in value):
            values[key] = tuple(value)
        elif key == "sandbox" and isinstance(value, bool):
            values[key] = value
        else:
            raise RemoteError(ErrorCode.INVALID_PARAMS, f"flags.{key} is not a flag")
    return RuntimeFlags(**values)


def _project(params: Mapping[str, Any]) -> str:
    cwd = _text(params, "cwd")
    path = Path(cwd)
    if not path.is_absolute() or not path.is_dir():
        raise RemoteError(ErrorCode.INVALID_PARAMS, f"cwd {cwd!r} is not an absolute folder")
    return str(path.resolve())


def hosted_only(service: Service, params: Mapping[str, Any]) -> HostedSession:
    """Return the hosted session the params name (a stored one is not opened for this)."""
    hosted = find_hosted(service, _text(params, "session_id"))
    if hosted is None:
        raise RemoteError(ErrorCode.UNKNOWN_SESSION, "the service hosts no such session")
    return hosted


def find_hosted(service: Service, text: str) -> HostedSession | None:
    """Return the hosted session `text` names: its id, or the end or start of it."""
    if text in service.sessions:
        return service.sessions[text]
    found = [s for sid, s in service.sessions.items()
             if text and (sid.endswith(text) or sid.startswith(text))]
    if len(found) > 1:
        raise RemoteError(ErrorCode.UNKNOWN_SESSION, f"{text!r} matches {len(found)} hosted "
                          "sessions: give more of the id")
    return found[0] if found else None


async def session_for(service: Service, params: Mapping[str, Any]) -> HostedSession:
    """Return the hosted session the params name, hosting a stored one if need be."""
    found, _ = await routed_session(service, params)
    if isinstance(found, HeldElsewhere):
        raise RemoteError(ErrorCode.SESSION_UNAVAILABLE, (
            f"session {found.session_id!r} is in use by {found.holder}; `aimon send` and "
            "`aimon stop` reach it there, and it can be opened here once that service "
            "releases it (or its lease expires)"))
    return found


async def routed_session(service: Service, params: Mapping[str, Any]
                         ) -> tuple[HostedSession | HeldElsewhere, str]:
    """Return the session the params name, hosted here (claimed if it is free) or held by
    another service; and its project."""
    from aimon_core.runtime import RuntimeSetupError
    from aimon_core.session import SessionError, parse_session_id

    text = _text(params, "session_id")
    hosted = find_hosted(service, text)
    if hosted is not None:
        return hosted, str(hosted.live.project_root)
    try:
        session_id = parse_session_id(text)
        record = await asyncio.to_thread(service.app.store.records.load, session_id)
        found = await service.router.open(session_id, project_root=record.project_root,
                                          flags=runtime_flags(params))
    except ValueError:
        raise RemoteError(ErrorCode.UNKNOWN_SESSION, f"no session {text!r}") from None
    except SessionError as exc:
        raise RemoteError(ErrorCode.SESSION_UNAVAILABLE, str(exc)) from None
    except RuntimeSetupError as exc:
        raise RemoteError(ErrorCode.SETUP_FAILED, str(exc)) from None
    return found, record.project_root


# ---------------------------------------------------------------------------- methods


@_method("initialize")
async def _initialize(service: Service, connection: Connection, params: dict[str, Any]
                      ) -> dict[str, Any]:
    from aimon_core import __version__

    if params.get("protocol") != PROTOCOL_VERSION:
        raise RemoteError(ErrorCode.VERSION_MISMATCH,
                          f"the service speaks protocol {PROTOCOL_VERSION}",
                          data={"protocol": PROTOCOL_VERSION, "version": __version__})
    if not connection.trusted:
        if not service.check_token(params.get("token")):
            connection.writer.close()
            raise RemoteError(ErrorCode.INVALID_REQUEST, "wrong token")
        connection.trusted = True
    connection.initialized = True
    return {"protocol": PROTOCOL_VERSION, "version": __version__, "pid": os.getpid(),
            "started": service.started, "environment": service.fingerprint,
            "print": service.options.print_runner is not None}


@_method("session/new")
async def _new(service: Service, connection: Connection, params: dict[str, Any]
               ) -> dict[str, Any]:
    from aimon_core.runtime import RuntimeSetupError
    from aimon_core.session import SessionError

    try:
        hosted = await service.host(project_root=_project(params), flags=runtime_flags(params),
                                    unattended=_flag(params, "unattended"))
    except RuntimeSetupError as exc:
        raise RemoteError(ErrorCode.SETUP_FAILED, str(exc)) from None
    except SessionError as exc:
        raise RemoteError(ErrorCode.SESSION_UNAVAILABLE, str(exc)) from None
    return hosted.summary()


@_method("session/attach")
async def _attach(service: Service, connection: Connection, params: dict[str, Any]
                  ) -> dict[str, Any]:
    hosted = await session_for(service, params)
    previous = connection.watching.pop(hosted.id, None)
    if previous is not None:
        previous()
    connection.watching[hosted.id] = hosted.watch(
        connection.number, lambda data: connection.notify("session/event", data))
    live = hosted.live
    commands = live.commands
    listed = [] if commands is None else [
        {"name": c.name, "description": c.description, "usage": c.synopsis}
        for c in (*commands.system(), *commands.custom())]
    replay = params.get("replay", True) is not False
    return {"session": hosted.summary(),
            "messages": to_wire(live.record.transcript.messages) if replay else [],
            "warnings": list(live.record.load_warnings),
            "pending": to_wire(live.pending_approvals()), "commands": listed}


@_method("session/detach")
async def _detach(service: Service, connection: Connection, params: dict[str, Any]
                  ) -> dict[str, Any]:
    hosted = find_hosted(service, _text(params, "session_id"))
    unwatch = connection.watching.pop(hosted.id, None) if hosted is not None else None
    if unwatch is not None:
        unwatch()
    return {"detached": unwatch is not None}


@_method("session/prompt")
async def _prompt(service: Service, connection: Connection, params: dict[str, Any]
                  ) -> dict[str, Any]:
    from aimon_core.live import LiveSessionClosedError

    hosted = await session_for(service, params)
    try:
        outcome, _ = hosted.live.offer_async(_text(params, "text"))
    except LiveSessionClosedError as exc:
        raise RemoteError(ErrorCode.SESSION_UNAVAILABLE, str(exc)) from None
    return {"outcome": outcome.value}


@_method("session/send")
async def _send(service: Service, connection: Connection, params: dict[str, Any]
                ) -> dict[str, Any]:
    found, project_root = await routed_session(service, params)
    session_id = found.session_id if isinstance(found, HeldElsewhere) else found.id
    text, key = _text(params, "text"), _text(params, "key", required=False)
    if key:
        first = await asyncio.to_thread(service.stores.idempotency.claim, session_id, key,
                                        {"delivered_at": time.time()})
        if first is not None:
            return {"session_id": session_id, "outcome": "duplicate", "first": dict(first)}
    sender = f"pid {connection.peer_pid or '?'}"
    if isinstance(found, HeldElsewhere):
        heard = await service.router.send(found, text, sender=sender, project_root=project_root,
                                          flags=runtime_flags(params))
        done: dict[str, Any] = {"session_id": session_id, "outcome": "routed",
                                "holder": found.holder, "heard": heard}
    else:
        done = {"session_id": session_id, "outcome": await found.deliver(text, sender=sender)}
    if key:  # delivered: a retry with this key gets this answer, however late
        await asyncio.to_thread(service.stores.idempotency.finish, session_id, key,
                                {"delivered_at": time.time(), "outcome": done["outcome"]})
    return done


@_method("session/stop")
async def _stop(service: Service, connection: Connection, params: dict[str, Any]
                ) -> dict[str, Any]:
    hosted = find_hosted(service, _text(params, "session_id"))
    if hosted is None:
        return await _stop_elsewhere(service, params)
    was_running = hosted.live.status().running_turn is not None
    signal = Signal.CLOSE if _flag(params, "close") else Signal.INTERRUPT
    heard = service.stores.signals.publish(hosted.id, signal)
    if signal is Signal.CLOSE:
        await service.release(hosted)
    return {"session_id": hosted.id, "interrupted": was_running and heard > 0,
            "closed": signal is Signal.CLOSE}


async def _stop_elsewhere(service: Service, params: Mapping[str, Any]) -> dict[str, Any]:
    """Interrupt a session another service holds (through the signal bus)."""
    from aimon_core.session import is_session_id

    text = _text(params, "session_id")
    if not is_session_id(text):
        raise RemoteError(ErrorCode.UNKNOWN_SESSION, "the service hosts no such session")
    heard = await service.router.stop(HeldElsewhere(session_id=text, holder="its holder"))
    if heard == 0:
        raise RemoteError(ErrorCode.UNKNOWN_SESSION, "no service hosts this session")
    return {"session_id": text, "interrupted": True, "closed": False, "routed": True}


@_method("session/answer")
async def _answer(service: Service, connection: Connection, params: dict[str, Any]
                  ) -> dict[str, Any]:
    from aimon_core.agent import ApprovalAnswer
    from aimon_core.service._wire import ProtocolError

    hosted = hosted_only(service, params)
    try:
        answer = from_wire(params.get("answer"))
    except ProtocolError as exc:
        raise RemoteError(ErrorCode.INVALID_PARAMS, str(exc)) from None
    if not isinstance(answer, ApprovalAnswer):
        raise RemoteError(ErrorCode.INVALID_PARAMS, "answer must be an ApprovalAnswer")
    return {"accepted": hosted.answer(_text(params, "request_id"), answer)}


@_method("session/rewakes")
async def _rewakes(service: Service, connection: Connection, params: dict[str, Any]
                   ) -> dict[str, Any]:
    hosted = hosted_only(service, params)
    return {"text": hosted.rewakes.text(), "rewakes": to_wire(hosted.rewakes.all())}


@_method("sessions/list")
async def _list(service: Service, connection: Connection, params: dict[str, Any]
                ) -> dict[str, Any]:
    from aimon_core.scheduling import run_to_json

    # Routine runs of the last day, newest first: a run that ended shows in `aimon ps` too.
    runs = await asyncio.to_thread(service.scheduling.log.runs, since=time.time() - 86400,
                                   limit=10)
    return {"sessions": [hosted.summary() for hosted in service.sessions.values()],
            "routine_runs": [run_to_json(run) for run in runs]}


@_method("service/status")
async def _status(service: Service, connection: Connection, params: dict[str, Any]
                  ) -> dict[str, Any]:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"pid": os.getpid(), "started": service.started,
            "uptime_s": round(time.time() - service.started, 3),
            "sessions": len(service.sessions), "connections": len(service.connections),
            "max_rss_kb": usage.ru_maxrss, "cpu_s": round(usage.ru_utime + usage.ru_stime, 3),
            "idle_seconds": service.options.settings.idle_seconds}


@_method("service/shutdown")
async def _shutdown(service: Service, connection: Connection, params: dict[str, Any]
                    ) -> dict[str, Any]:
    service.stop()
    return {"stopping": True}


class _ToClient(io.TextIOBase):
    """A print run's stdout or stderr: each write goes to the client as `print/output`."""

    def __init__(self, connection: Connection, stream: str) -> None:
        self._connection = connection
        self._stream = stream

    def write(self, text: str) -> int:
        self._connection.notify("print/output", {"stream": self._stream, "text": text})
        return len(text)

    def isatty(self) -> bool:
        return False


@_method("print/run")
async def _print(service: Service, connection: Connection, params: dict[str, Any]
                 ) -> dict[str, Any]:
    runner = service.options.print_runner
    if runner is None:
        raise RemoteError(ErrorCode.NOT_OFFERED, "this service does not run print mode")
    params = {**params, "cwd": _project(params)}
    code = await runner(params, service.app, cast("TextIO", _ToClient(connection, "stdout")),
                        cast("TextIO", _ToClient(connection, "stderr")))
    return {"exit_code": code}


def register_service_commands(service: Service, assembly: AgentAssembly) -> None:
    """Give the runtime's sessions `/rewakes` (once per runtime)."""
    from aimon_core.command import CommandHost, CommandOutcome, SlashCommand

    commands = assembly.commands
    if commands is None or commands.get("rewakes") is not None:
        return

    async def rewakes(args: str, host: CommandHost) -> CommandOutcome:
        live = host.live
        hosted = service.sessions.get(str(live.id)) if live is not None else None
        if hosted is None:
            return CommandOutcome.message("Rewakes happen in sessions the service hosts "
                                          "(aimon --bg, aimon attach).")
        return CommandOutcome.message(hosted.rewakes.text())

    commands.register(SlashCommand(name="rewakes", run=rewakes, description=(
        "List background work that woke (or will wake) this session")), system=True)
