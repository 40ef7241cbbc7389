"""The JSONL codec of the session store: one function per direction, strict on read.

Every reader raises SessionCodecError on a value of the wrong shape; the store turns that into
a skipped line and a load warning. Unknown extra keys are ignored so that an older aimon can
read lines a newer one wrote with additions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from aimon_core.llm import (
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from aimon_core.session._errors import SessionCodecError
from aimon_core.session._ids import SessionId, is_session_id
from aimon_core.session._record import BudgetOverride, ModelChoice, SessionTotals

FORMAT_VERSION = 1

JSONObject = dict[str, Any]
_T = TypeVar("_T")


# ---------------------------------------------------------------- lines of a session file


@dataclass(frozen=True, slots=True, kw_only=True)
class HeaderLine:
    """The first line of a session file."""

    session_id: SessionId
    project_root: str
    agent_ref: str
    created_at: datetime
    title: str = ""
    version: int = FORMAT_VERSION


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageLine:
    """One message appended to the transcript."""

    at: datetime
    message: Message


@dataclass(frozen=True, slots=True, kw_only=True)
class SideLine:
    """The side state, absolute values; the latest side line wins."""

    at: datetime
    totals: SessionTotals
    budget_override: BudgetOverride | None
    compaction_failure_count: int
    approvals: tuple[str, ...]
    reads: tuple[tuple[str, str], ...] = ()  # (path, content hash) the tools have seen
    model_choice: ModelChoice | None = None  # chosen with /model


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotLine:
    """The whole transcript after compaction; it replaces every message before it."""

    at: datetime
    messages: tuple[Message, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolStartedLine:
    """Tool calls about to run; a call listed here without a result may have run."""

    at: datetime
    ids: tuple[str, ...]


TranscriptLine = HeaderLine | MessageLine | SideLine | SnapshotLine | ToolStartedLine


def line_to_json(line: TranscriptLine) -> str:
    """Encode one line, without its newline."""
    obj: JSONObject
    match line:
        case HeaderLine():
            obj = {
                "type": "header",
                "version": line.version,
                "id": line.session_id,
                "project_root": line.project_root,
                "agent_ref": line.agent_ref,
                "created_at": line.created_at.isoformat(),
                "title": line.title,
            }
        case MessageLine():
            obj = {
                "type": "message",
                "at": line.at.isoformat(),
                "message": message_to_json(line.message),
            }
        case SideLine():
            obj = {
                "type": "side",
                "at": line.at.isoformat(),
                "totals": totals_to_json(line.totals),
                "budget_override": budget_override_to_json(line.budget_override),
                "compaction_failure_count": line.compaction_failure_count,
                "approvals": list(line.approvals),
            }
            if line.reads:
                obj["reads"] = dict(line.reads)
            if line.model_choice is not None:
                obj["model"] = {"model": line.model_choice.model,
                                "provider": line.model_choice.provider}
        case SnapshotLine():
            obj = {
                "type": "snapshot",
                "at": line.at.isoformat(),
                "messages": [message_to_json(m) for m in line.messages],
            }
        case ToolStartedLine():
            obj = {"type": "tool_started", "at": line.at.isoformat(), "ids": list(line.ids)}
    # ensure_ascii: a line is pure ASCII, so a lone surrogate in a tool's output cannot make
    # the write fail, and no Unicode line separator can confuse a line-splitting reader.
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":"))


def line_from_json(text: str | bytes) -> TranscriptLine:
    """Decode one line; raise SessionCodecError if it is not a valid line."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise SessionCodecError(f"invalid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise SessionCodecError("a line must be a JSON object")
    kind = _get(obj, "type", str)
    if kind == "header":
        session_id = _get(obj, "id", str)
        if not is_session_id(session_id):
            raise SessionCodecError(f"bad session id {session_id!r}")
        return HeaderLine(
            session_id=SessionId(session_id),
            project_root=_get(obj, "project_root", str),
            agent_ref=_get(obj, "agent_ref", str),
            created_at=_time(obj, "created_at"),
            title=_get(obj, "title", str, ""),
            version=_int(obj, "version"),
        )
    if kind == "message":
        return MessageLine(at=_time(obj, "at"), message=message_from_json(obj.get("message")))
    if kind == "side":
        approvals = _get(obj, "approvals", list, [])
        if not all(isinstance(a, str) for a in approvals):
            raise SessionCodecError("'approvals' must be a list of strings")
        return SideLine(
            at=_time(obj, "at"),
            totals=totals_from_json(obj.get("totals")),
            budget_override=budget_override_from_json(obj.get("budget_override")),
            compaction_failure_count=_int(obj, "compaction_failure_count", 0),
            approvals=tuple(approvals),
            reads=_reads(obj.get("reads")),
            model_choice=_model_choice(obj.get("model")),
        )
    if kind == "snapshot":
        messages = _get(obj, "messages", list)
        return SnapshotLine(
            at=_time(obj, "at"), messages=tuple(message_from_json(m) for m in messages)
        )
    if kind == "tool_started":
        ids = _get(obj, "ids", list)
        if not all(isinstance(i, str) for i in ids):
            raise SessionCodecError("'ids' must be a list of strings")
        return ToolStartedLine(at=_time(obj, "at"), ids=tuple(ids))
    raise SessionCodecError(f"unknown line type {kind!r}")


