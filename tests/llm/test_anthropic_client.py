"""AnthropicClient against the loopback server, with the real anthropic SDK."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aimon_core.llm import (
    AnthropicClient,
    DocumentBlock,
    ImageBlock,
    LLMRequest,
    LLMResponse,
    Message,
    ModelSettings,
    ResponseCompleted,
    StopReason,
    StreamEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseStarted,
    Usage,
    UsageReported,
    cost_usd,
    model_info,
)
from aimon_core.llm._anthropic import request_params
from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall

MODEL = "claude-sonnet-5-5"
READ = ToolDefinition(
    name="Read",
    description="Read a file.",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
)
GREP = ToolDefinition(name="Grep", description="Search.", input_schema={"type": "object"})


@asynccontextmanager
async def client_for(server: LoopbackModelServer) -> AsyncIterator[AnthropicClient]:
    client = AnthropicClient(api_key="test-key", base_url=server.base_url, idle_timeout=5.0)
    try:
        yield client
    finally:
        await client.aclose()


def request(*messages: Message, **overrides: Any) -> LLMRequest:
    fields: dict[str, Any] = {
        "model": MODEL,
        "system": "You are aimon.",
        "messages": messages or (Message.user("hi"),),
        "tools": (READ, GREP),
    }
    fields.update(overrides)
    return LLMRequest(**fields)


async def events_of(server: LoopbackModelServer, req: LLMRequest) -> list[StreamEvent]:
    async with client_for(server) as client:
        return [event async for event in client.stream(req)]


def final(events: list[StreamEvent]) -> LLMResponse:
    last = events[-1]
    assert isinstance(last, ResponseCompleted)
    return last.response


def test_text_streams_as_deltas_then_completes() -> None:
    with LoopbackModelServer([Reply(text="Hello there")]) as server:
        events = asyncio.run(events_of(server, request()))
    # message_start's usage first: what an interrupted call is counted from.
    assert events[0] == UsageReported(usage=Usage(input_tokens=10, output_tokens=1))
    assert events[1:-1] == [TextDelta(text="Hello"), TextDelta(text=" there")]
    response = final(events)
    assert response.content == (TextBlock(text="Hello there"),)
    assert response.stop_reason is StopReason.END
    assert response.model == MODEL
    assert server.requests[0].headers["authorization"] == "Bearer test-key"


def test_tool_input_is_assembled_from_split_json_deltas() -> None:
    call = ScriptedToolCall(name="Read", input={"path": "src/app.py", "limit": 40}, id="toolu_1")
    with LoopbackModelServer([Reply(text="Reading.", tool_calls=(call,))]) as server:
        events = asyncio.run(events_of(server, request()))
    assert ToolUseStarted(id="toolu_1", name="Read") in events
    response = final(events)
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.message.tool_uses == (
        ToolUseBlock(id="toolu_1", name="Read", input={"path": "src/app.py", "limit": 40}),
    )


def test_call_returns_the_collected_response() -> None:
    async def run(server: LoopbackModelServer) -> LLMResponse:
        async with client_for(server) as client:
            return await client.call(request())

    with LoopbackModelServer([Reply(text="done")]) as server:
        response = asyncio.run(run(server))
    assert response.text == "done"
    assert server.requests[0].body["stream"] is True


def test_thinking_with_signature_is_sent_back_verbatim() -> None:
    call = ScriptedToolCall(name="Read", input={"path": "a.py"}, id="toolu_7")
    script = [Reply(thinking="Let me look at a.py", tool_calls=(call,)), Reply(text="It is fine.")]

    async def run(server: LoopbackModelServer) -> tuple[list[StreamEvent], LLMResponse]:
        async with client_for(server) as client:
            first = [event async for event in client.stream(request())]
            answer = Message(
                role="user",
                content=(ToolResultBlock(tool_use_id="toolu_7", content=(TextBlock(text="ok"),)),),
            )
            history = (Message.user("hi"), final(first).message, answer)
            return first, await client.call(request(*history))

    with LoopbackModelServer(script) as server:
        first, second = asyncio.run(run(server))
    deltas = [e.text for e in first if isinstance(e, ThinkingDelta)]
    assert len(deltas) == 2
    assert "".join(deltas) == "Let me look at a.py"
    thinking = final(first).content[0]
    assert isinstance(thinking, ThinkingBlock)
    assert thinking.thinking == "Let me look at a.py"
    assert thinking.signature and thinking.signature.startswith("loopback-")
    assert second.text == "It is fine."
    sent = server.requests[1].body["messages"][1]
    assert sent["role"] == "assistant"
    assert sent["content"][0] == {
        "type": "thinking",
        "thinking": "Let me look at a.py",
        "signature": thinking.signature,
    }
    assert sent["content"][1]["type"] == "tool_use"
    assert server.requests[1].body["messages"][2]["content"][0]["tool_use_id"] == "toolu_7"


def test_redacted_and_unsigned_thinking_are_translated_for_sending() -> None:
    assistant = Message(
        role="assistant",
        content=(
            ThinkingBlock(thinking="", redacted_data="EncryptedBlob=="),
            ThinkingBlock(thinking="from another provider"),
            TextBlock(text="Answer"),
        ),
    )
    params = request_params(request(Message.user("q"), assistant), model_info(MODEL))
    assert params["messages"][1]["content"] == [
        {"type": "redacted_thinking", "data": "EncryptedBlob=="},
        {"type": "text", "text": "Answer", "cache_control": {"type": "ephemeral"}},
    ]


def test_prompt_cache_breakpoints_in_the_recorded_request() -> None:
    with LoopbackModelServer([Reply(text="ok")]) as server:
        asyncio.run(events_of(server, request(Message.user("first"))))
    body = server.requests[0].body
    ephemeral = {"type": "ephemeral"}
    assert body["system"] == [
        {"type": "text", "text": "You are aimon.", "cache_control": ephemeral}
    ]
    assert body["tools"][-1]["cache_control"] == ephemeral
    assert "cache_control" not in body["tools"][0]
    assert body["messages"][-1]["content"][-1]["cache_control"] == ephemeral
    assert str(body).count("cache_control") == 3  # the API allows at most 4


def test_usage_counts_cache_tokens_and_prices_them() -> None:
    reply = Reply(
        text="ok", input_tokens=1200, output_tokens=300, cache_read_tokens=50_000,
        cache_write_tokens=2_000,
    )  # fmt: skip
    with LoopbackModelServer([reply]) as server:
        response = final(asyncio.run(events_of(server, request(model="claude-sonnet-4-6"))))
    assert response.usage == Usage(
        input_tokens=1200, output_tokens=300, cache_read_tokens=50_000, cache_write_tokens=2_000
    )
    # Sonnet 4.6: $3 in, $15 out, $0.30 cache read, $3.75 cache write per million tokens.
    expected = (1200 * 3 + 300 * 15 + 50_000 * 0.30 + 2_000 * 3.75) / 1_000_000
    assert abs(cost_usd(response.usage, model_info("claude-sonnet-4-6")) - expected) < 1e-12


def test_thinking_settings_follow_the_model() -> None:
    thinking = ModelSettings(max_tokens=4000, thinking_budget=8000, temperature=0.5)
    with LoopbackModelServer([Reply(text="a"), Reply(text="b"), Reply(text="c")]) as server:
        asyncio.run(events_of(server, request(model="claude-haiku-4-5", settings=thinking)))
        asyncio.run(events_of(server, request(settings=thinking)))
        plain = ModelSettings(max_tokens=1000, temperature=0.5)
        asyncio.run(events_of(server, request(model="claude-sonnet-4-6", settings=plain)))
    budget, adaptive, sampled = (r.body for r in server.requests)
    assert budget["thinking"]["type"] == "enabled"
    assert budget["thinking"]["budget_tokens"] < budget["max_tokens"]
    assert "temperature" not in budget  # not accepted together with extended thinking
    assert adaptive["thinking"] == {"type": "adaptive"}
    assert "temperature" not in adaptive
    assert sampled["temperature"] == 0.5
    assert sampled["max_tokens"] == 1000
    assert "thinking" not in sampled


def test_images_documents_and_tool_result_images_are_base64_sources() -> None:
    png = base64.b64encode(b"\x89PNG fake").decode()
    notes = base64.b64encode(b"plain notes").decode()
    user = Message(
        role="user",
        content=(
            ToolResultBlock(
                tool_use_id="toolu_1",
                content=(
                    TextBlock(text="screenshot:"),
                    ImageBlock(media_type="image/png", data=png),
                ),
                is_error=False,
            ),
            DocumentBlock(media_type="application/pdf", data=png, title="spec.pdf"),
            DocumentBlock(media_type="text/plain", data=notes),
        ),
    )
    content = request_params(request(user), model_info(MODEL))["messages"][0]["content"]
    image_source = {"type": "base64", "media_type": "image/png", "data": png}
    assert content[0]["content"] == [
        {"type": "text", "text": "screenshot:"},
        {"type": "image", "source": image_source},
    ]
    assert content[1] == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": png},
        "title": "spec.pdf",
    }
    assert content[2]["source"] == {
        "type": "text",
        "media_type": "text/plain",
        "data": "plain notes",
    }


def test_error_tool_results_are_flagged() -> None:
    result = ToolResultBlock(
        tool_use_id="toolu_9", content=(TextBlock(text="no such file"),), is_error=True
    )
    params = request_params(request(Message(role="user", content=(result,))), model_info(MODEL))
    block = params["messages"][0]["content"][0]
    assert block["is_error"] is True
    assert block["content"] == [{"type": "text", "text": "no such file"}]
