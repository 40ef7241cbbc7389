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
