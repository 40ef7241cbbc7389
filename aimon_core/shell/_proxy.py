"""The sandbox's HTTP proxy: the only way out of a sandboxed command's network namespace.

It speaks what HTTP proxies speak and nothing else: `CONNECT host:port` (HTTPS, and any TCP a
client tunnels) and absolute-form requests (`GET http://host/path`) for plain HTTP. Before it
connects anywhere it asks its `DomainGate` whether that host and port may be reached; a
refusal is a `403` whose body says why, and is reported through `on_refused` so the command's
result can name it. Commands find the proxy through `HTTP_PROXY` / `HTTPS_PROXY` /
`ALL_PROXY`, whose user name says which command a connection belongs to (clients send it as
`Proxy-Authorization: Basic`; one that does not is judged all the same, for no command).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

_HEAD_LIMIT = 64 * 1024
_HEAD_SECONDS = 30.0
_CONNECT_SECONDS = 30.0
_CHUNK = 64 * 1024
# Hop-by-hop headers the proxy consumes; a plain request is sent on with `Connection: close`
# so that every request on a client's connection is judged (the upstream closes after one).
_DROPPED = frozenset({b"proxy-authorization", b"proxy-connection", b"connection",
                      b"keep-alive"})


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkVerdict:
    """Whether a sandboxed command may reach a host; `reason` is told when it may not."""

    allowed: bool
    reason: str = ""


DomainGate = Callable[[str, int, str | None], Awaitable[NetworkVerdict]]
"""Decide (host, port, command tag or None) before the proxy connects."""

Connector = Callable[[str, int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]
"""Open a TCP connection to (host, port); asyncio.open_connection by default."""

Refusal = Callable[[str | None, str, int, str], None]
"""Told (command tag, host, port, reason) of each refused connection."""


async def _open(host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(host, port)


def _ignore(tag: str | None, host: str, port: int, reason: str) -> None:
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Request:
    method: bytes
    host: str
    port: int
    tag: str | None
    # For plain HTTP: the request head to send upstream (origin-form, hop headers dropped).
    forward: bytes = b""


class _BadRequestError(ValueError):
    pass


class NetworkProxy:
    """An HTTP proxy on a listening socket that asks `gate` before every connection."""

    def __init__(self, gate: DomainGate, *, connect: Connector = _open,
                 on_refused: Refusal = _ignore) -> None:
        self.gate = gate
        self.connect = connect
        self.on_refused = on_refused
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._by_tag: dict[str, set[asyncio.Task[None]]] = {}

    async def serve(self, listener: socket.socket) -> None:
        """Start accepting on `listener` (already bound and listening)."""
        self._server = await asyncio.start_server(self._accepted, sock=listener,
                                                  limit=_HEAD_LIMIT)

    def drop(self, tag: str) -> None:
        """End the connections of the command `tag` (it has ended; a question it raised goes)."""
        for task in self._by_tag.pop(tag, set()):
            task.cancel()

    async def close(self) -> None:
        """Stop accepting and end every connection in progress."""
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks)

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                        ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._handle(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # the client went away or sent nonsense: nothing to answer
        finally:
            self._tasks.discard(task)
            for tasks in self._by_tag.values():
                tasks.discard(task)
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                      ) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _HEAD_SECONDS)
            request = parse_request(head)
        except (_BadRequestError, TimeoutError, asyncio.LimitOverrunError) as exc:
            await _answer(writer, 400, f"aimon sandbox proxy: bad request ({exc})")
            return
        if request.tag is not None and (task := asyncio.current_task()) is not None:
            self._by_tag.setdefault(request.tag, set()).add(task)
        verdict = await self.gate(request.host, request.port, request.tag)
        if not verdict.allowed:
            self.on_refused(request.tag, request.host, request.port, verdict.reason)
            await _answer(writer, 403, f"aimon sandbox: {request.host}:{request.port} "
                          f"refused: {verdict.reason}")
            return
        try:
            upstream_reader, upstream = await asyncio.wait_for(
                self.connect(request.host, request.port), _CONNECT_SECONDS)
        except (OSError, TimeoutError) as exc:
            await _answer(writer, 502, f"aimon sandbox proxy: cannot reach "
                          f"{request.host}:{request.port}: {exc}")
            return
        try:
            if request.method == b"CONNECT":
                writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            else:
                upstream.write(request.forward)
            await _relay(reader, writer, upstream_reader, upstream)
        finally:
            upstream.close()


def parse_request(head: bytes) -> _Request:
    """Read a proxy request's head: where it goes, and for whom (raise _BadRequestError)."""
    lines = head.split(b"\r\n")
    try:
        method, target, version = lines[0].split(b" ")
    except ValueError:
        raise _BadRequestError("malformed request line") from None
    headers = [line for line in lines[1:] if line]
    tag = _tag(headers)
    if method == b"CONNECT":
        host, port = split_authority(target.decode("latin-1"), None)
        return _Request(method=method, host=host, port=port, tag=tag)
    url = urlsplit(target.decode("latin-1"))
    if url.scheme != "http" or not url.netloc:
        raise _BadRequestError("only CONNECT and absolute http:// requests are proxied")
    host, port = split_authority(url.netloc.rpartition("@")[2], 80)
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    kept = [line for line in headers
            if line.split(b":", 1)[0].strip().lower() not in _DROPPED]
    forward = b"\r\n".join([method + b" " + path.encode("latin-1") + b" " + version,
                            *kept, b"Connection: close", b"", b""])
    return _Request(method=method, host=host, port=port, tag=tag, forward=forward)


