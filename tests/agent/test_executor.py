"""The loop: model call → tool calls → again, with budgets, repeats, faults and Ctrl-C."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from aimon_core.agent import (
    INTERRUPTED_RESULT,
    AgentEvent,
    AgentRuntime,
    AssistantTextDelta,
    Environment,
    ExecutionBudget,
    ExecutionFinished,
    ExecutionRequest,
    ExecutionResult,
    GateVerdict,
    OrcaExecutor,
    StopCause,
    ToolCallFinished,
    ToolCallStarted,
    Turn,
    allow_all,
    parse_agent,
)
from aimon_core.llm import (
    LLMRateLimitError,
    LLMRequest,
    LLMResponse,
    Message,
    StopReason,
    StreamEvent,
    TextDelta,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    reply,
    script,
)
from aimon_core.tools import Tool, ToolContext, ToolInput, ToolRegistry, ToolResult

AGENT = parse_agent("---\nname: tester\n---\nYou are a test agent.\n")
ENV = Environment(cwd=__import__("pathlib").Path("/tmp"), platform="test", date="2026-01-01")


def make_tool(name: str, run: Any, *, read_only: bool = True) -> Tool:
    return Tool(name=name, description=f"test tool {name}",
                input_schema={"type": "object", "properties": {"text": {"type": "string"}},
                              "additionalProperties": False},
                run=run, read_only=read_only)


async def echo(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
    return ToolResult.ok("echo: " + str(tool_input.opt_string("text", "")))


def make_runtime(client: Any, *tools: Tool, **kw: Any) -> AgentRuntime:
    kw.setdefault("gate", allow_all)
    return AgentRuntime(agent=AGENT, client=client, model="scripted",
                        tools=ToolRegistry(tools or (make_tool("Echo", echo),)), **kw)


def test_default_gate_allows_read_only_tools_only(context: ToolContext) -> None:
    async def write(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        raise AssertionError("must not run")

    client = script(reply("", ("Echo", {"text": "x"}), ("W", {})), reply("ok"))
    runtime = AgentRuntime(agent=AGENT, client=client, model="scripted",
                           tools=ToolRegistry([make_tool("Echo", echo),
                                               make_tool("W", write, read_only=False)]))
    _, _, committed = run(runtime, context)
    first, second = committed[2].content
    assert isinstance(first, ToolResultBlock) and not first.is_error
    assert isinstance(second, ToolResultBlock) and second.is_error
    assert "read-only tools only" in second.text


def run(runtime: AgentRuntime, context: ToolContext, prompt: str = "go",
        **kw: Any) -> tuple[ExecutionResult, list[AgentEvent], list[Message]]:
    events: list[AgentEvent] = []
    committed: list[Message] = []
    request = ExecutionRequest(prompt=Message.user(prompt), tool_context=context,
                               environment=ENV, **kw,
                               turn=Turn(emit=events.append, persist=committed.append))
    result = asyncio.run(OrcaExecutor().execute(runtime, request))
    return result, events, committed


def assert_paired(messages: list[Message]) -> None:
    """Every tool_use is answered in the very next message, in order."""
    for i, message in enumerate(messages):
        uses = [u.id for u in message.tool_uses]
        if uses:
            nxt = messages[i + 1]
            ids = [b.tool_use_id for b in nxt.content if isinstance(b, ToolResultBlock)]
            assert ids == uses


def test_plain_answer(context: ToolContext) -> None:
    client = script(reply("Hello there."))
    result, events, committed = run(make_runtime(client), context)
    assert result.stop is StopCause.ANSWERED
    assert result.text == "Hello there."
    assert [m.role for m in committed] == ["user", "assistant"]
    assert isinstance(events[-1], ExecutionFinished)
    assert any(isinstance(e, AssistantTextDelta) for e in events)
    request = client.requests[0]
    assert "You are a test agent." in request.system
    assert "Working directory: /tmp" in request.system
    assert [t.name for t in request.tools] == ["Echo"]


def test_tool_call_then_answer(context: ToolContext) -> None:
    client = script(reply("", ("Echo", {"text": "hi"})), reply("done"))
    result, events, committed = run(make_runtime(client), context)
    assert result.stop is StopCause.ANSWERED and result.text == "done"
    assert result.tool_calls == 1 and result.iterations == 2
    second = client.requests[1].messages
    assert isinstance(second[-1].content[0], ToolResultBlock)
    assert second[-1].content[0].text == "echo: hi"
    assert_paired(committed)
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.name for e in started] == ["Echo"] and not finished[0].result.is_error


def test_unknown_tool_and_bad_input_become_errors(context: ToolContext) -> None:
    bad_json = ToolUseBlock(id="t9", name="Echo", input={}, input_error="invalid JSON")
    client = script(
        reply("", ("Nope", {}), ("Echo", {"text": 5}), ("Echo", {"extra": 1})),
        LLMResponse(id="m", model="x", content=(bad_json,), stop_reason=StopReason.TOOL_USE),
        reply("ok"),
    )
    result, _, committed = run(make_runtime(client), context)
    assert result.stop is StopCause.ANSWERED
    results = [b for b in committed[2].content if isinstance(b, ToolResultBlock)]
    assert all(r.is_error for r in results)
    assert "No tool named 'Nope'" in results[0].text
    assert "Invalid input for Echo" in results[1].text
    assert "Invalid input for Echo" in results[2].text
    assert "invalid JSON" in committed[4].content[0].text  # type: ignore[union-attr]
    assert_paired(committed)


def test_gate_denial_reaches_the_model(context: ToolContext) -> None:
    async def deny(tool: Tool, tool_input: Any, ctx: ToolContext, **_: Any) -> GateVerdict:
        return GateVerdict(allowed=False, message="Denied by test rule.")

    ran: list[str] = []

    async def write(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        ran.append("write")
        return ToolResult.ok("wrote")

    client = script(reply("", ("W", {})), reply("ok"))
    result, _, committed = run(make_runtime(client, make_tool("W", write, read_only=False),
                                            gate=deny), context)
    assert ran == []
    assert committed[2].content[0].text == "Denied by test rule."  # type: ignore[union-attr]
    assert result.stop is StopCause.ANSWERED


def test_read_only_calls_run_in_parallel_mutating_in_order(context: ToolContext) -> None:
    a_started, b_started = asyncio.Event(), asyncio.Event()
    order: list[str] = []

    async def a(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        a_started.set()
        await asyncio.wait_for(b_started.wait(), 2)  # deadlocks unless B runs concurrently
        return ToolResult.ok("a")

    async def b(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        b_started.set()
        await asyncio.wait_for(a_started.wait(), 2)
        return ToolResult.ok("b")

    def mutating(name: str) -> Tool:
        async def go(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
            order.append(name)
            await asyncio.sleep(0.01 if name == "M1" else 0)
            return ToolResult.ok(name)
        return make_tool(name, go, read_only=False)

    client = script(reply("", ("A", {}), ("B", {}), ("M1", {}), ("M2", {})), reply("ok"))
    tools = (make_tool("A", a), make_tool("B", b), mutating("M1"), mutating("M2"))
    result, _, committed = run(make_runtime(client, *tools), context)
    texts = [blk.text for blk in committed[2].content if isinstance(blk, ToolResultBlock)]
    assert texts == ["a", "b", "M1", "M2"]
    assert order == ["M1", "M2"]
    assert result.tool_calls == 4


def test_repeated_identical_call_stops_the_loop(context: ToolContext) -> None:
    same = ("Echo", {"text": "again"})
    client = script(reply("", same), reply("", same), reply("", same))
    result, _, committed = run(make_runtime(client), context)
    assert result.stop is StopCause.REPEATED_TOOL_CALL
    assert "3 times in a row" in result.reason
    assert result.tool_calls == 2
    last = committed[-1].content[0]
    assert isinstance(last, ToolResultBlock) and last.is_error and "Not run" in last.text
    assert_paired(committed)


def test_iteration_budget(context: ToolContext) -> None:
    client = script(*(reply("", ("Echo", {"text": str(i)})) for i in range(5)))
    result, _, committed = run(make_runtime(client), context,
                               budget=ExecutionBudget(max_iterations=3))
    assert result.stop is StopCause.ITERATION_LIMIT
    assert result.iterations == 3 and len(client.requests) == 3
    assert "iteration limit (3)" in result.reason
    assert_paired(committed)


def test_token_budget(context: ToolContext) -> None:
    big = Usage(input_tokens=600, output_tokens=10)
    client = script(reply("", ("Echo", {"text": "1"}), usage=big),
                    reply("", ("Echo", {"text": "2"}), usage=big))
    result, _, _ = run(make_runtime(client), context, budget=ExecutionBudget(max_tokens=1000))
    assert result.stop is StopCause.TOKEN_LIMIT
    assert result.usage.input_tokens == 1200


def test_model_error_ends_with_valid_transcript(context: ToolContext) -> None:
    client = script(reply("", ("Echo", {"text": "x"})),
                    LLMRateLimitError("slow down", status=429, provider="test"))
    result, _, committed = run(make_runtime(client), context)
    assert result.stop is StopCause.MODEL_ERROR
    assert isinstance(result.error, LLMRateLimitError)
    assert committed[-1].role == "user"
    assert_paired(committed)


def test_output_limit(context: ToolContext) -> None:
    client = script(reply("partial answ", stop=StopReason.MAX_TOKENS))
    result, _, _ = run(make_runtime(client), context)
    assert result.stop is StopCause.OUTPUT_LIMIT and result.stop.ok


def test_interrupt_during_tool_answers_every_call(context: ToolContext) -> None:
    started = asyncio.Event()

    async def hang(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        started.set()
        await asyncio.sleep(60)
        return ToolResult.ok("never")

    client = script(reply("", ("Echo", {"text": "1"}), ("Hang", {}), ("Echo", {"text": "3"})))
    runtime = make_runtime(client, make_tool("Echo", echo, read_only=False),
                           make_tool("Hang", hang, read_only=False))
    committed: list[Message] = []
    events: list[AgentEvent] = []

    async def main() -> None:
        request = ExecutionRequest(prompt=Message.user("go"), tool_context=context,
                                   environment=ENV,
                                   turn=Turn(persist=committed.append, emit=events.append))
        task = asyncio.create_task(OrcaExecutor().execute(runtime, request))
        await asyncio.wait_for(started.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    results = [b for b in committed[-1].content if isinstance(b, ToolResultBlock)]
    assert [r.text for r in results] == ["echo: 1", INTERRUPTED_RESULT, INTERRUPTED_RESULT]
    assert_paired(committed)
    finished = [e for e in events if isinstance(e, ExecutionFinished)]
    assert finished and finished[0].result.stop is StopCause.INTERRUPTED


class _HangingStream:
    provider = "test"

    def __init__(self) -> None:
        self.streaming = asyncio.Event()
        self.closed = False

    async def call(self, request: LLMRequest) -> LLMResponse:
        raise NotImplementedError

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        try:
            yield TextDelta(text="I was saying")
            self.streaming.set()
            await asyncio.sleep(60)
        finally:
            self.closed = True

    async def aclose(self) -> None:
        pass


def test_interrupt_mid_stream_keeps_partial_text(context: ToolContext) -> None:
    client = _HangingStream()
    committed: list[Message] = []

    async def main() -> None:
        request = ExecutionRequest(prompt=Message.user("go"), tool_context=context,
                                   environment=ENV, turn=Turn(persist=committed.append))
        task = asyncio.create_task(OrcaExecutor().execute(make_runtime(client), request))
        await asyncio.wait_for(client.streaming.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert client.closed
    assert committed[-1].role == "assistant" and committed[-1].text == "I was saying"


def test_history_with_dangling_tool_use_is_repaired(context: ToolContext) -> None:
    dangling = Message(role="assistant", content=(
        ToolUseBlock(id="old1", name="Echo", input={}),))
    client = script(reply("fine"))
    history = (Message.user("earlier"), dangling)
    result, _, _ = run(make_runtime(client), context, history=history)
    sent = list(client.requests[0].messages)
    assert result.stop is StopCause.ANSWERED
    assert_paired(sent)
    assert sent[-1].text == "go"


def test_tool_calls_of_a_response_cut_off_at_the_output_limit_never_run(
        context: ToolContext) -> None:
    ran: list[str] = []

    async def record(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        ran.append("ran")
        return ToolResult.ok("done")

    client = script(reply("", ("Touch", {}), stop=StopReason.MAX_TOKENS), reply("ok then"))
    runtime = make_runtime(client, make_tool("Touch", record, read_only=False))
    result, _, committed = run(runtime, context)
    assert ran == [] and result.text == "ok then"
    answered = committed[2].content[0]
    assert isinstance(answered, ToolResultBlock) and answered.is_error
    assert "cut off at the output token limit" in answered.text
    assert_paired(committed)
