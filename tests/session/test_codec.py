"""The JSONL codec: lossless both ways, strict on read."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from aimon_core.llm import Message
from aimon_core.session import SessionCodecError, message_from_json, message_to_json
from aimon_core.session._codec import (
    HeaderLine,
    MessageLine,
    SideLine,
    SnapshotLine,
    TranscriptLine,
    line_from_json,
    line_to_json,
)
from aimon_core.session._ids import SessionId
from aimon_core.session._record import BudgetOverride, ModelChoice, SessionTotals

AT = datetime(2025, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)


def test_every_block_round_trips(conversation: tuple[Message, ...]) -> None:
    for message in conversation:
        encoded = json.loads(json.dumps(message_to_json(message)))
        assert message_from_json(encoded) == message


def test_every_line_round_trips_as_one_ascii_line(conversation: tuple[Message, ...]) -> None:
    lines: list[TranscriptLine] = [
        HeaderLine(
            session_id=SessionId("20250102-030405-abcdef"),
            project_root="/home/me/repo",
            agent_ref="default",
            created_at=AT,
            title="Fix it",
        ),
        MessageLine(at=AT, message=conversation[1]),
        SideLine(
            at=AT,
            totals=SessionTotals(turns=1, cost_usd=0.25),
            budget_override=BudgetOverride(max_iterations=3),
            compaction_failure_count=2,
            approvals=("Read(*)",),
            model_choice=ModelChoice(model="claude-opus-4-8", provider="anthropic"),
        ),
        SideLine(
            at=AT,
            totals=SessionTotals(),
            budget_override=None,
            compaction_failure_count=0,
            approvals=(),
        ),
        SnapshotLine(at=AT, messages=conversation),
    ]
    for line in lines:
        text = line_to_json(line)
        assert "\n" not in text
        assert text.isascii()
        assert line_from_json(text) == line


@pytest.mark.parametrize(
    ("obj", "error"),
    [
        ({"role": "system", "content": []}, "unknown message role"),
        ({"role": "user"}, "missing 'content'"),
        ({"role": "user", "content": "hi"}, "'content' must be of type list"),
        ({"role": "user", "content": [{"type": "video"}]}, "unknown content block type"),
        ({"role": "user", "content": [{"type": "text"}]}, "missing 'text'"),
        ({"role": "user", "content": [{"type": "text", "text": 5}]}, "must be of type str"),
        (
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "1", "name": "x", "input": []}],
            },
            "'input' must be of type dict",
        ),
        (
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "1",
                        "content": [{"type": "thinking", "thinking": "x"}],
                    }
                ],
            },
            "only text and image",
        ),
        (
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "1", "content": [], "is_error": "yes"}
                ],
            },
            "'is_error' must be of type bool",
        ),
        ([], "must be a JSON object"),
    ],
)
def test_malformed_messages_are_rejected(obj: object, error: str) -> None:
    with pytest.raises(SessionCodecError, match=error):
        message_from_json(obj)


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("{not json", "invalid JSON"),
        (b"\xff\xfe", "invalid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"type": "comment"}', "unknown line type"),
        ('{"type": "message", "at": "yesterday", "message": {}}', "not an ISO 8601 time"),
        ('{"type": "message", "at": "2025-01-01T00:00:00", "message": {}}', "no time zone"),
        ('{"type": "side", "at": "2025-01-01T00:00:00+00:00", "totals": []}', "'totals' must be"),
        (
            '{"type": "side", "at": "2025-01-01T00:00:00+00:00", "totals": {"turns": true}}',
            "'turns' must be of type int",
        ),
        (
            '{"type": "side", "at": "2025-01-01T00:00:00+00:00", "totals": {"turns": -1}}',
            "must not be negative",
        ),
        (
            '{"type": "side", "at": "2025-01-01T00:00:00+00:00", "totals": {},'
            ' "compaction_failure_count": 0, "model": "gpt-5.4"}',
            "'model' must be a JSON object or null",
        ),
        (
            '{"type": "side", "at": "2025-01-01T00:00:00+00:00", "totals": {},'
            ' "compaction_failure_count": 0, "model": {"model": "gpt-5.4"}}',
            "missing 'provider'",
        ),
        (
            '{"type": "header", "id": "../x", "project_root": "/", "agent_ref": "a",'
            ' "created_at": "2025-01-01T00:00:00+00:00", "version": 1}',
            "bad session id",
        ),
    ],
)
def test_malformed_lines_are_rejected(text: str | bytes, error: str) -> None:
    with pytest.raises(SessionCodecError, match=error):
        line_from_json(text)


def test_unknown_extra_keys_are_ignored() -> None:
    obj = {"role": "user", "content": [{"type": "text", "text": "hi", "cache": True}], "x": 1}
    assert message_from_json(obj) == Message.user("hi")


def test_tool_started_line_round_trips() -> None:
    from datetime import UTC, datetime

    from aimon_core.session._codec import ToolStartedLine, line_from_json, line_to_json

    line = ToolStartedLine(at=datetime(2026, 1, 2, tzinfo=UTC), ids=("toolu_1", "toolu_2"))
    text = line_to_json(line)
    assert '"type":"tool_started"' in text and '"ids":["toolu_1","toolu_2"]' in text
    assert line_from_json(text) == line


def test_defaults_are_not_written_and_older_lines_still_read() -> None:
    from aimon_core.llm import TextBlock, ToolResultBlock, ToolUseBlock

    call = Message(role="assistant", content=(ToolUseBlock(id="t1", name="Read", input={}),))
    result = Message(role="user", content=(
        ToolResultBlock(tool_use_id="t1", content=(TextBlock(text="x"),)),))
    assert message_to_json(call)["content"][0] == {
        "type": "tool_use", "id": "t1", "name": "Read", "input": {}}
    assert "is_error" not in message_to_json(result)["content"][0]
    # Lines an aimon before this one wrote, the defaults spelled out: the same messages.
    at = '{"type":"message","at":"2026-11-30T14:05:00+00:00","message":'
    older = [
        at + '{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read",'
        '"input":{},"input_error":null}]}}',
        at + '{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1",'
        '"content":[{"type":"text","text":"x"}],"is_error":false}]}}',
    ]
    for text, message in zip(older, (call, result), strict=True):
        read = line_from_json(text)
        assert isinstance(read, MessageLine) and read.message == message
