"""The service protocol's wire: JSON-RPC 2.0 messages, one per line of UTF-8 JSON.

`encode_message` / `decode_message` are the two directions; aimon's values inside the
messages are converted by `_values.py`. Nothing here imports more than the standard library:
a warm `aimon -p` loads this and the client only. docs/PROTOCOL.md describes the methods.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PROTOCOL_VERSION = 1
# A line longer than this is refused (a transcript replay of a long session fits easily).
MAX_LINE = 64 * 1024 * 1024


class ErrorCode(enum.IntEnum):
    """JSON-RPC's error codes, and the service's own (-32000 and below)."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    UNKNOWN_SESSION = -32001
    SESSION_UNAVAILABLE = -32002
    VERSION_MISMATCH = -32003
    ENVIRONMENT_MISMATCH = -32004
    NOT_OFFERED = -32005
    SETUP_FAILED = -32006
    UNKNOWN_ROUTINE = -32007


class ProtocolError(Exception):
    """A message is not valid JSON-RPC, or names a value the wire does not carry."""


class RemoteError(Exception):
    """The other side answered a request with an error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True, kw_only=True)
class Request:
    """A call that wants an answer."""

    id: int | str
    method: str
    params: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Notification:
    """A message that wants no answer (the events of a session)."""

    method: str
    params: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Response:
    """A request's answer."""

    id: int | str
    result: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorResponse:
    """A request's failure."""

    id: int | str | None
    code: int
    message: str
    data: Any = None


WireMessage = Request | Notification | Response | ErrorResponse


def encode_message(message: WireMessage) -> bytes:
    """Return one message as a line of JSON."""
    body: dict[str, Any] = {"jsonrpc": "2.0"}
    match message:
        case Request(id=id_, method=method, params=params):
            body.update(id=id_, method=method, params=dict(params))
        case Notification(method=method, params=params):
            body.update(method=method, params=dict(params))
        case Response(id=id_, result=result):
            body.update(id=id_, result=result)
        case ErrorResponse(id=id_, code=code, message=text, data=data):
            error: dict[str, Any] = {"code": code, "message": text}
            if data is not None:
                error["data"] = data
            body.update(id=id_, error=error)
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def decode_message(line: bytes | str) -> WireMessage:
    """Return the message one line holds; raise ProtocolError if it is not JSON-RPC 2.0."""
    try:
        body = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
        raise ProtocolError("not a JSON-RPC 2.0 message")
    id_ = body.get("id")
    if id_ is not None and (isinstance(id_, bool) or not isinstance(id_, int | str)):
        raise ProtocolError("an id must be a number or a string")
    if "method" in body:
        method, params = body["method"], body.get("params", {})
        if not isinstance(method, str) or not isinstance(params, dict):
            raise ProtocolError("a method must be a string and its params an object")
        if id_ is None:
            return Notification(method=method, params=params)
        return Request(id=id_, method=method, params=params)
    if id_ is None and "error" not in body:
        raise ProtocolError("a response needs an id")
    if "error" in body:
        error = body["error"]
        if not isinstance(error, dict) or not isinstance(error.get("code"), int):
            raise ProtocolError("an error needs a code")
        return ErrorResponse(id=id_, code=error["code"], message=str(error.get("message", "")),
                             data=error.get("data"))
    if "result" not in body:
        raise ProtocolError("a response needs a result or an error")
    assert id_ is not None
    return Response(id=id_, result=body["result"])