# ---------------------------------------------------------------- messages and blocks


def message_to_json(message: Message) -> JSONObject:
    """Encode a message as a JSON-able dict."""
    return {"role": message.role, "content": [block_to_json(b) for b in message.content]}


def message_from_json(obj: object) -> Message:
    """Decode a message; raise SessionCodecError if it is malformed."""
    if not isinstance(obj, dict):
        raise SessionCodecError("a message must be a JSON object")
    role = _get(obj, "role", str)
    if role == "user":
        return Message(role="user", content=_blocks(obj))
    if role == "assistant":
        return Message(role="assistant", content=_blocks(obj))
    raise SessionCodecError(f"unknown message role {role!r}")


def block_to_json(block: ContentBlock) -> JSONObject:
    """Encode a content block as a JSON-able dict."""
    match block:
        case TextBlock():
            return {"type": "text", "text": block.text}
        case ImageBlock():
            return {"type": "image", "media_type": block.media_type, "data": block.data}
        case DocumentBlock():
            return {
                "type": "document",
                "media_type": block.media_type,
                "data": block.data,
                "title": block.title,
            }
        case ToolUseBlock():
            # A key at its default is left out (readers default it).
            call: JSONObject = {
                "type": "tool_use",
                "id": block.id,
                "name": block.name,
                "input": dict(block.input),
            }
            if block.input_error is not None:
                call["input_error"] = block.input_error
            return call
        case ToolResultBlock():
            result: JSONObject = {
                "type": "tool_result",
                "tool_use_id": block.tool_use_id,
                "content": [block_to_json(b) for b in block.content],
            }
            if block.is_error:
                result["is_error"] = True
            return result
        case ThinkingBlock():
            return {
                "type": "thinking",
                "thinking": block.thinking,
                "signature": block.signature,
                "redacted_data": block.redacted_data,
            }


def block_from_json(obj: object) -> ContentBlock:
    """Decode a content block; raise SessionCodecError if it is malformed."""
    if not isinstance(obj, dict):
        raise SessionCodecError("a content block must be a JSON object")
    kind = _get(obj, "type", str)
    if kind == "text":
        return TextBlock(text=_get(obj, "text", str))
    if kind == "image":
        return ImageBlock(media_type=_get(obj, "media_type", str), data=_get(obj, "data", str))
    if kind == "document":
        return DocumentBlock(
            media_type=_get(obj, "media_type", str),
            data=_get(obj, "data", str),
            title=_optional(obj, "title", str),
        )
    if kind == "tool_use":
        return ToolUseBlock(
            id=_get(obj, "id", str),
            name=_get(obj, "name", str),
            input=_get(obj, "input", dict),
            input_error=_optional(obj, "input_error", str),
        )
    if kind == "tool_result":
        content: list[TextBlock | ImageBlock] = []
        for item in _get(obj, "content", list):
            block = block_from_json(item)
            if not isinstance(block, TextBlock | ImageBlock):
                raise SessionCodecError("a tool result holds only text and image blocks")
            content.append(block)
        return ToolResultBlock(
            tool_use_id=_get(obj, "tool_use_id", str),
            content=tuple(content),
            is_error=_get(obj, "is_error", bool, False),
        )
    if kind == "thinking":
        return ThinkingBlock(
            thinking=_get(obj, "thinking", str),
            signature=_optional(obj, "signature", str),
            redacted_data=_optional(obj, "redacted_data", str),
        )
    raise SessionCodecError(f"unknown content block type {kind!r}")


