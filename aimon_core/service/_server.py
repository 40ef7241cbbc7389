"""The service: one process per user, hosting sessions for clients on a unix socket.

`Service` is an application scope (`aimon_core.runtime.Application`) behind a socket in aimon's
data folder. Each connection speaks the service protocol (`_wire.py`, docs/PROTOCOL.md); a
peer whose uid is not the user's is refused before a byte is read (SO_PEERCRED). Sessions the
clients open stay hosted (`HostedSession`) when the clients go; the service exits after an
idle time with no client and nothing working. It keeps which sessions it hosts in its
database, so after a crash the next start hosts them again: their records are on disk, their
leases died with the process, what their inbox held is still there.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import itertools
import json
import logging
import os
import socket
import struct
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from aimon_core.service._hosted import HostedOptions, HostedSession
from aimon_core.service._paths import ServicePaths, environment_fingerprint
from aimon_core.service._router import SessionRouter
from aimon_core.service._settings import ServiceSettings
from aimon_core.service._stores import (
    IdempotencyStore,
    LocalSignalBus,
    SessionInbox,
    SignalBus,
    SQLiteIdempotencyStore,
    SQLiteInbox,
)
from aimon_core.service._wire import (
    MAX_LINE,
    ErrorCode,
    ErrorResponse,
    Notification,
    ProtocolError,
    RemoteError,
    Request,
    Response,
    WireMessage,
    decode_message,
    encode_message,
)

if TYPE_CHECKING:
    from aimon_core.runtime import Application, RuntimeFlags
    from aimon_core.scheduling import RoutineStore, RunLog

log = logging.getLogger(__name__)


# The command line's print mode, run in the service for a client (`aimon -p` when a service
# runs): given the request's params, the application and where its stdout and stderr go, it
# runs the turn and returns the exit status.
PrintRunner = Callable[[Mapping[str, Any], "Application", TextIO, TextIO], Awaitable[int]]


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceStores:
    """The service's stores (embedded: SQLite and the process; see `_stores.py`)."""

    inbox: SessionInbox
    idempotency: IdempotencyStore
    signals: SignalBus = field(default_factory=LocalSignalBus)
    # Routines and their runs (None: in the service's SQLite file).
    routines: RoutineStore | None = None
    runs: RunLog | None = None

    @classmethod
    def embedded(cls, paths: ServicePaths) -> ServiceStores:
        """Return the stores in the service's folder."""
        return cls(inbox=SQLiteInbox(paths.database),
                   idempotency=SQLiteIdempotencyStore(paths.database))


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceOptions:
    """How a service runs.

    Args:
        tcp: also listen on this (host, port): clients there must give the token in the
            service folder (no peer uid to check). None: the unix socket only.
        print_runner: runs `aimon -p` for clients (the command line gives it); None: print
            requests are refused and clients run print mode themselves.
        on_ready: told once the service listens (`aimon serve` tells the client that started
            it).
    """

    paths: ServicePaths
    settings: ServiceSettings = field(default_factory=ServiceSettings)
    tcp: tuple[str, int] | None = None
    print_runner: PrintRunner | None = None
    on_ready: Callable[[], None] | None = None


class ServiceRunningError(RuntimeError):
    """Another service holds the folder's lock."""


class Connection:
    """One client: its peer, what it watches, and how to send it messages."""

    def __init__(self, number: int, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter, *, peer_pid: int | None, trusted: bool) -> None:
        self.number = number
        self.reader = reader
        self.writer = writer
        self.peer_pid = peer_pid
        self.trusted = trusted  # a unix peer of the user's uid; a TCP one after its token
        self.initialized = False
        self.watching: dict[str, Callable[[], None]] = {}
        self.tasks: set[asyncio.Task[Any]] = set()
        self.closed = asyncio.Event()

    def send(self, message: WireMessage) -> None:
        """Queue a message for the client (dropped once it is gone)."""
        if self.writer.is_closing():
            return
        self.writer.write(encode_message(message))

    def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """Send a notification."""
        self.send(Notification(method=method, params=params))


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """Return the (pid, uid, gid) of a unix socket's peer, as the kernel saw it connect."""
    size = struct.calcsize("3i")
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, size)
    pid, uid, gid = struct.unpack("3i", raw)
    return pid, uid, gid


