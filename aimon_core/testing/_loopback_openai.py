"""Render scripted replies in the OpenAI Chat Completions wire format."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Only for annotations: `_loopback` imports this module at run time.
    from ._loopback import Reply, ScriptedToolCall

_FINISH_REASONS = {"end": "stop", "tool_use": "tool_calls", "max_tokens": "length"}

# status -> (error.type, error.code), as the real API sends them.
_DEFAULT_ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}

DONE = b"data: [DONE]\n\n"


def stream_events(reply: Reply, body: Mapping[str, Any]) -> list[bytes]:
    """Return every SSE event of a streamed reply, through `data: [DONE]`."""
    options = body.get("stream_options")
    include_usage = isinstance(options, Mapping) and bool(options.get("include_usage"))
    head = _head(body, "chat.completion.chunk")
    if include_usage:
        # The real API sends `"usage": null` on every chunk but the last when usage is asked for.
        head["usage"] = None

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return _data({**head, "choices": [choice]})

    events = [chunk({"role": "assistant", "content": ""})]
    # Local OpenAI-compatible servers (vLLM, DeepSeek, Ollama) stream reasoning this way.
    events.extend(chunk({"reasoning_content": p}) for p in _halves(reply.thinking))
    events.extend(chunk({"content": p}) for p in _halves(reply.text))
    for index, call in enumerate(reply.tool_calls):
        function = {"name": call.name, "arguments": ""}
        first = {"index": index, "id": _call_id(call), "type": "function", "function": function}
        events.append(chunk({"tool_calls": [first]}))
        events.extend(
            chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]})
            for p in _halves(_arguments(call))
        )
    events.append(chunk({}, _FINISH_REASONS[reply.stop_kind]))
    if include_usage:
        events.append(_data({**head, "choices": [], "usage": _usage(reply)}))
    events.append(DONE)
    return events


def message_body(reply: Reply, body: Mapping[str, Any]) -> dict[str, Any]:
    """Return the JSON body of a non-streamed reply."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.text or (None if reply.tool_calls else ""),
        "refusal": None,
    }
    if reply.thinking:
        message["reasoning_content"] = reply.thinking
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id(call),
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments(call)},
            }
            for call in reply.tool_calls
        ]
    choice = {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": _FINISH_REASONS[reply.stop_kind],
    }
    return {**_head(body, "chat.completion"), "choices": [choice], "usage": _usage(reply)}


def error_body(status: int, error_type: str | None, message: str) -> dict[str, Any]:
    """Return the JSON body of an error response; `error_type` becomes `error.code`."""
    kind, code = _DEFAULT_ERRORS.get(status, ("server_error", None))
    if error_type == "insufficient_quota":
        kind = error_type
    return {"error": {"message": message, "type": kind, "param": None, "code": error_type or code}}


def stream_error_event() -> bytes:
    """Return the data line a server sends when it fails mid-stream."""
    return _data(error_body(500, None, "The server had an error while processing your request."))


def _head(body: Mapping[str, Any], kind: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-" + secrets.token_hex(12),
        "object": kind,
        "created": int(time.time()),
        "model": str(body.get("model", "loopback")),
        "system_fingerprint": "fp_loopback",
    }


def _usage(reply: Reply) -> dict[str, Any]:
    # OpenAI counts cached tokens inside prompt_tokens; Reply counts them apart (as Anthropic does).
    prompt = reply.input_tokens + reply.cache_read_tokens + reply.cache_write_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": reply.output_tokens,
        "total_tokens": prompt + reply.output_tokens,
        "prompt_tokens_details": {
            "cached_tokens": reply.cache_read_tokens,
            "cache_write_tokens": reply.cache_write_tokens,
        },
    }


def _call_id(call: ScriptedToolCall) -> str:
    return call.id or "call_" + secrets.token_hex(12)


def _arguments(call: ScriptedToolCall) -> str:
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(dict(call.input), separators=(",", ":"))


def _halves(text: str) -> list[str]:
    """Split `text` in two so that clients must assemble deltas; keep short text whole."""
    if len(text) < 2:
        return [text] if text else []
    middle = len(text) // 2
    return [text[:middle], text[middle:]]


def _data(data: Mapping[str, Any]) -> bytes:
    payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return f"data: {payload}\n\n".encode()
