"""The executor's side of compaction: the Compactor protocol's contract, with a small
compactor written for the test (the real one is tested in tests/compact)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from aimon_core.agent import (
    AgentEvent,
    AgentRuntime,
    Compacted,
    Environment,
    ExecutionRequest,
    ExecutionResult,
    OrcaExecutor,
    StopCause,
    Turn,
    allow_all,
    parse_agent,
)
from aimon_core.llm import (
    LLMBadRequestError,
    LLMError,
    LLMRequest,
    Message,
    ScriptedLLMClient,
    TextBlock,
    ToolResultBlock,
    Usage,
    reply,
    script,
)
from aimon_core.tools import Tool, ToolContext, ToolInput, ToolRegistry, ToolResult

AGENT = parse_agent("---\nname: tester\n---\nTest agent.\n")
ENV = Environment(cwd=Path("/p"), platform="test", date="2026-01-01")
SUMMARY = Message.user("SUMMARY")


async def ok(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
    return ToolResult.ok("x" * 500)


OK = Tool(name="Ok", description="Ok", run=ok, read_only=True,
          input_schema={"type": "object", "properties": {}})


@dataclass
class Squash:
    """Compacts before call `at` (1-based) to one summary message; shortens long results."""

    at: int = 0
    calls: int = 0
    observed: list[Usage] = field(default_factory=list)
    refusals: int = 0

    def _done(self, request: LLMRequest) -> Compacted:
        return Compacted(trigger="auto", text="squashed", tokens_before=len(request.messages),
                         tokens_after=1, summarised=True,
                         messages=(SUMMARY, *request.messages[-2:]),
                         usage=Usage(input_tokens=100, output_tokens=10), cost_usd=0.5)

    async def before_call(self, request: LLMRequest) -> Compacted | None:
        self.calls += 1
        return self._done(request) if self.calls == self.at else None

    async def after_refusal(self, request: LLMRequest, error: LLMError) -> Compacted | None:
        self.refusals += 1
        return self._done(request) if "too long" in error.message else None

    def observe(self, request: LLMRequest, usage: Usage) -> None:
        self.observed.append(usage)

    async def limit_result(self, block: ToolResultBlock) -> ToolResultBlock:
        return ToolResultBlock(tool_use_id=block.tool_use_id, content=(TextBlock(text="short"),))


def run(client: ScriptedLLMClient, compactor: Squash, context: ToolContext
        ) -> tuple[ExecutionResult, list[AgentEvent]]:
    runtime = AgentRuntime(agent=AGENT, client=client, model="scripted", gate=allow_all,
                           tools=ToolRegistry([OK]))
    events: list[AgentEvent] = []
    request = ExecutionRequest(prompt=Message.user("go"), tool_context=context,
                               environment=ENV, turn=Turn(emit=events.append), compactor=compactor)
    return asyncio.run(OrcaExecutor().execute(runtime, request)), events


def test_a_compaction_replaces_the_transcript_between_iterations(context: ToolContext) -> None:
    client = script(reply("", ("Ok", {})), reply("", ("Ok", {})), reply("done"))
    compactor = Squash(at=3)
    result, events = run(client, compactor, context)
    assert result.stop is StopCause.ANSWERED
    last = client.requests[-1].messages
    assert last[0] == SUMMARY and len(last) == 3
    assert [e.text for e in events if isinstance(e, Compacted)] == ["squashed"]
    # The summary's cost is the turn's; every response was observed.
    assert result.usage.input_tokens == 100 + 3 * 10 and result.cost_usd >= 0.5
    assert len(compactor.observed) == 3
    # Tool results went through limit_result before the model saw them.
    second = client.requests[1].messages[-1].content[0]
    assert isinstance(second, ToolResultBlock) and second.text == "short"


def test_prompt_too_long_is_compacted_and_retried_once(context: ToolContext) -> None:
    too_long = LLMBadRequestError("prompt is too long", status=400)
    client = script(reply("", ("Ok", {})), too_long, reply("done"))
    result, _ = run(client, Squash(), context)
    assert result.stop is StopCause.ANSWERED
    assert client.requests[-1].messages[0] == SUMMARY

    client = script(reply("", ("Ok", {})), too_long, too_long)
    compactor = Squash()
    result, _ = run(client, compactor, context)
    assert result.stop is StopCause.MODEL_ERROR and compactor.refusals == 1
    assert client.steps == []


def test_other_errors_are_not_compacted(context: ToolContext) -> None:
    client = script(LLMBadRequestError("bad tool schema", status=400))
    compactor = Squash()
    result, events = run(client, compactor, context)
    assert result.stop is StopCause.MODEL_ERROR and compactor.refusals == 1
    assert not any(isinstance(e, Compacted) for e in events)
