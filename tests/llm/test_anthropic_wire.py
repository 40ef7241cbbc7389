"""The Anthropic request body aimon encodes itself, and the stream it reads without SDK events."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aimon_core.llm import (
    AnthropicClient,
    LLMRequest,
    Message,
    ModelSettings,
    TextBlock,
    ThinkingBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    collect,
    model_info,
)
from aimon_core.llm._anthropic import _BodyEncoder, request_params
from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall

MODEL = "claude-sonnet-5-5"
TOOLS = (ToolDefinition(name="Read", description="Read a file.",
                        input_schema={"type": "object", "properties": {"p": {"type": "string"}}}),)


def expected(request: LLMRequest) -> dict[str, Any]:
    """What `messages.create(**request_params(...), stream=True)` sends."""
    params = request_params(request, model_info(MODEL))
    params.update(params.pop("extra_body", {}))
    return {**params, "stream": True}


def turn(i: int) -> tuple[Message, Message]:
    call = Message(role="assistant", content=(
        ThinkingBlock(thinking="hm", signature=f"sig{i}"), TextBlock(text=f"step {i} ü"),
        ToolUseBlock(id=f"t{i}", name="Read", input={"p": f"/f{i}"})))
    result = Message(role="user", content=(
        ToolResultBlock(tool_use_id=f"t{i}", content=(TextBlock(text=f"body {i}\n"),),
                        is_error=i % 3 == 0),))
    return call, result


def test_the_body_is_request_params_as_the_conversation_grows() -> None:
    encoder = _BodyEncoder()
    messages: tuple[Message, ...] = (Message.user("fix it"),)
    settings = ModelSettings(temperature=0.5, max_tokens=2000)
    for i in range(12):
        request = LLMRequest(model=MODEL, system="You are aimon.", messages=messages,
                             tools=TOOLS, settings=settings, metadata={"user_id": "u"})
        body = json.loads(encoder.encode(request, model_info(MODEL)))
        assert body == expected(request), i
        messages = (*messages, *turn(i))
    # The same values again (a retry): the cached JSON gives the same body.
    request = LLMRequest(model=MODEL, system="s", messages=messages, tools=TOOLS)
    first = encoder.encode(request, model_info(MODEL))
    assert encoder.encode(request, model_info(MODEL)) == first
    assert json.loads(first) == expected(request)


def test_an_empty_conversation_and_no_tools() -> None:
    request = LLMRequest(model=MODEL, system="", messages=())
    assert json.loads(_BodyEncoder().encode(request, model_info(MODEL))) == expected(request)


def test_the_sdk_sends_the_body_with_its_headers_and_the_stream_is_assembled() -> None:
    call = ScriptedToolCall(name="Read", input={"p": "/a"})
    messages = (Message.user("go"), *turn(1), Message.user("more"))
    request = LLMRequest(model=MODEL, system="You are aimon.", messages=messages, tools=TOOLS)

    async def scenario(server: LoopbackModelServer) -> Any:
        import anthropic

        sdk = anthropic.AsyncAnthropic(api_key="test-key", base_url=server.base_url,
                                       max_retries=0)
        client = AnthropicClient(api_key="test-key", base_url=server.base_url, idle_timeout=5.0)
        try:
            stream = await sdk.messages.create(**request_params(request, model_info(MODEL)),
                                               stream=True)
            async for _ in stream:
                pass
            return await collect(client.stream(request))
        finally:
            await client.aclose()
            await sdk.close()

    reply = Reply(text="Reading.", tool_calls=(call,))
    with LoopbackModelServer([reply, reply]) as server:
        response = asyncio.run(scenario(server))
    by_sdk, ours = server.requests
    assert ours.body == by_sdk.body == expected(request)
    # The SDK's own headers (auth, version, client headers), the same way; the read timeout
    # header differs only because aimon's client sets its own timeout.
    skip = ("host", "content-length", "x-stainless-read-timeout")
    assert {k: v for k, v in ours.headers.items() if k not in skip} \
        == {k: v for k, v in by_sdk.headers.items() if k not in skip}
    assert ours.headers["content-type"] == "application/json"
    assert response.text == "Reading."
    assert [(b.name, dict(b.input)) for b in response.content if isinstance(b, ToolUseBlock)] \
        == [("Read", {"p": "/a"})]
    assert response.usage.output_tokens > 0


def test_calls_on_one_client_share_one_kept_alive_connection() -> None:
    request = LLMRequest(model=MODEL, system="s", messages=(Message.user("hi"),))

    async def scenario(server: LoopbackModelServer) -> None:
        client = AnthropicClient(api_key="test-key", base_url=server.base_url, idle_timeout=5.0)
        try:
            for _ in range(3):
                await collect(client.stream(request))
        finally:
            await client.aclose()

    with LoopbackModelServer([Reply(text="one"), Reply(text="two"), Reply(text="three")]) \
            as server:
        asyncio.run(scenario(server))
    assert len({recorded.connection for recorded in server.requests}) == 1


def test_the_head_follows_every_change_of_system_tools_settings_and_model() -> None:
    encoder = _BodyEncoder()
    other_tools = (*TOOLS, ToolDefinition(name="Grep", description="Search.",
                                          input_schema={"type": "object"}))
    messages = (Message.user("fix it"),)
    variants = [
        LLMRequest(model=MODEL, system="You are aimon.", messages=messages, tools=TOOLS),
        LLMRequest(model=MODEL, system="You are aimon, compacted.", messages=messages,
                   tools=TOOLS),
        LLMRequest(model=MODEL, system="You are aimon.", messages=messages, tools=other_tools),
        LLMRequest(model=MODEL, system="You are aimon.", messages=messages, tools=TOOLS,
                   settings=ModelSettings(max_tokens=77)),
        LLMRequest(model="claude-haiku-4-5", system="You are aimon.", messages=messages,
                   tools=TOOLS, metadata={"user_id": "u"}),
    ]
    for request in [*variants, *reversed(variants), variants[0], variants[0]]:
        assert json.loads(encoder.encode(request, model_info(MODEL))) == expected(request)


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
        assert json.loads(encoder.encode(request, model_info(MODEL))) == expected(request), step
