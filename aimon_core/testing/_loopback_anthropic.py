"""Render scripted replies in the Anthropic Messages wire format."""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Only for annotations: `_loopback` imports this module at run time.
    from ._loopback import Reply

_STOP_REASONS = {"end": "end_turn", "tool_use": "tool_use", "max_tokens": "max_tokens"}

_DEFAULT_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}

Block = tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]


def stream_events(reply: Reply, body: Mapping[str, Any]) -> list[bytes]:
    """Return every SSE event of a streamed reply, `message_start` to `message_stop`."""
    message = _message(reply, body, content=[], stop_reason=None)
    # As the real API does, message_start reports a provisional output count.
    message["usage"]["output_tokens"] = min(1, reply.output_tokens)
    events = [_sse("message_start", {"type": "message_start", "message": message})]
    events.append(_sse("ping", {"type": "ping"}))
    for index, (start, deltas, _) in enumerate(_blocks(reply)):
        events.append(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": start},
            )
        )
        events.extend(
            _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        )
        events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta = {"stop_reason": _STOP_REASONS[reply.stop_kind], "stop_sequence": None}
    events.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": delta,
                "usage": {"output_tokens": reply.output_tokens},
            },
        )
    )
    events.append(_sse("message_stop", {"type": "message_stop"}))
    return events


def message_body(reply: Reply, body: Mapping[str, Any]) -> dict[str, Any]:
    """Return the JSON body of a non-streamed reply."""
    content = [final for _, _, final in _blocks(reply)]
    return _message(reply, body, content=content, stop_reason=_STOP_REASONS[reply.stop_kind])


def error_body(status: int, error_type: str | None, message: str) -> dict[str, Any]:
    """Return the JSON body of an error response."""
    kind = error_type or _DEFAULT_ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def stream_error_event() -> bytes:
    """Return the `event: error` the API sends when it fails mid-stream."""
    return _sse("error", error_body(529, "overloaded_error", "Overloaded"))


def _message(
    reply: Reply, body: Mapping[str, Any], *, content: list[Any], stop_reason: str | None
) -> dict[str, Any]:
    return {
        "id": "msg_" + secrets.token_hex(12),
        "type": "message",
        "role": "assistant",
        "model": str(body.get("model", "loopback")),
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "cache_read_input_tokens": reply.cache_read_tokens,
            "cache_creation_input_tokens": reply.cache_write_tokens,
        },
    }


def _blocks(reply: Reply) -> list[Block]:
    """Return (start block, deltas, final block) for each content block of `reply`."""
    blocks: list[Block] = []
    if reply.thinking:
        signature = _signature(reply.thinking)
        deltas = [{"type": "thinking_delta", "thinking": p} for p in _halves(reply.thinking)]
        deltas.append({"type": "signature_delta", "signature": signature})
        blocks.append(
            (
                {"type": "thinking", "thinking": "", "signature": ""},
                deltas,
                {"type": "thinking", "thinking": reply.thinking, "signature": signature},
            )
        )
    if reply.text:
        blocks.append(
            (
                {"type": "text", "text": ""},
                [{"type": "text_delta", "text": p} for p in _halves(reply.text)],
                {"type": "text", "text": reply.text},
            )
        )
    for call in reply.tool_calls:
        call_id = call.id or "toolu_" + secrets.token_hex(12)
        arguments = (
            call.raw_arguments
            if call.raw_arguments is not None
            else json.dumps(dict(call.input), separators=(",", ":"))
        )
        head = {"type": "tool_use", "id": call_id, "name": call.name}
        blocks.append(
            (
                {**head, "input": {}},
                [{"type": "input_json_delta", "partial_json": p} for p in _halves(arguments)],
                # A non-streamed message carries an object, so raw_arguments cannot apply.
                {**head, "input": dict(call.input)},
            )
        )
    return blocks


def _halves(text: str) -> list[str]:
    """Split `text` in two so that clients must assemble deltas; keep short text whole."""
    if len(text) < 2:
        return [text] if text else []
    middle = len(text) // 2
    return [text[:middle], text[middle:]]


def _signature(thinking: str) -> str:
    return "loopback-" + hashlib.sha256(thinking.encode()).hexdigest()[:32]


def _sse(name: str, data: Mapping[str, Any]) -> bytes:
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return f"event: {name}\ndata: {payload}\n\n".encode()
