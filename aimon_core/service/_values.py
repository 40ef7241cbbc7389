"""aimon's values on the service protocol's wire: JSON data tagged with their type.

The events of a session's stream, a turn's result, an approval's answer cross as JSON objects:
a frozen dataclass is `{"$type": "ToolCallStarted", ...its fields}`, an enum
`{"$enum": "StopCause", "value": ...}`, a model error `{"$error": "LLMError", ...}`.
`to_wire` and `from_wire` are the two directions. Only the types `_known_types` lists are
made from the wire (an allowlist): any other name is refused, never constructed.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from aimon_core.service._wire import ErrorCode, ProtocolError, RemoteError

# The modules of `aimon_core.agent` and `aimon_core.tools` whose exported values travel: events,
# approvals, budgets, workflow progress, tool result details and proposed changes.
_WIRE_MODULES = frozenset({"_events", "_approval", "_budget", "_workflow_events", "_detail",
                           "_preview"})


@cache
def _known_types() -> dict[str, type]:
    """Return every type the wire carries, by name: the allowlist `from_wire` builds from."""
    from aimon_core import agent, command, live, llm, session, tools

    found: dict[str, type] = {}
    for package in (agent, tools):
        for name in package.__all__:
            value = getattr(package, name)
            home = getattr(value, "__module__", "").rpartition(".")[2]
            if isinstance(value, type) and home in _WIRE_MODULES and (
                    dataclasses.is_dataclass(value) or issubclass(value, enum.Enum)):
                found[value.__name__] = value
    extra: tuple[type, ...] = (
        live.TurnQueued, live.TurnStarted, live.TurnFinished, live.CommandRan,
        live.LiveSessionStatus, command.CommandOutcome, tools.ToolResult, llm.Message,
        llm.TextBlock, llm.ImageBlock, llm.DocumentBlock, llm.ToolUseBlock,
        llm.ToolResultBlock, llm.ThinkingBlock, llm.Usage, session.SessionTotals,
        session.BudgetOverride, agent.ExecutionBudget)
    found.update((kind.__name__, kind) for kind in extra)
    return found


def to_wire(value: Any) -> Any:
    """Return `value` (an aimon value, or plain data holding them) as JSON data."""
    match value:
        case None | bool() | int() | float() | str():
            return value
        case enum.Enum():
            return {"$enum": type(value).__name__, "value": value.value}
        case Path():
            return str(value)
        case Exception():
            return _error_to_wire(value)
        case Mapping():
            return {str(key): to_wire(item) for key, item in value.items()}
        case list() | tuple():
            return [to_wire(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        body: dict[str, Any] = {"$type": type(value).__name__}
        for spec in dataclasses.fields(value):
            body[spec.name] = to_wire(getattr(value, spec.name))
        return body
    return str(value)  # what a hook's raw facts may hold (a path-like, a number type)


def _error_to_wire(error: BaseException) -> dict[str, Any]:
    from aimon_core.llm import LLMError

    if isinstance(error, LLMError):
        return {"$error": "LLMError", "message": error.message, "provider": error.provider,
                "status": error.status, "retry_after": error.retry_after, "url": error.url}
    return {"$error": type(error).__name__, "message": str(error)}


def from_wire(data: Any) -> Any:
    """Return the value `to_wire` made; raise ProtocolError for a type it does not carry."""
    match data:
        case list():
            return [from_wire(item) for item in data]
        case {"$type": str(name), **fields}:
            return _dataclass_from_wire(name, {str(k): v for k, v in fields.items()})
        case {"$enum": str(name), "value": value}:
            kind = _known_types().get(name)
            if kind is None or not issubclass(kind, enum.Enum):
                raise ProtocolError(f"unknown enum {name!r}")
            return kind(value)
        case {"$error": str(name), **fields}:
            return _error_from_wire(name, {str(k): v for k, v in fields.items()})
        case dict():
            return {key: from_wire(item) for key, item in data.items()}
    return data


def _dataclass_from_wire(name: str, fields: Mapping[str, Any]) -> Any:
    kind = _known_types().get(name)
    if kind is None or not dataclasses.is_dataclass(kind):
        raise ProtocolError(f"unknown type {name!r}")
    values: dict[str, Any] = {}
    for spec in dataclasses.fields(kind):
        if spec.name not in fields or not spec.init:
            continue
        value = from_wire(fields[spec.name])
        annotation = str(spec.type)
        if isinstance(value, list) and annotation.startswith("tuple"):
            value = tuple(value)
        elif annotation == "Path" and isinstance(value, str):
            value = Path(value)
        values[spec.name] = value
    try:
        return kind(**values)
    except TypeError as exc:
        raise ProtocolError(f"a {name} is missing fields: {exc}") from None


def _error_from_wire(name: str, fields: Mapping[str, Any]) -> Exception:
    from aimon_core.llm import LLMError

    message = str(fields.get("message", ""))
    if name == "LLMError":
        status, retry_after = fields.get("status"), fields.get("retry_after")
        return LLMError(message, provider=str(fields.get("provider") or ""),
                        status=status if isinstance(status, int) else None,
                        retry_after=float(retry_after) if isinstance(retry_after, int | float)
                        else None, url=str(fields.get("url") or ""))
    return RemoteError(int(ErrorCode.INTERNAL_ERROR), f"{name}: {message}")
