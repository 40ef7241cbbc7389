"""How the database stores write a session's parts: one message, the side state (no driver)."""

from __future__ import annotations

import dataclasses
import json

from aimon_core.llm import Message
from aimon_core.session import (
    SessionCodecError,
    SessionRecord,
    SideLine,
    line_from_json,
    line_to_json,
    message_from_json,
    message_to_json,
)


def encode_message(message: Message) -> str:
    """Encode a message as stored (ASCII JSON: a lone surrogate cannot fail the write)."""
    return json.dumps(message_to_json(message), ensure_ascii=True, separators=(",", ":"))


def decode_message(body: str) -> Message:
    """Decode a stored message; raise SessionCodecError when it is not one."""
    try:
        return message_from_json(json.loads(body))
    except (ValueError, RecursionError) as exc:
        raise SessionCodecError(f"invalid JSON ({exc})") from None


def side_of(record: SessionRecord) -> str:
    """Encode a record's side state as the codec's side line."""
    return line_to_json(SideLine(
        at=record.updated_at, totals=record.totals, budget_override=record.budget_override,
        compaction_failure_count=record.compaction_failure_count, approvals=record.approvals,
        reads=record.reads, model_choice=record.model_choice))


def with_side(record: SessionRecord, side: str | None, warnings: list[str]) -> SessionRecord:
    """Return `record` with the stored side line's state (a bad one is a load warning)."""
    if side is None:
        return record
    try:
        line = line_from_json(side)
    except SessionCodecError as exc:
        warnings.append(f"side state skipped: {exc}")
        return dataclasses.replace(record, load_warnings=tuple(warnings))
    if not isinstance(line, SideLine):
        return record
    return dataclasses.replace(
        record, totals=line.totals, budget_override=line.budget_override,
        compaction_failure_count=line.compaction_failure_count, approvals=line.approvals,
        reads=line.reads, model_choice=line.model_choice)
