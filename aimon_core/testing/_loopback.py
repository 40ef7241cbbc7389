"""Serve scripted model replies over loopback HTTP in the Anthropic and OpenAI wire formats.

`LoopbackModelServer` answers `/v1/messages` (Anthropic Messages API) and
`/v1/chat/completions` (OpenAI Chat Completions), streamed (SSE, chunked) or not, from a
script of steps, so that tests run the real SDKs and the real `aimon` command with no
network. It uses the standard library only and imports nothing heavy.

What the SDKs (anthropic 2.14, openai 3.57, on httpx2) do with a broken stream — the LLM
client built on them must treat every one of these as a failure of the whole response:

- `CutStream` (default, abrupt: the socket closes inside the chunked body). Anthropic: the
  transport's `httpx2.RemoteProtocolError` escapes the stream iterator *unwrapped* — not an
  `anthropic.APIError`. OpenAI: the stream iterator raises `openai.APIConnectionError`.
- `CutStream(graceful=True)` (the HTTP body ends properly, only the SSE stream is short):
  both SDKs end iteration silently. Anthropic's `MessageStream.get_final_message()` returns
  the partial snapshot with `stop_reason=None`; OpenAI's chunks simply stop, with no
  `finish_reason` and no `[DONE]`. Only the missing `message_stop` / `finish_reason` tells.
- `StreamError`. Anthropic: the `event: error` raises a bare `anthropic.APIStatusError`
  whose `status_code` is 200 (the status of the stream) and whose `body["error"]["type"]` is
  `"overloaded_error"`. OpenAI: the `{"error": ...}` data line raises `openai.APIError`
  (not an `APIStatusError`) with `.body` holding the error object.
- `StallStream` past the client's read timeout. Anthropic: `httpx2.ReadTimeout`, unwrapped
  again; OpenAI: `openai.APITimeoutError`.
- Invalid tool-argument JSON (`raw_arguments`): Anthropic's `messages.stream()` helper raises
  a plain `ValueError` while accumulating; `messages.create(stream=True)` does not parse it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import struct
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, cast
from urllib.parse import urlsplit

from . import _loopback_anthropic, _loopback_openai
from ._text import typed_text, without_context

EXHAUSTED_MESSAGE = "loopback script exhausted: unexpected extra request"

StopKind = Literal["end", "tool_use", "max_tokens"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedToolCall:
    """One tool call in a scripted reply."""

    name: str
    input: Mapping[str, Any]
    id: str | None = None
    raw_arguments: str | None = None
    """If set, streamed verbatim as the argument JSON (e.g. invalid JSON) instead of `input`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """One model response."""

    text: str = ""
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    thinking: str = ""
    stop: StopKind | None = None
    input_tokens: int = 10
    output_tokens: int = 5
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if self.stop not in (None, "end", "tool_use", "max_tokens"):
            raise ValueError(f"unknown stop {self.stop!r}: use 'end', 'tool_use' or 'max_tokens'")

    @property
    def stop_kind(self) -> StopKind:
        """Return `stop`, or its default: "tool_use" with tool calls, else "end"."""
        if self.stop is not None:
            return self.stop
        return "tool_use" if self.tool_calls else "end"


