"""Where the Anthropic request puts its prompt-cache breakpoints."""

from __future__ import annotations

from typing import Any

from aimon_core.llm import (
    LLMRequest,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    model_info,
)
from aimon_core.llm._anthropic import request_params

MODEL = "claude-sonnet-5-5"
EPHEMERAL = {"type": "ephemeral"}
TOOLS = (
    ToolDefinition(name="Read", description="Read a file.", input_schema={"type": "object"}),
    ToolDefinition(name="Grep", description="Search.", input_schema={"type": "object"}),
)


def params(*messages: Message) -> dict[str, Any]:
    request = LLMRequest(model=MODEL, system="You are aimon.", messages=messages, tools=TOOLS)
    return request_params(request, model_info(MODEL))


def calls(*ids: str) -> Message:
    uses = tuple(ToolUseBlock(id=i, name="Read", input={"file_path": f"/{i}"}) for i in ids)
    return Message(role="assistant", content=(ThinkingBlock(thinking="t", signature="s"), *uses))


def results(*ids: str) -> Message:
    return Message(role="user", content=tuple(
        ToolResultBlock(tool_use_id=i, content=(TextBlock(text=f"body {i}"),)) for i in ids
    ))


def marked(body: dict[str, Any]) -> list[tuple[int, int]]:
    """Return (message index, block index) of every message block carrying cache_control."""
    return [
        (m, b)
        for m, message in enumerate(body["messages"])
        for b, block in enumerate(message["content"])
        if "cache_control" in block
    ]


def test_a_first_request_marks_tools_system_and_its_only_message() -> None:
    body = params(Message.user("go"))
    assert body["tools"][-1]["cache_control"] == EPHEMERAL
    assert body["system"][0]["cache_control"] == EPHEMERAL
    assert marked(body) == [(0, 0)]
    assert str(body).count("cache_control") == 3


def test_each_iteration_marks_where_the_previous_request_ended() -> None:
    first = (Message.user("go"),)
    second = (*first, calls("a"), results("a"))
    third = (*second, calls("b", "c"), results("b", "c"))
    assert marked(params(*second)) == [(0, 0), (2, 0)]
    # The third request's second-newest breakpoint is exactly the second request's newest.
    assert marked(params(*third)) == [(2, 0), (4, 1)]
    assert str(params(*third)).count("cache_control") == 4  # the API allows at most 4


def test_a_wide_batch_of_parallel_calls_still_reads_the_previous_prefix() -> None:
    ids = [f"t{i}" for i in range(12)]  # 24 new blocks: past the API's ~20-block look-back
    before = (Message.user("go"), calls("a"), results("a"))
    after = (*before, calls(*ids), results(*ids))
    assert marked(params(*before))[-1] == (2, 0)
    assert (2, 0) in marked(params(*after))


def test_a_new_turn_reads_the_last_request_of_the_previous_turn() -> None:
    previous = (Message.user("go"), calls("a"), results("a"))
    answer = Message(role="assistant", content=(TextBlock(text="done"),))
    body = params(*previous, answer, Message.user("next"))
    assert marked(body) == [(2, 0), (4, 0)]


def test_a_breakpoint_never_lands_on_a_thinking_block() -> None:
    body = params(Message.user("go"), calls("a"), results("a"))
    for m, b in marked(body):
        assert body["messages"][m]["content"][b]["type"] not in ("thinking", "redacted_thinking")