def split_authority(text: str, default_port: int | None) -> tuple[str, int]:
    """Split `host:port` (`[v6]:port`); the host lower-cased, without a trailing dot."""
    host, sep, port_text = text.rpartition(":")
    if not sep or host.endswith(":") or (host.count(":") and not host.startswith("[")):
        host, port_text = text, ""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not port_text:
        if default_port is None:
            raise _BadRequestError(f"no port in {text!r}")
        port = default_port
    elif port_text.isdigit() and 0 < int(port_text) < 65536:
        port = int(port_text)
    else:
        raise _BadRequestError(f"bad port in {text!r}")
    host = host.strip().rstrip(".").lower()
    if not host or any(c.isspace() or c in "/\\@" for c in host):
        raise _BadRequestError(f"bad host in {text!r}")
    return host, port


def _tag(headers: list[bytes]) -> str | None:
    """Return the command tag from `Proxy-Authorization: Basic` (its user name), if any."""
    for line in headers:
        name, _, value = line.partition(b":")
        if name.strip().lower() != b"proxy-authorization":
            continue
        scheme, _, encoded = value.strip().partition(b" ")
        if scheme.lower() != b"basic":
            return None
        try:
            user = base64.b64decode(encoded.strip(), validate=True).split(b":", 1)[0]
        except (binascii.Error, ValueError):
            return None
        return user.decode("latin-1") or None
    return None


async def _answer(writer: asyncio.StreamWriter, status: int, message: str) -> None:
    reasons = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}
    body = (message + "\n").encode()
    writer.write(f"HTTP/1.1 {status} {reasons[status]}\r\nContent-Type: text/plain\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    with contextlib.suppress(OSError):
        await writer.drain()


async def _relay(client_reader: asyncio.StreamReader, client: asyncio.StreamWriter,
                 upstream_reader: asyncio.StreamReader, upstream: asyncio.StreamWriter) -> None:
    """Copy both ways until both sides have finished (a half-close is passed on)."""
    async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        try:
            while data := await source.read(_CHUNK):
                sink.write(data)
                await sink.drain()
            if sink.can_write_eof():
                sink.write_eof()
        except OSError:
            sink.close()

    await asyncio.gather(pump(client_reader, upstream), pump(upstream_reader, client))


def domain_matches(pattern: str, host: str, port: int) -> bool:
    """Tell whether an `allowedDomains` entry (or `WebFetch(domain:...)`) covers host:port.

    `example.com` is that host only; `*.example.com` its subdomains (not itself); `:443`
    after either limits it to that port; `*` alone is every host. Case and a final dot do not
    count; an IPv6 address is written in brackets when a port follows (`[::1]:8080`).
    """
    text = pattern.strip().lower()
    if not text:
        return False
    try:
        name, wanted = split_authority(text, 0)
    except _BadRequestError:
        return False
    if wanted and wanted != port:
        return False
    if name == "*":
        return True
    if name.startswith("*."):
        return host.endswith(name[1:]) and len(host) > len(name) - 1
    return host == name
