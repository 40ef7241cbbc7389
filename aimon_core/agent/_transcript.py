"""Transcript invariants: every tool_use is answered by exactly one tool_result."""

from __future__ import annotations

from collections.abc import Sequence

from aimon_core.llm import ContentBlock, Message, TextBlock, ToolResultBlock

INTERRUPTED_RESULT = "Interrupted: this tool call did not finish (the user stopped the turn)."
NEVER_RAN_RESULT = "Not run: aimon stopped before this tool call ran."


def repair_tool_pairs(messages: Sequence[Message]) -> tuple[Message, ...]:
    """Return the messages with every tool_use answered and no orphan tool_result.

    A tool_use whose result is missing (a crash, a cut-off turn) gets a synthetic error result
    in the message that follows it; a tool_result that answers no tool_use of the message
    before it is dropped. Providers reject transcripts that break either rule.
    """
    repaired: list[Message] = []
    pending: dict[str, None] = {}
    for message in messages:
        if message.role == "user":
            message = _answer(message, pending)
            pending = {}
            if not message.content:
                continue
        elif pending:
            repaired.append(_synthetic(pending))
            pending = {}
        if message.role == "assistant":
            pending = {use.id: None for use in message.tool_uses}
        repaired.append(message)
    if pending:
        repaired.append(_synthetic(pending))
    return tuple(repaired)


def _answer(message: Message, pending: dict[str, None]) -> Message:
    answered: set[str] = set()
    kept: list[ContentBlock] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            if block.tool_use_id not in pending or block.tool_use_id in answered:
                continue
            answered.add(block.tool_use_id)
        kept.append(block)
    missing = [
        ToolResultBlock(tool_use_id=i, content=(TextBlock(text=NEVER_RAN_RESULT),), is_error=True)
        for i in pending
        if i not in answered
    ]
    results = [b for b in kept if isinstance(b, ToolResultBlock)]
    others = [b for b in kept if not isinstance(b, ToolResultBlock)]
    # Results first, in call order, as the providers expect.
    order = {i: n for n, i in enumerate(pending)}
    ordered = sorted([*results, *missing], key=lambda b: order[b.tool_use_id])
    if not missing and len(kept) == len(message.content) and kept[: len(results)] == ordered:
        return message
    return Message(role="user", content=(*ordered, *others))


def _synthetic(pending: dict[str, None]) -> Message:
    return Message(
        role="user",
        content=tuple(
            ToolResultBlock(tool_use_id=i, content=(TextBlock(text=NEVER_RAN_RESULT),),
                            is_error=True)
            for i in pending
        ),
    )
