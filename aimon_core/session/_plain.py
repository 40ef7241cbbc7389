"""A stored message in the plain form, built in one walk: the load path of a long session.

The plain form (`Message.plain_json`): a non-empty list of text (non-empty), tool_use (no
input error) and tool_result (of non-empty texts) blocks, no key but those each needs
(`is_error` only when true). Most messages of a session are in it, and a 10,000-message
session holds ~25,000 of its objects. They are built here with the slot setters of their
frozen dataclasses, which is what the generated `__init__` does, without its keyword
handling and its `object.__setattr__` lookup per field: the walk that checks the form and
builds the message takes ~10 ms for 10,000 messages against ~23 ms through
`message_from_json` and a separate check. `tests/session/test_codec.py` holds this path to
the checked one over a generated table of lines.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from aimon_core.llm import Message, TextBlock, ToolResultBlock, ToolUseBlock

__all__ = ["plain_message"]


def _setters(cls: type, *names: str) -> tuple[Any, ...]:
    """The slot setters of `cls`'s fields, which must be exactly `names` in order.

    A field added to a message type and not set here would be left unset: refused at import.
    """
    declared = tuple(f.name for f in fields(cls))
    if declared != names:
        raise TypeError(f"{cls.__name__} has fields {declared}; the plain path sets {names}")
    return tuple(cls.__dict__[name].__set__ for name in names)


_new = object.__new__
(_text,) = _setters(TextBlock, "text")
_use_id, _use_name, _use_input, _use_error = _setters(
    ToolUseBlock, "id", "name", "input", "input_error")
_result_id, _result_content, _result_error = _setters(
    ToolResultBlock, "tool_use_id", "content", "is_error")
_role, _content, _plain = _setters(Message, "role", "content", "plain_json")


def plain_message(obj: object, stored: str) -> Message | None:
    """Return the message `obj` (decoded from `stored`) holds if it is in the plain form,
    with `stored` as its `plain_json`; None for anything else, left to `message_from_json`.
    """
    if type(obj) is not dict or len(obj) != 2:
        return None
    role, content = obj.get("role"), obj.get("content")
    if (role != "user" and role != "assistant") or type(content) is not list or not content:
        return None
    blocks: list[object] = []
    for block in content:
        if type(block) is not dict:
            return None
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if len(block) != 2 or type(text) is not str or not text:
                return None
            built: Any = _new(TextBlock)
            _text(built, text)
        elif kind == "tool_use":
            call_id, name, tool_input = block.get("id"), block.get("name"), block.get("input")
            if (len(block) != 4 or type(call_id) is not str or type(name) is not str
                    or type(tool_input) is not dict):
                return None
            built = _new(ToolUseBlock)
            _use_id(built, call_id)
            _use_name(built, name)
            _use_input(built, tool_input)
            _use_error(built, None)
        elif kind == "tool_result":
            built = _plain_result(block)
            if built is None:
                return None
        else:
            return None
        blocks.append(built)
    message: Any = _new(Message)
    _role(message, role)
    _content(message, tuple(blocks))
    _plain(message, stored)
    return message  # type: ignore[no-any-return]


def _plain_result(block: dict[str, Any]) -> ToolResultBlock | None:
    use_id, parts, is_error = block.get("tool_use_id"), block.get("content"), block.get(
        "is_error", False)
    if (type(use_id) is not str or type(parts) is not list or not parts
            or len(block) != (4 if is_error is True else 3)):
        return None
    texts: list[TextBlock] = []
    for part in parts:
        if type(part) is not dict or len(part) != 2 or part.get("type") != "text":
            return None
        text = part.get("text")
        if type(text) is not str or not text:
            return None
        built: Any = _new(TextBlock)
        _text(built, text)
        texts.append(built)
    result: Any = _new(ToolResultBlock)
    _result_id(result, use_id)
    _result_content(result, tuple(texts))
    _result_error(result, is_error)
    return result  # type: ignore[no-any-return]
