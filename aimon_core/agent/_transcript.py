"""Transcript invariants: every tool_use is answered by exactly one tool_result."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from aimon_core.llm import ContentBlock, Message, TextBlock, ToolResultBlock

INTERRUPTED_RESULT = "Interrupted: this tool call did not finish (the user stopped the turn)."
NEVER_RAN_RESULT = "Not run: aimon stopped before this tool call ran."
MAY_HAVE_RUN_RESULT = (
    "This tool call started but aimon stopped before its result was recorded; it may have run "
    "(fully or partly). Check its effect before relying on it or running it again."
)


def repair_tool_pairs(
    messages: Sequence[Message], started: Collection[str] = ()
) -> tuple[Message, ...]:
    """Return the messages with every tool_use answered and no orphan tool_result.

    A tool_use whose result is missing (a crash, a cut-off turn) gets a synthetic error result
    in the message that follows it; a tool_result that answers no tool_use of the message
    before it is dropped. Providers reject transcripts that break either rule. A missing
    result of a call in `started` (recorded as started before it ran) says that the call
    may have run; any other says it did not run.
    """
    repaired: list[Message] = []
    pending: dict[str, None] = {}
    for message in messages:
        if message.role == "user":
            message = _answer(message, pending, started)
            pending = {}
            if not message.content:
                continue
        elif pending:
            repaired.append(_synthetic(pending, started))
            pending = {}
        if message.role == "assistant":
            pending = {use.id: None for use in message.tool_uses}
        repaired.append(message)
    if pending:
        repaired.append(_synthetic(pending, started))
    return tuple(repaired)


def _missing(tool_use_id: str, started: Collection[str]) -> ToolResultBlock:
    text = MAY_HAVE_RUN_RESULT if tool_use_id in started else NEVER_RAN_RESULT
    return ToolResultBlock(tool_use_id=tool_use_id, content=(TextBlock(text=text),),
                           is_error=True)


def _answer(message: Message, pending: dict[str, None], started: Collection[str]) -> Message:
    answered: set[str] = set()
    kept: list[ContentBlock] = []
    for block in message.content:
        if isinstance(block, ToolResultBlock):
            if block.tool_use_id not in pending or block.tool_use_id in answered:
                continue
            answered.add(block.tool_use_id)
        kept.append(block)
    missing = [_missing(i, started) for i in pending if i not in answered]
    results = [b for b in kept if isinstance(b, ToolResultBlock)]
    others = [b for b in kept if not isinstance(b, ToolResultBlock)]
    # Results first, in call order, as the providers expect.
    order = {i: n for n, i in enumerate(pending)}
    ordered = sorted([*results, *missing], key=lambda b: order[b.tool_use_id])
    if not missing and len(kept) == len(message.content) and kept[: len(results)] == ordered:
        return message
    return Message(role="user", content=(*ordered, *others))


def _synthetic(pending: dict[str, None], started: Collection[str]) -> Message:
    return Message(role="user", content=tuple(_missing(i, started) for i in pending))
