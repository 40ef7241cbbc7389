"""The sandbox's HTTP proxy: CONNECT and absolute-form requests, judged before any connection.

The proxy listens on a loopback socket here (in the sandbox it listens in the session's own
network namespace); "upstream" is a loopback server the connector leads every host to, so
nothing reaches the network.
"""

from __future__ import annotations

import asyncio
import base64
import socket
from collections.abc import Awaitable, Callable

import pytest

from aimon_core.shell import NetworkVerdict, domain_matches
from aimon_core.shell._proxy import NetworkProxy

AUTH = b"Proxy-Authorization: Basic " + base64.b64encode(b"cmd7:aimon") + b"\r\n"


async def _upstream(seen: list[bytes]) -> asyncio.Server:
    """A server that records what it receives and answers each connection once."""
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = await reader.read(65536)
        seen.append(data)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" if data.startswith(
            (b"GET", b"POST")) else b"echo:" + data)
        await writer.drain()
        writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


def run(exchange: Callable[[int, list[bytes], list[tuple[str | None, str, int, str]]],
                            Awaitable[bytes]], *, allowed: bool = True,
        reachable: bool = True) -> tuple[bytes, list[bytes], list[tuple[str | None, str, int,
                                                                         str]], list[str]]:
    """Start a proxy and an upstream; run `exchange(port, ...)`; return what came back."""
    seen: list[bytes] = []
    refused: list[tuple[str | None, str, int, str]] = []
    judged: list[str] = []

    async def main() -> bytes:
        upstream = await _upstream(seen)
        port = upstream.sockets[0].getsockname()[1]

        async def gate(host: str, want: int, tag: str | None) -> NetworkVerdict:
            judged.append(f"{host}:{want} {tag}")
            return NetworkVerdict(allowed=allowed, reason="not in this test's list")

        async def connect(host: str, want: int) -> tuple[asyncio.StreamReader,
                                                         asyncio.StreamWriter]:
            if not reachable:
                raise ConnectionRefusedError(111, "Connection refused")
            return await asyncio.open_connection("127.0.0.1", port)

        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        proxy = NetworkProxy(gate, connect=connect,
                             on_refused=lambda *a: refused.append(a))
        await proxy.serve(listener)
        try:
            return await exchange(listener.getsockname()[1], seen, refused)
        finally:
            await proxy.close()
            upstream.close()

    return asyncio.run(main()), seen, refused, judged


async def _talk(port: int, *parts: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for part in parts:
        writer.write(part)
    await writer.drain()
    if writer.can_write_eof():
        writer.write_eof()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return data


def test_connect_tunnels_both_ways_once_allowed() -> None:
    async def exchange(port: int, *_: object) -> bytes:
        return await _talk(port, b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n"
                           + AUTH + b"\r\n", b"tls bytes")

    answer, seen, refused, judged = run(exchange)
    assert answer == b"HTTP/1.1 200 Connection Established\r\n\r\necho:tls bytes"
    assert seen == [b"tls bytes"] and refused == []
    assert judged == ["pypi.org:443 cmd7"]


def test_a_plain_request_goes_on_in_origin_form_and_closes_after_it() -> None:
    async def exchange(port: int, *_: object) -> bytes:
        return await _talk(port, b"GET http://example.test:8080/a/b?c=1 HTTP/1.1\r\n"
                           b"Host: example.test:8080\r\n" + AUTH
                           + b"Proxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n")

    answer, seen, _, judged = run(exchange)
    assert answer.endswith(b"hello")
    assert seen == [b"GET /a/b?c=1 HTTP/1.1\r\nHost: example.test:8080\r\nAccept: */*\r\n"
                    b"Connection: close\r\n\r\n"]
    assert judged == ["example.test:8080 cmd7"]


def test_a_refusal_is_a_403_that_says_why_and_is_reported() -> None:
    async def exchange(port: int, *_: object) -> bytes:
        return await _talk(port, b"CONNECT evil.test:443 HTTP/1.1\r\n" + AUTH + b"\r\n")

    answer, seen, refused, _ = run(exchange, allowed=False)
    assert answer.startswith(b"HTTP/1.1 403 Forbidden\r\n")
    assert b"aimon sandbox: evil.test:443 refused: not in this test's list" in answer
    assert seen == []
    assert refused == [("cmd7", "evil.test", 443, "not in this test's list")]


@pytest.mark.parametrize("request_line", [
    b"GET /relative HTTP/1.1", b"CONNECT noport HTTP/1.1", b"CONNECT a b c d",
    b"GET https://x.test/ HTTP/1.1", b"CONNECT x.test:99999 HTTP/1.1", b"CONNECT a/b:1 HTTP/1.1",
])
def test_anything_else_is_a_400_and_judged_never(request_line: bytes) -> None:
    async def exchange(port: int, *_: object) -> bytes:
        return await _talk(port, request_line + b"\r\n\r\n")

    answer, seen, _, judged = run(exchange)
    assert answer.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert seen == [] and judged == []


def test_an_unreachable_host_is_a_502() -> None:
    async def exchange(port: int, *_: object) -> bytes:
        return await _talk(port, b"CONNECT down.test:443 HTTP/1.1\r\n\r\n")

    answer, _, _, judged = run(exchange, reachable=False)
    assert answer.startswith(b"HTTP/1.1 502 Bad Gateway\r\n")
    assert judged == ["down.test:443 None"]  # no credentials: judged for no command


@pytest.mark.parametrize(("pattern", "host", "port", "matches"), [
    ("example.com", "example.com", 443, True),
    ("example.com", "api.example.com", 443, False),
    ("*.example.com", "api.example.com", 443, True),
    ("*.example.com", "example.com", 443, False),
    ("*.example.com", "badexample.com", 443, False),
    ("example.com:443", "example.com", 443, True),
    ("example.com:443", "example.com", 80, False),
    ("Example.COM.", "example.com", 80, True),
    ("[::1]:8080", "::1", 8080, True),
    ("127.0.0.1", "127.0.0.1", 5432, True),
    ("*", "anything.test", 1, True),
    ("", "example.com", 443, False),
    ("exa mple.com", "exa mple.com", 443, False),
])
def test_domain_patterns(pattern: str, host: str, port: int, matches: bool) -> None:
    assert domain_matches(pattern, host, port) is matches