@dataclass(frozen=True, slots=True, kw_only=True)
class Fault:
    """An HTTP error response instead of a reply."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    error_type: str | None = None
    """Anthropic `error.type`; OpenAI `error.code`. Defaults follow the status."""
    message: str = "scripted fault"


@dataclass(frozen=True, slots=True, kw_only=True)
class CutStream:
    """Stream `reply` but stop after `after_events` events, before the final one."""

    reply: Reply
    after_events: int
    graceful: bool = False
    """End the HTTP body properly (only the SSE stream is short) instead of dropping the socket."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StallStream:
    """Stream `after_events` events of `reply`, go silent for `seconds`, then send the rest."""

    reply: Reply
    after_events: int
    seconds: float
    released: bool = False
    """Go silent only until the test calls `server.release()` (still at most `seconds`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamError:
    """Stream `after_events` events of `reply`, then a mid-stream error, then end the body."""

    reply: Reply
    after_events: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ResetConnection:
    """Close the connection without any HTTP response."""


Step = Reply | Fault | CutStream | StallStream | StreamError | ResetConnection


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    """One request the server received."""

    provider: str
    """"anthropic" or "openai"; "probe" for a GET of a model list; "unknown" for other paths."""
    path: str
    headers: Mapping[str, str]
    body: Mapping[str, Any]
    connection: int = 0
    """The client's port: requests with the same number came on one (kept-alive) connection."""

    def tool_results(self) -> dict[str, str]:
        """Return tool call id -> result text of every tool result the request sends back.

        Both wire formats: Anthropic `tool_result` blocks and OpenAI `tool` messages (an
        error's text as sent, "Error: " included).
        """
        return {call_id: text for call_id, _, text in self._results()}

    def tool_outcomes(self) -> dict[str, tuple[bool, str]]:
        """Return tool call id -> (is an error, result text) of every tool result sent back.

        Anthropic flags an error (`is_error`); OpenAI's `tool` message has no flag, and aimon
        starts an error's text with "Error: " — taken off the text here.
        """
        found: dict[str, tuple[bool, str]] = {}
        for call_id, flagged, text in self._results():
            if flagged is None:  # OpenAI
                flagged, text = text.startswith(OPENAI_ERROR), text.removeprefix(OPENAI_ERROR)
            found[call_id] = (flagged, text)
        return found

    def _results(self) -> Iterator[tuple[str, bool | None, str]]:
        """Yield (call id, Anthropic's error flag or None on OpenAI's wire, text as sent)."""
        for message in self.body.get("messages", []):
            if message.get("role") == "tool":
                yield str(message.get("tool_call_id")), None, typed_text(message.get("content", ""))
                continue
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, Mapping) and block.get("type") == "tool_result":
                    yield (str(block.get("tool_use_id")), bool(block.get("is_error")),
                           typed_text(block.get("content", "")))

    def system_text(self) -> str:
        """Return the system prompt: Anthropic's `system`, or OpenAI's system messages."""
        if "system" in self.body:
            return typed_text(self.body["system"])
        return "\n".join(typed_text(m.get("content", "")) for m in self.body.get("messages", [])
                         if m.get("role") in ("system", "developer"))

    def tool_names(self) -> list[str]:
        """Return the names of the tools the request offers, in order (both wire formats)."""
        return [str(tool.get("name") or tool.get("function", {}).get("name"))
                for tool in self.body.get("tools", [])]

    def conversation(self) -> list[tuple[str, str]]:
        """Return (role, text) of every message but the system prompt, in order.

        The text joins the message's text parts and tool results; OpenAI's tool results keep
        their role "tool" (Anthropic's travel in a "user" message). aimon's context blocks
        (`<context name="...">`, after a prompt) are left out: `body` has them.
        """
        return [(str(m.get("role")), typed_text(without_context(m.get("content") or "")))
                for m in self.body.get("messages", [])
                if m.get("role") not in ("system", "developer")]



OPENAI_ERROR = "Error: "
"""How aimon's OpenAI client marks a failed tool result (the wire has no error flag)."""


Responder = Callable[[RecordedRequest], Step]

_POST_ROUTES = {
    "/v1/messages": "anthropic",
    "/messages": "anthropic",
    "/v1/chat/completions": "openai",
    "/chat/completions": "openai",
}
_GET_ROUTES: dict[str, dict[str, Any]] = {
    "/api/tags": {"models": []},
    "/v1/models": {
        "object": "list",
        "data": [{"id": "loopback", "object": "model", "created": 0, "owned_by": "loopback"}],
    },
}
_GET_ROUTES["/models"] = _GET_ROUTES["/v1/models"]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Wire:
    stream_events: Callable[[Reply, Mapping[str, Any]], list[bytes]]
    message_body: Callable[[Reply, Mapping[str, Any]], dict[str, Any]]
    error_body: Callable[[int, str | None, str], dict[str, Any]]
    stream_error_event: Callable[[], bytes]


_WIRES = {
    name: _Wire(
        stream_events=module.stream_events,
        message_body=module.message_body,
        error_body=module.error_body,
        stream_error_event=module.stream_error_event,
    )
    for name, module in (("anthropic", _loopback_anthropic), ("openai", _loopback_openai))
}


