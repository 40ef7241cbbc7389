"""OpenAIClient against the loopback server, with the real openai SDK."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from aimon_core.llm import (
    ImageBlock,
    LLMRequest,
    LLMResponse,
    Message,
    ModelSettings,
    OpenAIClient,
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
    cost_usd,
    model_info,
)
from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall

MODEL = "gpt-5.4"
READ = ToolDefinition(
    name="Read",
    description="Read a file.",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
)
PNG = base64.b64encode(b"\x89PNG fake").decode()


@asynccontextmanager
async def client_for(server: LoopbackModelServer) -> AsyncIterator[OpenAIClient]:
    client = OpenAIClient(api_key="test-key", base_url=server.openai_base_url, idle_timeout=5.0)
    try:
        yield client
    finally:
        await client.aclose()


def request(*messages: Message, **overrides: Any) -> LLMRequest:
    fields: dict[str, Any] = {
        "model": MODEL,
        "system": "You are aimon.",
        "messages": messages or (Message.user("hi"),),
        "tools": (READ,),
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


def test_text_streams_with_usage_requested() -> None:
    with LoopbackModelServer([Reply(text="Hello there")]) as server:
        events = asyncio.run(events_of(server, request()))
    assert events[:-1] == [TextDelta(text="Hello"), TextDelta(text=" there")]
    assert final(events).content == (TextBlock(text="Hello there"),)
    assert final(events).stop_reason is StopReason.END
    body = server.requests[0].body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"][0] == {"role": "system", "content": "You are aimon."}
    assert body["tools"][0]["function"]["name"] == "Read"


def test_the_wire_body_is_exactly_the_request_params() -> None:
    # The messages and tools travel in extra_body (the SDK's per-call walk of typed
    # arguments grows with the history); what reaches the server must not change.
    from aimon_core.llm._models import model_info
    from aimon_core.llm._openai import request_params

    req = request()
    with LoopbackModelServer([Reply(text="ok")]) as server:
        asyncio.run(events_of(server, req))
    assert dict(server.requests[0].body) == json.loads(json.dumps(
        request_params(req, model_info(req.model, "openai"))))


def test_tool_call_deltas_are_assembled_by_index() -> None:
    calls = (
        ScriptedToolCall(name="Read", input={"path": "a.py"}, id="call_a"),
        ScriptedToolCall(name="Read", input={"path": "b.py"}, id="call_b"),
    )
    with LoopbackModelServer([Reply(tool_calls=calls)]) as server:
        events = asyncio.run(events_of(server, request()))
    started = [e for e in events if isinstance(e, ToolUseStarted)]
    assert started == [
        ToolUseStarted(id="call_a", name="Read"),
        ToolUseStarted(id="call_b", name="Read"),
    ]
    response = final(events)
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.message.tool_uses == (
        ToolUseBlock(id="call_a", name="Read", input={"path": "a.py"}),
        ToolUseBlock(id="call_b", name="Read", input={"path": "b.py"}),
    )


def test_reasoning_content_is_read_as_thinking() -> None:
    with LoopbackModelServer([Reply(thinking="Consider it", text="Yes")]) as server:
        events = asyncio.run(events_of(server, request(model="qwen3:8b")))
    assert "".join(e.text for e in events if isinstance(e, ThinkingDelta)) == "Consider it"
    assert final(events).content == (ThinkingBlock(thinking="Consider it"), TextBlock(text="Yes"))


def test_cached_tokens_are_counted_apart_from_input() -> None:
    reply = Reply(text="ok", input_tokens=800, output_tokens=40, cache_read_tokens=3000)
    with LoopbackModelServer([reply]) as server:
        response = final(asyncio.run(events_of(server, request())))
    assert response.usage == Usage(input_tokens=800, output_tokens=40, cache_read_tokens=3000)
    # gpt-5.4: $2.50 in, $15 out, $0.25 cached input per million tokens.
    expected = (800 * 2.5 + 40 * 15 + 3000 * 0.25) / 1_000_000
    assert abs(cost_usd(response.usage, model_info(MODEL)) - expected) < 1e-12


def test_tool_results_become_tool_messages_right_after_the_call() -> None:
    assistant = Message(
        role="assistant",
        content=(
            ThinkingBlock(thinking="private", signature="sig"),
            TextBlock(text="Let me read both."),
            ToolUseBlock(id="call_a", name="Read", input={"path": "a.py"}),
            ToolUseBlock(id="call_b", name="Read", input={"path": "shot.png"}),
        ),
    )
    results = Message(
        role="user",
        content=(
            ToolResultBlock(tool_use_id="call_a", content=(TextBlock(text="print(1)"),)),
            ToolResultBlock(
                tool_use_id="call_b", content=(ImageBlock(media_type="image/png", data=PNG),)
            ),
            TextBlock(text="And explain."),
        ),
    )
    with LoopbackModelServer([Reply(text="ok")]) as server:
        asyncio.run(events_of(server, request(Message.user("read"), assistant, results)))
    messages = server.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "user"]
    sent_assistant = messages[2]
    assert sent_assistant["content"] == "Let me read both."  # thinking is dropped
    assert [c["id"] for c in sent_assistant["tool_calls"]] == ["call_a", "call_b"]
    assert json.loads(sent_assistant["tool_calls"][0]["function"]["arguments"]) == {"path": "a.py"}
    assert messages[3] == {"role": "tool", "tool_call_id": "call_a", "content": "print(1)"}
    assert messages[4]["tool_call_id"] == "call_b"
    follow_up = messages[5]["content"]
    assert follow_up[0]["type"] == "text" and "call_b" in follow_up[0]["text"]
    assert follow_up[1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG}"},
    }
    assert follow_up[2] == {"type": "text", "text": "And explain."}


def test_error_results_say_so() -> None:
    failed = ToolResultBlock(
        tool_use_id="call_x", content=(TextBlock(text="no such file"),), is_error=True
    )
    call = ToolUseBlock(id="call_x", name="Read", input={})
    history = (
        Message.user("go"),
        Message(role="assistant", content=(call,)),
        Message(role="user", content=(failed,)),
    )
    with LoopbackModelServer([Reply(text="ok")]) as server:
        asyncio.run(events_of(server, request(*history)))
    tool_message = server.requests[0].body["messages"][3]
    assert tool_message == {
        "role": "tool",
        "tool_call_id": "call_x",
        "content": "Error: no such file",
    }


def test_token_limit_parameter_follows_the_registry() -> None:
    settings = ModelSettings(max_tokens=1000, temperature=0.2)
    with LoopbackModelServer([Reply(text="a"), Reply(text="b"), Reply(text="c")]) as server:
        asyncio.run(events_of(server, request(settings=settings)))
        asyncio.run(events_of(server, request(model="llama3.2", settings=settings)))
        asyncio.run(events_of(server, request(model="gpt-4.1", settings=settings)))
    reasoning, local, classic = (r.body for r in server.requests)
    assert reasoning["max_completion_tokens"] == 1000
    assert "max_tokens" not in reasoning
    assert "temperature" not in reasoning  # reasoning models reject it
    assert local["max_tokens"] == 1000
    assert local["temperature"] == 0.2
    assert "max_completion_tokens" not in local
    assert classic["max_tokens"] == 1000


def test_length_finish_maps_to_max_tokens() -> None:
    with LoopbackModelServer([Reply(text="partial answ", stop="max_tokens")]) as server:
        response = final(asyncio.run(events_of(server, request())))
    assert response.stop_reason is StopReason.MAX_TOKENS
    assert response.text == "partial answ"


def test_a_stream_cut_after_finish_reason_but_before_done_fails() -> None:
    """finish_reason arrived, then the body ended without `data: [DONE]`: not complete."""
    from aimon_core.llm import LLMStreamError
    from aimon_core.testing import CutStream

    call = ScriptedToolCall(name="Read", input={"path": "x"})
    # Role chunk, tool call start, two argument pieces, finish_reason: five events, then cut.
    with LoopbackModelServer([CutStream(reply=Reply(tool_calls=(call,)), after_events=5,
                                        graceful=True)]) as server:
        try:
            asyncio.run(events_of(server, request()))
        except LLMStreamError as exc:
            assert "[DONE]" in str(exc)
        else:
            raise AssertionError("a stream without [DONE] was taken as complete")
