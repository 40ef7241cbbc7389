"""The JSONL codec: lossless both ways, strict on read."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
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


def test_the_fast_line_decoder_gives_what_json_loads_gives() -> None:
    import itertools
    import json

    from aimon_core.session._codec import _loads

    values = ['{"type":"message","at":"2026-11-30T14:05:00Z"}', '{"a":[1,2,{"b":null}]}',
              '"text"', "1", "-0.5e3", "NaN", "Infinity", "[]", "{}", "true", '"\\ud800"',
              '{"é":"中"}', '{"a":1}{"b":2}', '{"a":1},{"b":2}', '{"a":1', '{"a":1}}', "",
              "x", "{'a':1}", '{"a":1,}', "[1,]", "\x00", '{"a":"\x01"}', "1 2", "null"]
    spaces = ["", " ", "\t", "\n", "\r\n", "\x0b", "\u3000"]
    checked = 0
    for value, before, after in itertools.product(values, spaces, spaces):
        text = before + value + after
        try:
            expected: object = ("ok", json.loads(text))
        except ValueError:
            expected = "error"
        try:
            got: object = ("ok", _loads(text))
        except ValueError:
            got = "error"
        assert repr(got) == repr(expected), text  # repr: NaN equals itself
        checked += 1
    assert checked == len(values) * len(spaces) ** 2


def _block_table() -> list[object]:
    """Valid blocks of every kind, and each with one field removed or of another JSON type."""
    base: list[dict[str, object]] = [
        {"type": "text", "text": "hi"},
        {"type": "image", "media_type": "image/png", "data": "iVBO"},
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"p": 1}},
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {}, "input_error": "cut"},
        {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "x"}]},
        {"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": [
            {"type": "text", "text": "x"}, {"type": "image", "media_type": "a", "data": "b"}]},
        {"type": "thinking", "thinking": "hm", "signature": "s"},
        {"type": "document", "media_type": "application/pdf", "data": "JVBE", "title": "t"},
    ]
    others: list[object] = [None, 1, 0, True, False, 1.5, "x", "", [], {}, [1],
                            {"type": "text", "text": 1}, [{"type": "thinking", "thinking": "t"}],
                            [{"type": "text"}]]
    table: list[object] = [*base, None, 1, "text", [], {}, {"type": "nope"}, {"type": 1}]
    for block in base:
        for key in block:
            table.append({k: v for k, v in block.items() if k != key})
            table += [{**block, key: other} for other in others]
        table += [{**block, "extra": 1}, {**block, "is_error": None}, {**block, "input_error": 2}]
    return table


def _outcome(decode: Callable[[object], object], obj: object) -> tuple[str, object]:
    try:
        return ("ok", decode(obj))
    except SessionCodecError as exc:
        return ("error", str(exc))


def test_blocks_decode_the_same_on_the_plain_path_as_field_by_field() -> None:
    from aimon_core.session._codec import block_from_json, checked_block_from_json

    table = _block_table()
    assert len(table) > 400
    plain = 0
    for obj in table:
        assert _outcome(block_from_json, obj) == _outcome(checked_block_from_json, obj), obj
        plain += _outcome(block_from_json, obj)[0] == "ok"
    assert plain > 40


def test_messages_decode_the_same_on_the_plain_path_as_field_by_field() -> None:
    from aimon_core.llm import Message
    from aimon_core.session._codec import checked_block_from_json, message_from_json

    def checked(obj: object) -> Message:
        if not isinstance(obj, dict):
            raise SessionCodecError("a message must be a JSON object")
        role = obj.get("role")
        if not isinstance(role, str):
            raise SessionCodecError("'role' must be of type str" if "role" in obj
                                    else "missing 'role'")
        if role not in ("user", "assistant"):
            raise SessionCodecError(f"unknown message role {role!r}")
        content = obj.get("content")
        if not isinstance(content, list):
            raise SessionCodecError("'content' must be of type list" if "content" in obj
                                    else "missing 'content'")
        return Message(role="user" if role == "user" else "assistant",
                       content=tuple(checked_block_from_json(b) for b in content))

    roles: list[object] = ["user", "assistant", "system", 1, None, ["user"], {"a": 1}]
    contents: list[object] = [[{"type": "text", "text": "x"}], [], "x", None, [{"type": "x"}], {}]
    for role in roles:
        for content in contents:
            for obj in ({"role": role, "content": content}, {"role": role}, {"content": content},
                        [role, content]):
                assert _outcome(message_from_json, obj) == _outcome(checked, obj), obj


def _message_line_table(conversation: tuple[Message, ...]) -> list[str]:
    """Message lines as aimon writes them, and each changed in one way a hand or another
    writer might: the time, the framing, the keys, the blocks (old defaults, extras)."""
    messages: list[object] = [message_to_json(m) for m in conversation]
    messages += [{"role": "user", "content": [block]} for block in _block_table()]
    messages += [{"role": "user", "content": []}, {"role": "user", "content": [], "x": 1},
                 {"role": "user", "content": [{"type": "text", "text": "x"}], "x": 1},
                 {"content": [{"type": "text", "text": "x"}], "role": "assistant"},
                 {"role": "user", "content": [{"type": "text", "text": ""}]}, None, [], "x"]
    messages += [{"role": role, "content": [{"type": "text", "text": "x"}]}
                 for role in ("system", "User", 1, None)]
    for parts in ([{"type": "text", "text": "x"}], [{"type": "text", "text": "x", "extra": 1}],
                  [{"type": "text", "text": ""}], [{"type": "thinking", "text": "x"}],
                  [{"text": "x", "type": "text"}, {"type": "text", "text": "y"}], [{}], [1]):
        for error in ({}, {"is_error": True}, {"is_error": False}, {"is_error": 1}):
            result = {"type": "tool_result", "tool_use_id": "t1", "content": parts, **error}
            messages.append({"role": "user", "content": [result]})
    stamps = ["2026-11-30T14:05:00+00:00", "2026-11-30T14:05:00Z", "2026-11-30T14:05:00",
              "2026-11-30T16:05:00.123456+02:00", "yesterday", "", '2026\\"x', "2026\\u0041",
              "2026-11-30T14:05:00+00:00\x01"]
    table: list[str] = []
    for message in messages:
        body = json.dumps(message, ensure_ascii=True, separators=(",", ":"))
        for stamp in stamps:
            head = f'{{"type":"message","at":"{stamp}","message":'
            table += [head + body + "}", head + body + "} ", head + body + "}}",
                      head.replace('"message":', '"massage":') + body + "}",
                      head + " " + body + "}", head + body + ',"x":1}',
                      head + body + ',"message":' + body + "}", head + body]
        table += [f'{{"at":"{stamps[0]}","type":"message","message":{body}}}',
                  f'{{"type": "message", "at": "{stamps[0]}", "message": {body}}}']
    return table


def test_message_lines_decode_the_same_on_their_own_path(
        conversation: tuple[Message, ...]) -> None:
    from aimon_core.session._codec import message_line_from_json

    table = _message_line_table(conversation)
    assert len(table) > 20_000
    fast = plain = 0
    for text in table:
        read = message_line_from_json(text)
        if read is None:
            continue  # line_from_json decides it
        fast += 1
        assert line_from_json(text) == MessageLine(at=read[0], message=read[1]), text
        if read[1].plain_json is not None:
            plain += 1
            # The plain form: exactly what aimon writes today, read back to the same message.
            stored = json.loads(read[1].plain_json)
            assert stored == message_to_json(read[1]), text
            assert message_from_json(stored) == read[1]
        else:  # and every message in that form keeps it
            assert not _in_plain_form(text), text
    assert fast > 200 and plain > 40


def _in_plain_form(line: str) -> bool:
    """The plain form, said independently of the codec: the message JSON is what aimon
    writes for it, and its blocks are non-empty texts, calls and results of non-empty texts."""
    from aimon_core.llm import TextBlock, ToolResultBlock, ToolUseBlock

    stored = json.loads(line)["message"]
    message = message_from_json(stored)

    def plain(block: object) -> bool:
        match block:
            case TextBlock(text=text):
                return bool(text)
            case ToolUseBlock(input_error=error):
                return error is None
            case ToolResultBlock(content=parts):
                return bool(parts) and all(type(p) is TextBlock and p.text for p in parts)
        return False

    return (bool(message.content) and all(map(plain, message.content))
            and stored == message_to_json(message))


def test_the_plain_path_sets_every_field_of_what_it_builds() -> None:
    """The plain path builds messages with their slot setters: a field it does not know of
    (added to a message type) is refused when it is imported, not left unset."""
    from aimon_core.session._plain import _setters

    @dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
    class Grown:
        text: str
        extra: int = 0

    assert len(_setters(Grown, "text", "extra")) == 2
    with pytest.raises(TypeError, match="extra"):
        _setters(Grown, "text")


def test_defaults_are_not_written_and_older_lines_still_read() -> None:
    from aimon_core.llm import TextBlock, ToolResultBlock, ToolUseBlock
    from aimon_core.session._codec import message_line_from_json

    call = Message(role="assistant", content=(ToolUseBlock(id="t1", name="Read", input={}),))
    result = Message(role="user", content=(
        ToolResultBlock(tool_use_id="t1", content=(TextBlock(text="x"),)),))
    assert message_to_json(call)["content"][0] == {
        "type": "tool_use", "id": "t1", "name": "Read", "input": {}}
    assert "is_error" not in message_to_json(result)["content"][0]
    # Lines an aimon before this one wrote, the defaults spelled out: the same messages,
    # not in the plain form (their JSON is not the Messages API's).
    at = '{"type":"message","at":"2026-11-30T14:05:00+00:00","message":'
    older = [
        at + '{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read",'
        '"input":{},"input_error":null}]}}',
        at + '{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1",'
        '"content":[{"type":"text","text":"x"}],"is_error":false}]}}',
    ]
    for text, message in zip(older, (call, result), strict=True):
        read = message_line_from_json(text)
        assert read is not None and read[1] == message and read[1].plain_json is None


def test_the_stored_json_is_a_cache_not_a_part_of_the_message() -> None:
    import dataclasses

    from aimon_core.session._codec import message_line_from_json

    read = message_line_from_json('{"type":"message","at":"2026-11-30T14:05:00+00:00",'
                                  '"message":{"role":"user","content":[{"type":"text",'
                                  '"text":"hi"}]}}')
    assert read is not None
    message = read[1]
    assert message.plain_json == '{"role":"user","content":[{"type":"text","text":"hi"}]}'
    assert message == Message.user("hi") and hash(message) == hash(Message.user("hi"))
    assert "plain_json" not in repr(message)
    assert dataclasses.replace(message, content=()).plain_json is None
