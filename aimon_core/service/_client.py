"""Clients of the service: a blocking one for short commands, an asyncio one that stays.

`ServiceClient` (blocking sockets, no asyncio) is what `aimon -p`, `ps`, `send` and `stop` use:
it imports the standard library and the wire codec only, so a warm `aimon -p` starts in the
time Python takes to start. `AsyncServiceClient` keeps a connection open for a front end on an
event loop (`aimon attach`): calls and the session's events share it.
"""

from __future__ import annotations

import itertools
import os
import socket
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from aimon_core.service._paths import ServicePaths, environment_fingerprint
from aimon_core.service._wire import (
    MAX_LINE,
    PROTOCOL_VERSION,
    ErrorResponse,
    Notification,
    ProtocolError,
    RemoteError,
    Request,
    Response,
    decode_message,
    encode_message,
)

if TYPE_CHECKING:
    import asyncio

OnNotification = Callable[[str, Mapping[str, Any]], None]


class ServiceUnavailableError(ConnectionError):
    """No service listens (no socket, or nobody behind it)."""


def _hello(client_name: str) -> dict[str, Any]:
    return {"protocol": PROTOCOL_VERSION, "client": client_name,
            "environment": environment_fingerprint(os.environ)}


class ServiceClient:
    """A blocking connection to the service: one call at a time, notifications to a callback."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = b""
        self._ids = itertools.count(1)
        self.hello: dict[str, Any] = {}

    @classmethod
    def connect(cls, paths: ServicePaths | None = None, *, client_name: str = "aimon"
                ) -> ServiceClient:
        """Connect and initialize; raise ServiceUnavailableError when nobody listens."""
        paths = paths or ServicePaths.default()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(paths.socket))
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            sock.close()
            raise ServiceUnavailableError(str(exc)) from None
        except OSError:
            sock.close()
            raise
        client = cls(sock)
        try:
            client.hello = client.call("initialize", _hello(client_name))
        except (RemoteError, ServiceUnavailableError):
            client.close()
            raise
        return client

    @property
    def same_environment(self) -> bool:
        """Tell whether the service chose its model from the same variables as this process."""
        return self.hello.get("environment") == environment_fingerprint(os.environ)

    def call(self, method: str, params: Mapping[str, Any] | None = None,
             on_notification: OnNotification | None = None) -> Any:
        """Send a request and return its result; notifications meanwhile go to the callback.

        Raises RemoteError for an error answer, ServiceUnavailableError if the service goes.
        """
        request_id = next(self._ids)
        self._send(encode_message(Request(id=request_id, method=method,
                                          params=dict(params or {}))))
        while True:
            message = self._receive()
            match message:
                case Response(id=found, result=result) if found == request_id:
                    return result
                case ErrorResponse(id=found, code=code, message=text, data=data) \
                        if found in (request_id, None):
                    raise RemoteError(code, text, data)
                case Notification(method=name, params=params_) if on_notification:
                    on_notification(name, params_)

    def receive(self) -> Notification | Response | ErrorResponse | Request:
        """Return the next message the service sends (blocking): a watcher's events."""
        return self._receive()  # type: ignore[no-any-return]

    def notify(self, method: str, params: Mapping[str, Any]) -> None:
        """Send a notification."""
        self._send(encode_message(Notification(method=method, params=dict(params))))

    def _send(self, data: bytes) -> None:
        try:
            self._sock.sendall(data)
        except OSError as exc:
            raise ServiceUnavailableError(f"the service went away: {exc}") from None

    def _receive(self) -> Any:  # a WireMessage
        while b"\n" not in self._buffer:
            try:
                chunk = self._sock.recv(1 << 16)
            except InterruptedError:
                continue
            except OSError as exc:
                raise ServiceUnavailableError(f"the service went away: {exc}") from None
            if not chunk:
                raise ServiceUnavailableError("the service closed the connection")
            self._buffer += chunk
            if len(self._buffer) > MAX_LINE:
                raise ProtocolError("a message is longer than the protocol allows")
        line, _, self._buffer = self._buffer.partition(b"\n")
        return decode_message(line)

    def close(self) -> None:
        """Close the connection."""
        self._sock.close()

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncServiceClient:
    """A connection on an event loop: concurrent calls, and the notifications to a callback."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 on_notification: OnNotification) -> None:
        self._reader = reader
        self._writer = writer
        self._on_notification = on_notification
        self._ids = itertools.count(1)
        self._waiting: dict[int | str, asyncio.Future[Any]] = {}
        self._reading: asyncio.Task[None] | None = None
        self.hello: dict[str, Any] = {}

    @classmethod
    async def connect(cls, on_notification: OnNotification, paths: ServicePaths | None = None,
                      *, client_name: str = "aimon") -> AsyncServiceClient:
        """Connect and initialize; raise ServiceUnavailableError when nobody listens."""
        import asyncio

        paths = paths or ServicePaths.default()
        try:
            reader, writer = await asyncio.open_unix_connection(str(paths.socket),
                                                                limit=MAX_LINE)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise ServiceUnavailableError(str(exc)) from None
        client = cls(reader, writer, on_notification)
        client._reading = asyncio.get_running_loop().create_task(client._read())
        client.hello = await client.call("initialize", _hello(client_name))
        return client

    async def call(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """Send a request and wait for its result (RemoteError, ServiceUnavailableError)."""
        import asyncio

        if self._reading is None or self._reading.done():
            raise ServiceUnavailableError("the service closed the connection")
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        self._writer.write(encode_message(Request(id=request_id, method=method,
                                                  params=dict(params or {}))))
        try:
            return await future
        finally:
            self._waiting.pop(request_id, None)

    async def _read(self) -> None:
        try:
            while line := await self._reader.readline():
                message = decode_message(line)
                match message:
                    case Response(id=found, result=result):
                        waiting = self._waiting.get(found)
                        if waiting is not None and not waiting.done():
                            waiting.set_result(result)
                    case ErrorResponse(id=found, code=code, message=text, data=data):
                        waiting = self._waiting.get(found) if found is not None else None
                        if waiting is not None and not waiting.done():
                            waiting.set_exception(RemoteError(code, text, data))
                    case Notification(method=name, params=params):
                        self._on_notification(name, params)
        except (ConnectionError, ProtocolError):
            pass
        finally:
            gone = ServiceUnavailableError("the service closed the connection")
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(gone)

    @property
    def connected(self) -> bool:
        """Tell whether the connection is open."""
        return self._reading is not None and not self._reading.done()

    async def wait_closed(self) -> None:
        """Wait until the service closes the connection."""
        import asyncio

        if self._reading is not None:
            await asyncio.shield(self._reading)

    async def close(self) -> None:
        """Close the connection."""
        import asyncio

        self._writer.close()
        if self._reading is not None:
            self._reading.cancel()
            await asyncio.gather(self._reading, return_exceptions=True)