class Service:
    """The user's service: an application, its hosted sessions, and the clients' connections."""

    def __init__(self, options: ServiceOptions, *, app: Application | None = None,
                 stores: ServiceStores | None = None) -> None:
        from aimon_core.runtime import Application

        self.options = options
        self.paths = options.paths
        self.app = app if app is not None else Application()
        self.stores = stores if stores is not None else ServiceStores.embedded(self.paths)
        self.sessions: dict[str, HostedSession] = {}
        self.connections: dict[int, Connection] = {}
        self.started = time.time()
        self.fingerprint = environment_fingerprint(os.environ)
        self.holder = f"aimon serve (pid {os.getpid()} on {socket.gethostname()})"
        self.router = SessionRouter(self)
        self._numbers = itertools.count(1)
        self._stopping = asyncio.Event()
        self._idle_timer: asyncio.TimerHandle | None = None
        self._opening: dict[str, asyncio.Task[HostedSession]] = {}
        self._lock_file: int | None = None
        self._token = ""
        self.hosted = _HostedTable(self.paths.database)
        from aimon_core.scheduling import Notifier
        from aimon_core.service._schedule import make_engine

        self.notifier = Notifier()
        self.scheduling, self.schedule_parts = make_engine(
            self.app, self.paths, self.stores, self.notifier, options.settings)

    # -- lifecycle

    async def run(self) -> None:
        """Listen until shut down (a request, a signal, or the idle time); then close all."""
        from aimon_core.service._methods import dispatch

        self._dispatch = dispatch
        self.paths.prepare()
        self._take_lock()
        servers: list[asyncio.Server] = []
        try:
            with contextlib.suppress(FileNotFoundError):
                self.paths.socket.unlink()  # a crashed service's; the lock says none runs
            old_mask = os.umask(0o177)  # the socket is made 0600, never wider for a moment
            try:
                servers.append(await asyncio.start_unix_server(
                    self._accept_unix, path=str(self.paths.socket), limit=MAX_LINE))
            finally:
                os.umask(old_mask)
            if self.options.tcp is not None:
                servers.append(await self._listen_tcp(*self.options.tcp))
            await self._rehost()
            await self.scheduling.start()
            if self.options.on_ready is not None:
                self.options.on_ready()
            self._changed()
            log.info("listening on %s", self.paths.socket)
            await self._stopping.wait()
        finally:
            for server in servers:
                server.close()
            await self._shutdown()
            with contextlib.suppress(FileNotFoundError):
                self.paths.socket.unlink()
            for server in servers:
                with contextlib.suppress(Exception):
                    await server.wait_closed()
            self._release_lock()

    def stop(self) -> None:
        """Ask the service to shut down."""
        self._stopping.set()

    def _take_lock(self) -> None:
        fd = os.open(self.paths.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ServiceRunningError(f"a service already runs for {self.paths.folder}") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_file = fd

    def _release_lock(self) -> None:
        if self._lock_file is not None:
            os.close(self._lock_file)
            self._lock_file = None

    async def _listen_tcp(self, host: str, port: int) -> asyncio.Server:
        import secrets

        self._token = secrets.token_hex(24)
        token_file = self.paths.folder / "token"
        fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(self._token)
        return await asyncio.start_server(self._accept_tcp, host, port, limit=MAX_LINE)

    async def _shutdown(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        for connection in list(self.connections.values()):
            connection.writer.close()
        await self.scheduling.aclose()  # runs going on are recorded as interrupted
        await self.notifier.aclose()
        await self.router.aclose()
        crashed = False
        for hosted in list(self.sessions.values()):
            try:
                await hosted.close()
            except Exception:  # one session failing to close must not keep the others open
                crashed = True
                log.exception("closing %s failed", hosted.id)
        if not crashed:
            self.hosted.clear()  # an orderly stop: nothing to host again at the next start
        self.sessions.clear()
        await self.app.aclose()

    # -- idle exit

    def _changed(self) -> None:
        """Note that something changed: the idle timer starts again if the service is idle."""
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        seconds = self.options.settings.idle_seconds
        if seconds > 0 and self.idle():
            loop = asyncio.get_running_loop()
            self._idle_timer = loop.call_later(seconds, self._idle_over)

    def idle(self) -> bool:
        """Tell whether no client is connected, no session works or waits (or waits to be
        taken over), and no routine is scheduled (the service stays up to run it)."""
        return (not self.connections and not self._opening and not self.router.waiting()
                and not any(hosted.busy() for hosted in self.sessions.values())
                and not self.scheduling.active())

    def _idle_over(self) -> None:
        if self.idle():
            log.info("idle for %.0f s: leaving", self.options.settings.idle_seconds)
            self.stop()

    # -- connections

    async def _accept_unix(self, reader: asyncio.StreamReader,
                           writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        try:
            pid, uid, _ = peer_credentials(sock)
        except OSError:
            pid, uid = None, -1
        if uid != os.geteuid():
            log.warning("refused a connection from uid %s (pid %s)", uid, pid)
            writer.close()
            return
        await self._serve(Connection(next(self._numbers), reader, writer, peer_pid=pid,
                                     trusted=True))

    async def _accept_tcp(self, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        await self._serve(Connection(next(self._numbers), reader, writer, peer_pid=None,
                                     trusted=False))

    async def _serve(self, connection: Connection) -> None:
        self.connections[connection.number] = connection
        self._changed()
        try:
            while True:
                try:
                    line = await connection.reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    connection.send(ErrorResponse(id=None, code=ErrorCode.PARSE_ERROR,
                                                  message="line too long"))
                    break
                except ConnectionError:
                    break
                if not line:
                    break
                self._handle_line(connection, line)
        finally:
            await self._drop(connection)

    def _handle_line(self, connection: Connection, line: bytes) -> None:
        try:
            message = decode_message(line)
        except ProtocolError as exc:
            connection.send(ErrorResponse(id=None, code=ErrorCode.PARSE_ERROR, message=str(exc)))
            return
        if not isinstance(message, Request | Notification):
            return  # the service asks clients nothing: answers are not expected
        task = asyncio.get_running_loop().create_task(self._call(connection, message))
        connection.tasks.add(task)
        task.add_done_callback(connection.tasks.discard)

    async def _call(self, connection: Connection, message: Request | Notification) -> None:
        try:
            result = await self._dispatch(self, connection, message.method,
                                          dict(message.params))
        except RemoteError as exc:
            if isinstance(message, Request):
                connection.send(ErrorResponse(id=message.id, code=exc.code,
                                              message=exc.message, data=exc.data))
            return
        except Exception as exc:
            log.exception("%s failed", message.method)
            if isinstance(message, Request):
                connection.send(ErrorResponse(id=message.id, code=ErrorCode.INTERNAL_ERROR,
                                              message=f"{type(exc).__name__}: {exc}"))
            return
        if isinstance(message, Request):
            connection.send(Response(id=message.id, result=result))

    async def _drop(self, connection: Connection) -> None:
        connection.closed.set()
        for unwatch in connection.watching.values():
            unwatch()
        connection.watching.clear()
        for task in list(connection.tasks):
            task.cancel()
        if connection.tasks:
            await asyncio.gather(*connection.tasks, return_exceptions=True)
        connection.writer.close()
        self.connections.pop(connection.number, None)
        self._changed()

    def check_token(self, token: object) -> bool:
        """Tell whether a TCP client's token is the service's."""
        import hmac

        return bool(self._token) and isinstance(token, str) and hmac.compare_digest(
            token, self._token)

    # -- hosted sessions

    async def host(self, *, project_root: str, flags: RuntimeFlags,
                   session_id: str | None = None, unattended: bool = False) -> HostedSession:
        """Open a session (new, or a stored one by id) and keep it hosted."""
        if session_id is not None and session_id in self.sessions:
            return self.sessions[session_id]
        key = session_id or f"new-{next(self._numbers)}"
        opening = self._opening.get(key)
        if opening is None:
            opening = asyncio.get_running_loop().create_task(
                self._open(project_root, flags, session_id, unattended))
            self._opening[key] = opening
            opening.add_done_callback(lambda _: self._opening.pop(key, None))
        return await asyncio.shield(opening)

    async def _open(self, project_root: str, flags: RuntimeFlags, session_id: str | None,
                    unattended: bool) -> HostedSession:
        from aimon_core.service._methods import register_service_commands
        from aimon_core.service._schedule import register_schedule_command

        registry = self.app.runtimes(Path(project_root), flags, parts=self.schedule_parts,
                                     on_notice=lambda text: log.info("%s", text))
        agent = None
        if session_id is not None and flags.agent is None:
            agent = await asyncio.to_thread(_agent_of, self.app, session_id)
        assembly = await registry.get(agent)
        register_service_commands(self, assembly)
        register_schedule_command(self.scheduling, assembly)
        if assembly.mcp is not None:
            assembly.start_background(lambda text: log.info("%s", text))
        live = await assembly.open_session(self.app.store, session_id=session_id,
                                           holder=self.holder)
        hosted = HostedSession(
            live, assembly, inbox=self.stores.inbox, signals=self.stores.signals,
            options=HostedOptions(unattended=unattended,
                                  rewake=self.options.settings.rewake),
            on_change=self._changed)
        self.sessions[hosted.id] = hosted
        await asyncio.to_thread(self.hosted.put, hosted.id, project_root, flags, unattended)
        self._changed()
        return hosted

    async def release(self, hosted: HostedSession) -> None:
        """Close a hosted session (it stays stored) and forget it."""
        self.sessions.pop(hosted.id, None)
        await hosted.close()
        await asyncio.to_thread(self.hosted.remove, hosted.id)
        self._changed()

    async def _rehost(self) -> None:
        """Host again what a crashed service hosted, and sessions with inbox items waiting."""
        from aimon_core.runtime import RuntimeFlags
        from aimon_core.session import SessionLockedError

        entries = await asyncio.to_thread(self.hosted.all)
        for session_id, project_root, flags, unattended in entries:
            try:
                await self.host(project_root=project_root, flags=RuntimeFlags(**flags),
                                session_id=session_id, unattended=unattended)
            except SessionLockedError as exc:
                # On a networked store the crashed service's own lease outlives it until it
                # expires: host the session then (unless another service has taken it).
                log.info("session %s is held (%s): hosting it once it is free", session_id,
                         exc.holder)
                await asyncio.to_thread(self.hosted.remove, session_id)
                self.router.take_over_later(session_id, project_root=project_root,
                                            flags=RuntimeFlags(**flags), unattended=unattended)
            except Exception as exc:
                log.warning("session %s is not hosted again: %s", session_id, exc)
                await asyncio.to_thread(self.hosted.remove, session_id)


def _agent_of(app: Application, session_id: str) -> str | None:
    """Return the agent name a stored session was made with (None: not known)."""
    from aimon_core.session import SessionError, parse_session_id

    try:
        ref = app.store.records.load(parse_session_id(session_id)).agent_ref
    except (ValueError, SessionError):
        return None
    return ref.removeprefix("agent:").split(":")[0] or None


class _HostedTable:
    """Which sessions the service hosts, kept in its database for the next start."""

    def __init__(self, path: os.PathLike[str]) -> None:
        self._path = path

    def _connect(self) -> Any:
        import sqlite3

        db = sqlite3.connect(self._path, timeout=10.0, isolation_level=None)
        db.execute("CREATE TABLE IF NOT EXISTS hosted (session_id TEXT PRIMARY KEY, "
                   "project_root TEXT NOT NULL, flags TEXT NOT NULL, unattended INTEGER)")
        return db

    def put(self, session_id: str, project_root: str, flags: RuntimeFlags,
            unattended: bool) -> None:
        import dataclasses

        with contextlib.closing(self._connect()) as db:
            db.execute("INSERT OR REPLACE INTO hosted VALUES (?, ?, ?, ?)",
                       (session_id, project_root, json.dumps(dataclasses.asdict(flags)),
                        int(unattended)))

    def remove(self, session_id: str) -> None:
        with contextlib.closing(self._connect()) as db:
            db.execute("DELETE FROM hosted WHERE session_id = ?", (session_id,))

    def clear(self) -> None:
        with contextlib.closing(self._connect()) as db:
            db.execute("DELETE FROM hosted")

    def all(self) -> list[tuple[str, str, dict[str, Any], bool]]:
        with contextlib.closing(self._connect()) as db:
            rows = db.execute("SELECT session_id, project_root, flags, unattended "
                              "FROM hosted").fetchall()
        found = []
        for session_id, root, flags, unattended in rows:
            data = json.loads(flags)
            data = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
            found.append((session_id, root, data, bool(unattended)))
        return found