class LoopbackModelServer:
    """A model API on 127.0.0.1 that plays a script of steps, or asks a responder per request."""

    def __init__(
        self,
        script: Iterable[Step] | Responder = (),
        *,
        provider: str | None = None,
        port: int = 0,
    ) -> None:
        """Args:
        script: steps answered in order, or a function that picks a step per request.
        provider: "anthropic" or "openai" to answer only that API (the other gets 404).
        port: the port to bind; 0 picks a free one.
        """
        if provider not in (None, "anthropic", "openai"):
            raise ValueError(f"unknown provider {provider!r}: use 'anthropic' or 'openai'")
        self.provider = provider
        self._bind_port = port
        self.requests: list[RecordedRequest] = []
        self._responder: Responder | None = script if callable(script) else None
        self._steps: deque[Step] = deque() if callable(script) else deque(script)
        self._lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._release = threading.Event()

    def start(self) -> LoopbackModelServer:
        """Bind a free port and serve in a daemon thread."""
        if self._httpd is not None:
            raise RuntimeError("loopback server already started")
        self._stopping = threading.Event()
        httpd = _HTTPServer(("127.0.0.1", self._bind_port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.01},
            name=f"loopback-model-server:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, drop open connections and wait for their threads."""
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        self._httpd = self._thread = None
        self._stopping.set()
        self._release.set()
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        thread.join()
        httpd.wait_idle(timeout=5.0)

    def __enter__(self) -> LoopbackModelServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """Return the bound port."""
        if self._httpd is None:
            raise RuntimeError("loopback server not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """Return "http://127.0.0.1:PORT", the Anthropic SDK's base_url."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def anthropic_base_url(self) -> str:
        """Return the Anthropic SDK's base_url (same as `base_url`)."""
        return self.base_url

    @property
    def openai_base_url(self) -> str:
        """Return the OpenAI SDK's base_url, which includes /v1."""
        return self.base_url + "/v1"

    @property
    def remaining(self) -> int:
        """Return how many scripted steps have not been consumed."""
        with self._lock:
            return len(self._steps)

    def release(self) -> None:
        """End the silence of the `StallStream(released=True)` that is stalling (or next)."""
        self._release.set()

    def add(self, *steps: Step) -> None:
        """Append steps to the script."""
        if self._responder is not None:
            raise TypeError("cannot add steps to a server driven by a responder")
        with self._lock:
            self._steps.extend(steps)

    def _record(self, request: RecordedRequest) -> None:
        """Append `request` to `requests`."""
        with self._lock:
            self.requests.append(request)

    def _next_step(self, request: RecordedRequest) -> Step | None:
        """Return the step that answers `request`, or None when the script is exhausted."""
        if self._responder is not None:
            return self._responder(request)
        with self._lock:
            return self._steps.popleft() if self._steps else None


class _HTTPServer(ThreadingHTTPServer):
    """Track connections so `stop` can end keep-alive threads promptly."""

    daemon_threads = True
    block_on_close = False
    owner: LoopbackModelServer

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._connections: set[socket.socket] = set()
        self._idle = threading.Condition()
        self.request_ids = itertools.count(1)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._idle:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        super().shutdown_request(request)
        with self._idle:
            self._connections.discard(request)
            self._idle.notify_all()

    def close_connections(self) -> None:
        with self._idle:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # already closed by its handler thread
                connection.shutdown(socket.SHUT_RDWR)

    def wait_idle(self, timeout: float) -> None:
        with self._idle:
            self._idle.wait_for(lambda: not self._connections, timeout=timeout)

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, ConnectionError | OSError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def owner(self) -> LoopbackModelServer:
        return cast(_HTTPServer, self.server).owner

    @property
    def _request_ids(self) -> itertools.count[int]:
        return cast(_HTTPServer, self.server).request_ids

    def setup(self) -> None:
        super().setup()
        # Small SSE writes must not wait on Nagle's algorithm and delayed ACKs.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output clean."""

    def do_GET(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        headers = {key.lower(): value for key, value in self.headers.items()}
        self.owner._record(RecordedRequest(provider="probe", path=path, headers=headers, body={}))
        listing = _GET_ROUTES.get(path)
        if listing is None:
            self._send_json(404, {"error": {"message": f"no route {path!r}", "type": "not_found"}})
        else:
            self._send_json(200, listing)

    def do_POST(self) -> None:
        path = urlsplit(self.path).path.rstrip("/")
        headers = {key.lower(): value for key, value in self.headers.items()}
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = None
        provider = _POST_ROUTES.get(path, "unknown")
        request = RecordedRequest(
            provider=provider,
            path=path,
            headers=headers,
            body=body if isinstance(body, dict) else {},
            connection=int(self.client_address[1]),
        )
        self.owner._record(request)
        wire = _WIRES.get(provider)
        if wire is None or self.owner.provider not in (None, provider):
            message = f"loopback server has no route {path!r}"
            self._send_json(404, {"error": {"message": message, "type": "not_found_error"}})
            return
        if not isinstance(body, dict):
            self._send_json(400, wire.error_body(400, None, "request body is not a JSON object"))
            return
        try:
            self._play(self._pick_step(request, wire), wire, body)
        except (ConnectionError, TimeoutError):
            self.close_connection = True  # the client went away; nothing left to tell it

    def _pick_step(self, request: RecordedRequest, wire: _Wire) -> Step:
        try:
            step = self.owner._next_step(request)
        except Exception as error:
            message = f"loopback responder failed: {error!r}"
            return Fault(status=500, headers={"x-should-retry": "false"}, message=message)
        if step is None:
            # x-should-retry stops SDK retries, so the failure is loud and immediate.
            headers = {"x-should-retry": "false"}
            return Fault(status=500, headers=headers, message=EXHAUSTED_MESSAGE)
        return step

    def _play(self, step: Step, wire: _Wire, body: Mapping[str, Any]) -> None:
        streaming = body.get("stream") is True
        match step:
            case Reply() if streaming:
                events = wire.stream_events(step, body)
                self._stream(events, len(events))
            case Reply():
                self._send_json(200, wire.message_body(step, body))
            case Fault():
                error = wire.error_body(step.status, step.error_type, step.message)
                self._send_json(step.status, error, step.headers)
            case CutStream() if streaming:
                events = wire.stream_events(step.reply, body)
                cut = max(0, min(step.after_events, len(events) - 1))
                self._stream(events, cut, graceful=step.graceful)
            case CutStream():
                self._send_truncated_json(wire.message_body(step.reply, body))
            case StallStream() if streaming:
                events = wire.stream_events(step.reply, body)
                self._stream(events, step.after_events, stall=step.seconds,
                             released=step.released)
            case StallStream():
                if not self.owner._stopping.wait(step.seconds):
                    self._send_json(200, wire.message_body(step.reply, body))
            case StreamError() if streaming:
                events = wire.stream_events(step.reply, body)
                cut = max(0, min(step.after_events, len(events) - 1))
                self._stream([*events[:cut], wire.stream_error_event()], cut + 1)
            case StreamError():
                status = 529 if wire is _WIRES["anthropic"] else 500
                self._send_json(status, wire.error_body(status, None, "Overloaded"))
            case ResetConnection():
                self._reset()

    def _stream(
        self, events: list[bytes], count: int, *, graceful: bool = True, stall: float = 0.0,
        released: bool = False,
    ) -> None:
        """Send the first `count` events; stall, then send the rest if `stall`; end the body."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self._send_request_ids()
        self.end_headers()
        write = self.wfile.write
        for event in events[:count]:
            write(b"%x\r\n%s\r\n" % (len(event), event))
        if stall:
            if released:
                self.owner._release.wait(stall)
                self.owner._release.clear()
            if self.owner._stopping.wait(0 if released else stall):
                self.close_connection = True
                return
            for event in events[count:]:
                write(b"%x\r\n%s\r\n" % (len(event), event))
        if graceful:
            write(b"0\r\n\r\n")
        else:
            # Closing without the terminating chunk is what a dropped connection looks like.
            self.close_connection = True

    def _send_json(
        self, status: int, payload: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> None:
        data = json.dumps(payload, separators=(",", ":")).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self._send_request_ids()
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_truncated_json(self, payload: Mapping[str, Any]) -> None:
        """Promise the whole body in Content-Length, send half of it and drop the connection."""
        data = json.dumps(payload, separators=(",", ":")).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self._send_request_ids()
        self.end_headers()
        self.wfile.write(data[: len(data) // 2])
        self.close_connection = True

    def _send_request_ids(self) -> None:
        request_id = f"req_loopback{next(self._request_ids):012d}"
        self.send_header("request-id", request_id)  # read by the Anthropic SDK
        self.send_header("x-request-id", request_id)  # read by the OpenAI SDK

    def _reset(self) -> None:
        # Linger 0 makes close() send RST, as a crashed proxy would.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(parts)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""
