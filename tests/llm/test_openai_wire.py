"""The OpenAI request body aimon encodes itself: `request_params`, each message encoded once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from aimon_core.llm import (
    ImageBlock,
    LLMRequest,
    Message,
    ModelSettings,
    OpenAIClient,
    TextBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    collect,
    model_info,
)
from aimon_core.llm._openai import _BodyEncoder, request_params
from aimon_core.testing import LoopbackModelServer, Reply

MODEL = "gpt-5.4"
TOOLS = (ToolDefinition(name="Read", description="Read a file.",
                        input_schema={"type": "object", "properties": {"p": {"type": "string"}}}),)
PIXEL = "iVBORw0KGgo="


def expected(request: LLMRequest) -> dict[str, Any]:
    return dict(json.loads(json.dumps(request_params(request, model_info(MODEL, "openai")))))


def turn(i: int) -> tuple[Message, Message]:
    call = Message(role="assistant", content=(
        TextBlock(text=f"step {i} ü"), ToolUseBlock(id=f"t{i}", name="Read", input={"p": f"/{i}"})))
    content: tuple[TextBlock | ImageBlock, ...] = (TextBlock(text=f"body {i}"),)
    if i % 4 == 1:
        content = (*content, ImageBlock(media_type="image/png", data=PIXEL))
    result = Message(role="user", content=(
        ToolResultBlock(tool_use_id=f"t{i}", content=content, is_error=i % 3 == 0),
        TextBlock(text="note")))
    return call, result


def test_the_body_is_request_params_as_the_conversation_grows() -> None:
    encoder = _BodyEncoder()
    messages: tuple[Message, ...] = (Message.user("fix it"),)
    for i in range(10):
        request = LLMRequest(model=MODEL, system="You are aimon.", messages=messages, tools=TOOLS,
                             settings=ModelSettings(max_tokens=500, temperature=0.2))
        assert json.loads(encoder.encode(request, model_info(MODEL, "openai"))) \
            == expected(request), i
        messages = (*messages, *turn(i))
    empty = LLMRequest(model=MODEL, system="", messages=())
    assert json.loads(_BodyEncoder().encode(empty, model_info(MODEL, "openai"))) == expected(empty)


def test_the_sdk_sends_the_body_and_the_stream_is_assembled() -> None:
    request = LLMRequest(model=MODEL, system="s", messages=(Message.user("hi"), *turn(1)),
                         tools=TOOLS)

    async def scenario(server: LoopbackModelServer) -> Any:
        client = OpenAIClient(api_key="test-key", base_url=server.openai_base_url)
        try:
            return await collect(client.stream(request))
        finally:
            await client.aclose()

    with LoopbackModelServer([Reply(text="Hello.")]) as server:
        response = asyncio.run(scenario(server))
    recorded = server.requests[0]
    assert dict(recorded.body) == expected(request)
    assert recorded.headers["authorization"] == "Bearer test-key"
    assert recorded.headers["content-type"] == "application/json"
    assert response.text == "Hello."



def test_a_body_that_goes_on_after_done_costs_only_its_connection(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from aimon_core.llm import _openai

    monkeypatch.setattr(_openai, "_DRAIN_SECONDS", 0.05)

    async def endless() -> AsyncIterator[str]:
        yield "more"
        await asyncio.Event().wait()  # a server that never ends the body
        yield "never"

    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        started = loop.time()
        await _openai._drain(endless())
        return loop.time() - started

    assert asyncio.run(scenario()) < 5  # given up at the bound, not hung


def _message_table() -> list[Message]:
    """Messages of every shape a history holds: each block kind alone, in pairs, in threes."""
    from itertools import product

    from aimon_core.llm import DocumentBlock, ThinkingBlock

    image = ImageBlock(media_type="image/png", data=PIXEL)
    results = [ToolResultBlock(tool_use_id="t1", content=parts, is_error=error)
               for parts in ((TextBlock(text="out"),), (TextBlock(text=""),), (),
                             (TextBlock(text="a"), TextBlock(text="b")), (image,),
                             (TextBlock(text="seen"), image))
               for error in (False, True)]
    blocks = [TextBlock(text="hi ü"), TextBlock(text=""), image, *results,
              ToolUseBlock(id="t2", name="Read", input={"p": "/é", "n": [1, None]}),
              ToolUseBlock(id="t3", name="Bash", input={}, input_error="cut"),
              ThinkingBlock(thinking="hm", signature="s"),
              DocumentBlock(media_type="text/plain", data="aGk=", title="t"),
              DocumentBlock(media_type="application/pdf", data="JVBE")]
    contents: list[tuple[Any, ...]] = [()]
    for size in (1, 2, 3):
        contents += [tuple(c) for n, c in enumerate(product(blocks, repeat=size))
                     if size < 3 or n % 3 == 0]
    return [Message(role=role, content=c) for c in contents for role in ("user", "assistant")]


def test_a_tool_results_text_is_its_text_parts_joined() -> None:
    image = ImageBlock(media_type="image/png", data=PIXEL)
    for parts, text in (((TextBlock(text="one"),), "one"), ((), ""), ((image,), ""),
                        ((TextBlock(text="a"), TextBlock(text="b")), "a\nb"),
                        ((image, TextBlock(text="a")), "a"), ((TextBlock(text=""),), "")):
        assert ToolResultBlock(tool_use_id="t", content=parts).text == text


def test_tool_results_and_assistant_messages_translate_as_they_say() -> None:
    """A tool result becomes a tool message of its text, an assistant message its text and
    calls (in one pass over its blocks): held to what the message says."""
    from aimon_core.llm._openai import _assistant_param, _tool_param

    table = _message_table()
    assert len(table) > 6_000
    for message in table:
        for result in (b for b in message.content if isinstance(b, ToolResultBlock)):
            text = result.text or ("(the result is the image(s) in the next message)" if any(
                isinstance(p, ImageBlock) for p in result.content) else "")
            assert _tool_param(result) == {"role": "tool", "tool_call_id": result.tool_use_id,
                                           "content": f"Error: {text}" if result.is_error
                                           else text}
        if message.role == "user":
            continue
        calls = [{"id": c.id, "type": "function",
                  "function": {"name": c.name, "arguments": json.dumps(dict(c.input))}}
                 for c in message.tool_uses]
        want: dict[str, Any] = {"role": "assistant", "content": message.text or None}
        if calls:
            want["tool_calls"] = calls
        elif want["content"] is None:
            want["content"] = ""
        assert _assistant_param(message) == want, message
