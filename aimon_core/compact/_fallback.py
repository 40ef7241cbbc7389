"""The fallback when no summary can be made: shorten, then drop, the oldest tool results."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aimon_core.compact._estimate import message_tokens
from aimon_core.llm import ContentBlock, Message, TextBlock, ToolResultBlock

# A shortened result keeps this much of its start and end: enough to recall what it was.
SHORT_HEAD_CHARS = 600
SHORT_TAIL_CHARS = 300
DROPPED_RESULT = (
    "[This tool result was removed to keep the conversation within the model's context "
    "window. Run the tool again if you need it.]"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Shed:
    """The transcript after the fallback, and how many tool results it shortened (and kept in
    part) or dropped."""

    messages: tuple[Message, ...]
    shortened: int = 0
    dropped: int = 0


def head_tail(text: str, *, head: int, tail: int, note: str) -> str:
    """Return the start and end of `text` around a note saying what was left out."""
    if len(text) <= head + tail:
        return text
    left_out = len(text) - head - tail
    return f"{text[:head]}\n\n[... {left_out:,} characters left out: {note} ...]\n\n{text[-tail:]}"


def _shorten(block: ToolResultBlock) -> ToolResultBlock:
    """Keep the head and tail of a long result (and only text: images go)."""
    too_long = len(block.text) > SHORT_HEAD_CHARS + SHORT_TAIL_CHARS + 200
    has_image = any(not isinstance(part, TextBlock) for part in block.content)
    if not (too_long or has_image):
        return block
    text = head_tail(
        block.text,
        head=SHORT_HEAD_CHARS,
        tail=SHORT_TAIL_CHARS,
        note="shortened to keep the conversation within the context window",
    )
    return dataclasses.replace(block, content=(TextBlock(text=text),))


def _drop(block: ToolResultBlock) -> ToolResultBlock:
    if block.text == DROPPED_RESULT:
        return block
    return dataclasses.replace(block, content=(TextBlock(text=DROPPED_RESULT),))


Change = Callable[[ToolResultBlock], ToolResultBlock]


def _rewrite(message: Message, change: Change) -> tuple[Message, list[str]]:
    """Apply `change` to every tool result of `message`; return it and the ids it changed."""
    changed: list[str] = []
    blocks: list[ContentBlock] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            new = change(block)
            if new is not block:
                changed.append(block.tool_use_id)
            blocks.append(new)
        else:
            blocks.append(block)
    if not changed:
        return message, changed
    return dataclasses.replace(message, content=tuple(blocks)), changed


def shed_tool_results(
    messages: Sequence[Message], *, target_tokens: int, keep_last: int = 1
) -> Shed:
    """Shorten the oldest tool results, then drop them, until the estimate fits the target.

    Every tool_result stays (its tool_use still gets an answer); only its content changes.
    The last `keep_last` messages are left alone (the results the model is about to read),
    unless nothing else makes the transcript fit.
    """
    current = list(messages)
    sizes = [message_tokens(m) for m in current]
    total = sum(sizes)
    touched: dict[Change, set[str]] = {_shorten: set(), _drop: set()}
    protected = max(0, len(current) - keep_last)
    for change, end in (
        (_shorten, protected), (_drop, protected), (_shorten, len(current)), (_drop, len(current)),
    ):  # fmt: skip
        for index in range(end):
            if total <= target_tokens:
                break
            new, changed = _rewrite(current[index], change)
            if changed:
                current[index] = new
                size = message_tokens(new)
                total += size - sizes[index]
                sizes[index] = size
                touched[change].update(changed)
    dropped = touched[_drop]
    return Shed(
        messages=tuple(current), shortened=len(touched[_shorten] - dropped), dropped=len(dropped)
    )
