"""Incremental repair and estimates equal the whole-history results over generated histories.

`TranscriptRepair` and `RunningEstimate` walk only what a conversation adds at its end; after
any sequence of calls — growing, replaced by a compaction, `started` changing, tools changing
— each answer must equal the answer of a walk of the whole history (`repair_tool_pairs` as it
was written before it became incremental, kept here as the reference; `request_tokens`).
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterator, Sequence

from aimon_core.agent._transcript import TranscriptRepair, _missing, repair_tool_pairs
from aimon_core.compact import RunningEstimate, request_tokens
from aimon_core.llm import (
    ContentBlock,
    ImageBlock,
    LLMRequest,
    Message,
    TextBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
)


def reference_repair(messages: Sequence[Message], started: Collection[str] = ()
                     ) -> tuple[Message, ...]:
    """`repair_tool_pairs` as a single whole walk, with no shortcut (the specification)."""
    repaired: list[Message] = []
    pending: dict[str, None] = {}
    for message in messages:
        if message.role == "user":
            message = _reference_answer(message, pending, started)
            pending = {}
            if not message.content:
                continue
        elif pending:
            repaired.append(Message(role="user", content=tuple(
                _missing(i, started) for i in pending)))
            pending = {}
        if message.role == "assistant":
            pending = {use.id: None for use in message.tool_uses}
        repaired.append(message)
    if pending:
        repaired.append(Message(role="user", content=tuple(_missing(i, started)
                                                           for i in pending)))
    return tuple(repaired)


def _reference_answer(message: Message, pending: dict[str, None],
                      started: Collection[str]) -> Message:
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
    order = {i: n for n, i in enumerate(pending)}
    ordered = sorted([*results, *missing], key=lambda b: order[b.tool_use_id])
    if not missing and len(kept) == len(message.content) and kept[: len(results)] == ordered:
        return message
    return Message(role="user", content=(*ordered, *others))


def _result(tool_use_id: str, rng: random.Random) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=tool_use_id, content=(TextBlock(
        text="out " * rng.randint(0, 30)),), is_error=rng.random() < 0.1)


def _answers(ids: list[str], rng: random.Random) -> list[ContentBlock]:
    """The results of `ids`: usually all in order, sometimes broken in every way."""
    blocks: list[ContentBlock] = [_result(i, rng) for i in ids]
    shape = rng.random()
    if shape < 0.1 and blocks:
        blocks.pop(rng.randrange(len(blocks)))  # one missing
    elif shape < 0.2:
        rng.shuffle(blocks)  # out of order
    elif shape < 0.25 and blocks:
        blocks.append(blocks[0])  # answered twice
    elif shape < 0.3:
        blocks.append(_result(f"orphan{rng.randint(0, 99)}", rng))
    if rng.random() < 0.2:
        blocks.insert(rng.randint(0, len(blocks)), TextBlock(text="and also"))
    return blocks


def history(rng: random.Random, size: int) -> Iterator[Message]:
    """A conversation of `size` messages with the faults crashes and cut-off turns leave."""
    calls = 0
    last: list[str] = []
    for _ in range(size):
        roll = rng.random()
        if roll < 0.45:
            last = [f"t{calls + n}" for n in range(rng.choice((0, 1, 1, 2, 3)))]
            calls += len(last)
            content: list[ContentBlock] = [TextBlock(text="let me see " * rng.randint(0, 9))]
            content += [ToolUseBlock(id=i, name="Read", input={"file_path": f"f{i}.py"})
                        for i in last]
            yield Message(role="assistant", content=tuple(content))
        elif roll < 0.85 and last:
            yield Message(role="user", content=tuple(_answers(last, rng)))
            last = []
        elif roll < 0.95:
            yield Message.user("go on " * rng.randint(1, 5))
        else:
            yield Message(role="user", content=(ImageBlock(media_type="image/png", data="AAAA"),))


def test_incremental_repair_equals_a_whole_walk_over_generated_histories() -> None:
    rng = random.Random(13)
    for _ in range(60):
        messages = list(history(rng, rng.randint(0, 80)))
        repair = TranscriptRepair()
        started: tuple[str, ...] = ()
        end = 0
        while end < len(messages):
            end = min(len(messages), end + rng.choice((0, 1, 1, 2, 5)))
            if rng.random() < 0.1:
                started = tuple(f"t{rng.randint(0, 40)}" for _ in range(rng.randint(0, 3)))
            conversation = messages[:end]
            if rng.random() < 0.05:  # compacted: the start is replaced
                messages[:end // 2] = [Message.user("summary")]
                conversation = messages[:max(1, end - end // 2 + 1)]
                end = len(conversation)
            expected = reference_repair(conversation, started)
            assert repair(conversation, started) == expected
            assert repair_tool_pairs(conversation, started) == expected


def test_repair_keeps_the_objects_of_what_it_did_not_change() -> None:
    messages = list(history(random.Random(5), 200))
    repair = TranscriptRepair()
    first = repair(messages[:150])
    second = repair(messages)
    assert all(a is b for a, b in zip(first[:-1], second, strict=False))
    assert reference_repair(messages) == second


def test_running_estimate_equals_request_tokens_over_growing_requests() -> None:
    rng = random.Random(11)
    tools: tuple[ToolDefinition, ...] = (
        ToolDefinition(name="Read", description="Read.", input_schema={"type": "object"}),)
    for _ in range(30):
        messages = list(history(rng, rng.randint(1, 60)))
        estimate = RunningEstimate()
        system = "sys"
        for end in range(1, len(messages) + 1):
            if rng.random() < 0.1:
                system = "sys " * rng.randint(1, 50)
            if rng.random() < 0.05:
                tools = (*tools, ToolDefinition(name=f"T{end}", description="x",
                                                input_schema={"n": end}))
            conversation = tuple(messages[:end])
            if rng.random() < 0.1:  # a compaction, or a request the repair changed
                conversation = (Message.user("summary"), *conversation[end // 2:])
            request = LLMRequest(model="m", system=system, messages=conversation, tools=tools)
            assert estimate.request(request) == request_tokens(request)
            assert estimate.messages(conversation) == request_tokens(
                LLMRequest(model="m", system="", messages=conversation))


def test_a_repair_primed_with_a_turns_history_equals_a_whole_walk() -> None:
    from aimon_core.live._history import turn_history

    rng = random.Random(29)
    primed_some = 0
    for _ in range(80):
        stored = list(history(rng, rng.randint(0, 60)))
        started = tuple(f"t{rng.randint(0, 30)}" for _ in range(rng.randint(0, 2)))
        built = turn_history(stored, Message.user("next"), started)
        repair = TranscriptRepair()
        repair.prime(built.history)
        primed_some += bool(built.history)
        # A fixed point of the walk (the calls its last message makes are the prompt's to
        # answer; alone, they get a synthetic answer).
        assert repair(built.history)[:len(built.history)] == built.history
        assert reference_repair(built.history)[:len(built.history)] == built.history
        repair.prime(built.history)
        conversation = [*built.history, built.prompt]
        for message in history(rng, rng.randint(0, 12)):
            expected = reference_repair(conversation)
            assert repair(conversation) == expected
            conversation.append(message)
    assert primed_some > 50
