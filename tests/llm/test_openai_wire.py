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


def test_calls_on_one_client_share_one_kept_alive_connection() -> None:
    request = LLMRequest(model=MODEL, system="s", messages=(Message.user("hi"),))

    async def scenario(server: LoopbackModelServer) -> None:
        client = OpenAIClient(api_key="test-key", base_url=server.openai_base_url)
        try:
            for _ in range(3):
                await collect(client.stream(request))
        finally:
            await client.aclose()

    with LoopbackModelServer([Reply(text="one"), Reply(text="two"), Reply(text="three")]) \
            as server:
        asyncio.run(scenario(server))
    # The body is read to its end after data: [DONE], so the pool keeps the connection.
    assert len({recorded.connection for recorded in server.requests}) == 1


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


def test_the_head_follows_every_change_of_system_tools_settings_and_model() -> None:
    encoder = _BodyEncoder()
    other_tools = (*TOOLS, ToolDefinition(name="Grep", description="Search.",
                                          input_schema={"type": "object"}))
    messages = (Message.user("fix it"),)
    variants = [
        LLMRequest(model=MODEL, system="You are aimon.", messages=messages, tools=TOOLS),
        LLMRequest(model=MODEL, system="", messages=messages, tools=TOOLS),
        LLMRequest(model=MODEL, system="You are aimon.", messages=messages, tools=other_tools),
        LLMRequest(model=MODEL, system="You are aimon.", messages=messages, tools=TOOLS,
                   settings=ModelSettings(max_tokens=77, temperature=0.3)),
        LLMRequest(model="gpt-5.4-mini", system="You are aimon.", messages=messages,
                   tools=TOOLS),
    ]
    for request in [*variants, *reversed(variants), variants[0], variants[0]]:
        assert json.loads(encoder.encode(request, model_info(MODEL, "openai"))) \
            == expected(request)


def test_bodies_stay_exact_across_forks_compactions_and_retries() -> None:
    import random

    rng = random.Random(7)
    encoder = _BodyEncoder()
    branches: list[tuple[Message, ...]] = [(Message.user("fix it"),)]
    for step in range(120):
        pick = rng.randrange(len(branches))
        messages = branches[pick]
        roll = rng.random()
        if roll < 0.55:  # the conversation goes on
            messages = (*messages, *turn(step))
        elif roll < 0.7 and len(messages) > 2:  # a fork from an earlier point
            messages = messages[:rng.randrange(1, len(messages))]
            branches.append(messages)
        elif roll < 0.8 and len(messages) > 3:  # compacted: the start is replaced
            messages = (Message.user(f"summary {step}"), *messages[len(messages) // 2:])
        elif roll < 0.9:  # equal messages, other objects (a reload)
            messages = tuple(Message(role=m.role, content=m.content) for m in messages)
        branches[pick] = messages
        request = LLMRequest(model=MODEL, system="s", messages=messages, tools=TOOLS)
        body = encoder.encode(request, model_info(MODEL, "openai"))
        assert json.loads(body) == expected(request), step