# ---------------------------------------------------------------- side values


def _reads(raw: object) -> tuple[tuple[str, str], ...]:
    """Decode the read-state map; a malformed one is dropped (the files are simply re-read)."""
    if not isinstance(raw, dict):
        return ()
    return tuple((k, v) for k, v in raw.items() if isinstance(k, str) and isinstance(v, str))


def totals_to_json(totals: SessionTotals) -> JSONObject:
    """Encode session totals."""
    return {
        "turns": totals.turns,
        "iterations": totals.iterations,
        "input_tokens": totals.input_tokens,
        "output_tokens": totals.output_tokens,
        "cache_read_tokens": totals.cache_read_tokens,
        "cache_write_tokens": totals.cache_write_tokens,
        "cost_usd": totals.cost_usd,
    }


def totals_from_json(obj: object) -> SessionTotals:
    """Decode session totals; raise SessionCodecError if malformed."""
    if not isinstance(obj, dict):
        raise SessionCodecError("'totals' must be a JSON object")
    return SessionTotals(
        turns=_int(obj, "turns", 0),
        iterations=_int(obj, "iterations", 0),
        input_tokens=_int(obj, "input_tokens", 0),
        output_tokens=_int(obj, "output_tokens", 0),
        cache_read_tokens=_int(obj, "cache_read_tokens", 0),
        cache_write_tokens=_int(obj, "cache_write_tokens", 0),
        cost_usd=_number(obj, "cost_usd", 0.0),
    )


def budget_override_to_json(override: BudgetOverride | None) -> JSONObject | None:
    """Encode a budget override (None stays None)."""
    if override is None:
        return None
    obj: JSONObject = {
        "max_iterations": override.max_iterations,
        "max_tokens": override.max_tokens,
        "max_seconds": override.max_seconds,
    }
    return obj


def budget_override_from_json(obj: object) -> BudgetOverride | None:
    """Decode a budget override; raise SessionCodecError if malformed."""
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise SessionCodecError("'budget_override' must be a JSON object or null")
    return BudgetOverride(
        max_iterations=None if obj.get("max_iterations") is None else _int(obj, "max_iterations"),
        max_tokens=None if obj.get("max_tokens") is None else _int(obj, "max_tokens"),
        max_seconds=None if obj.get("max_seconds") is None else _number(obj, "max_seconds"),
    )


def _model_choice(obj: object) -> ModelChoice | None:
    if obj is None:
        return None
    if not isinstance(obj, dict):
        raise SessionCodecError("'model' must be a JSON object or null")
    return ModelChoice(model=_get(obj, "model", str), provider=_get(obj, "provider", str))


# ---------------------------------------------------------------- strict field readers

_MISSING: Any = object()


def _get(obj: Mapping[str, Any], key: str, kind: type[_T], default: _T = _MISSING) -> _T:
    value = obj.get(key, default)
    if type(value) is kind:  # what JSON gives (a bool is never an int's exact type)
        return value
    if value is _MISSING:
        raise SessionCodecError(f"missing {key!r}")
    # bool is an int in Python; a JSON true must not pass as a count.
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise SessionCodecError(f"{key!r} must be of type {kind.__name__}")
    return value


def _optional(obj: Mapping[str, Any], key: str, kind: type[_T]) -> _T | None:
    if obj.get(key) is None:
        return None
    return _get(obj, key, kind)


def _int(obj: Mapping[str, Any], key: str, default: int = _MISSING) -> int:
    value = _get(obj, key, int, default)
    if value < 0:
        raise SessionCodecError(f"{key!r} must not be negative")
    return value


def _number(obj: Mapping[str, Any], key: str, default: float = _MISSING) -> float:
    value = obj.get(key, default)
    if value is _MISSING:
        raise SessionCodecError(f"missing {key!r}")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SessionCodecError(f"{key!r} must be a number")
    return float(value)


def _time(obj: Mapping[str, Any], key: str) -> datetime:
    text = _get(obj, key, str)
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise SessionCodecError(f"{key!r} is not an ISO 8601 time: {text!r}") from None
    if value.tzinfo is None:
        raise SessionCodecError(f"{key!r} has no time zone: {text!r}")
    return value


def _blocks(obj: Mapping[str, Any]) -> tuple[ContentBlock, ...]:
    return tuple(map(block_from_json, _get(obj, "content", list)))
