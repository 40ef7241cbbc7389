"""Read a loopback server script from its JSON form."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ._loopback import (
    CutStream,
    Fault,
    RecordedRequest,
    Reply,
    ResetConnection,
    Responder,
    ScriptedToolCall,
    StallStream,
    Step,
    StreamError,
)


def loads_script(value: Any) -> list[Step] | Responder:
    """Build a script from its JSON form (a list of step objects, or `{"echo_tools": N}`).

    Step objects: `{"text": "hi"}`, `{"tool_calls": [{"name": "Read", "input": {...}}]}`
    (with optional "thinking", "stop", "input_tokens", "output_tokens", "cache_read_tokens",
    "cache_write_tokens"; a tool call may carry "id" and "raw_arguments"),
    `{"fault": 429, "headers": {...}, "error_type": "...", "message": "..."}`,
    `{"cut": 3, "text": "..."}` (optionally `"graceful": true`),
    `{"stall": 3, "seconds": 5.0, "text": "..."}`, `{"stream_error": 3, "text": "..."}`
    and `{"reset": true}`.
    """
    if isinstance(value, list) and len(value) == 1 and _is_echo(value[0]):
        value = value[0]
    if _is_echo(value):
        return _echo_tools(int(value["echo_tools"]))
    if not isinstance(value, list):
        raise ValueError(f"a script is a list of steps or {{'echo_tools': N}}, not {value!r}")
    return [_load_step(item) for item in value]


def _is_echo(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"echo_tools"}


_REPLY_KEYS = frozenset(
    {"text", "tool_calls", "thinking", "stop", "input_tokens", "output_tokens"}
    | {"cache_read_tokens", "cache_write_tokens"}
)
_STEP_KEYS: dict[str, frozenset[str]] = {
    "fault": frozenset({"fault", "headers", "error_type", "message"}),
    "reset": frozenset({"reset"}),
    "cut": _REPLY_KEYS | {"cut", "graceful"},
    "stall": _REPLY_KEYS | {"stall", "seconds"},
    "stream_error": _REPLY_KEYS | {"stream_error"},
}


def _load_step(item: Any) -> Step:
    if not isinstance(item, dict):
        raise ValueError(f"a script step is a JSON object, not {item!r}")
    kind = next((key for key in _STEP_KEYS if key in item), None)
    allowed = _STEP_KEYS[kind] if kind else _REPLY_KEYS
    if unknown := sorted(set(item) - allowed):
        raise ValueError(f"unknown keys {unknown!r} in script step {item!r}")
    match kind:
        case "fault":
            return Fault(
                status=int(item["fault"]),
                headers={str(k): str(v) for k, v in item.get("headers", {}).items()},
                error_type=item.get("error_type"),
                message=str(item.get("message", "scripted fault")),
            )
        case "reset":
            return ResetConnection()
        case "cut":
            reply = _load_reply(item)
            return CutStream(
                reply=reply, after_events=int(item["cut"]), graceful=bool(item.get("graceful"))
            )
        case "stall":
            seconds = float(item["seconds"])
            if not math.isfinite(seconds) or seconds < 0:
                raise ValueError(f"stall seconds must be a finite number >= 0, not {seconds!r}")
            return StallStream(
                reply=_load_reply(item), after_events=int(item["stall"]), seconds=seconds
            )
        case "stream_error":
            return StreamError(reply=_load_reply(item), after_events=int(item["stream_error"]))
    return _load_reply(item)


def _load_reply(item: Mapping[str, Any]) -> Reply:
    calls = tuple(
        ScriptedToolCall(
            name=str(call["name"]),
            input=dict(call.get("input", {})),
            id=call.get("id"),
            raw_arguments=call.get("raw_arguments"),
        )
        for call in item.get("tool_calls", ())
    )
    counts = {key: int(item[key]) for key in _REPLY_KEYS if key.endswith("_tokens") and key in item}
    return Reply(
        text=str(item.get("text", "")),
        tool_calls=calls,
        thinking=str(item.get("thinking", "")),
        stop=item.get("stop"),
        **counts,
    )


def _echo_tools(limit: int) -> Responder:
    """Call Glob until `limit` tool results are in the conversation, then answer "done"."""
    glob = ScriptedToolCall(name="Glob", input={"pattern": "*.md"})

    def respond(request: RecordedRequest) -> Step:
        if _count_tool_results(request) < limit:
            return Reply(tool_calls=(glob,))
        return Reply(text="done")

    return respond


def _count_tool_results(request: RecordedRequest) -> int:
    messages = request.body.get("messages")
    if not isinstance(messages, list):
        return 0
    if request.provider == "openai":
        return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "tool")
    return sum(
        1
        for m in messages
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for block in m["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    )
