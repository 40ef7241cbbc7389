"""The interceptor chains: around executions and around model calls, first outermost.

A library user adds interceptors through `RuntimeParts`; aimon's own (the cost ledger) run
first. Each interceptor may pass on changed values, and sees how the call or execution ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

from aimon_core.agent import AgentRuntime, ExecutionRequest, ExecutionResult
from aimon_core.llm import (
    LLMRequest,
    ResponseCompleted,
    StreamEvent,
    TextDelta,
    reply,
    script,
)
from aimon_core.observe import (
    ExecutionProceed,
    InterceptingLLMClient,
    ModelCall,
    ModelProceed,
)
from aimon_core.runtime import RuntimeParts, build_runtime
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore


class Noting:
    """Notes what it sees, under its name; tags each request it passes on."""

    def __init__(self, name: str, seen: list[str]) -> None:
        self.name = name
        self.seen = seen

    async def around_execution(self, runtime: AgentRuntime, request: ExecutionRequest,
                               proceed: ExecutionProceed) -> ExecutionResult:
        self.seen.append(f"{self.name}: execution {request.prompt.text!r}")
        result = await proceed(runtime, request)
        self.seen.append(f"{self.name}: ended {result.stop.value}")
        return result

    async def around_model_call(self, call: ModelCall, proceed: ModelProceed
                                ) -> AsyncIterator[StreamEvent]:
        tags = str(call.request.metadata.get("tags", ""))
        self.seen.append(f"{self.name}: call tags={tags!r} streamed={call.streamed}")
        tagged = replace(call.request, metadata={**call.request.metadata,
                                                 "tags": tags + self.name})
        async for event in proceed(tagged):
            if isinstance(event, ResponseCompleted):
                self.seen.append(f"{self.name}: answer {event.response.text!r}")
            yield event


def test_model_call_chain_runs_first_outermost_and_passes_changed_requests() -> None:
    seen: list[str] = []
    inner = script(reply("one"), reply("two"))
    client = InterceptingLLMClient(inner, (Noting("a", seen), Noting("b", seen)))
    request = LLMRequest(model="m", system="", messages=(), tools=())

    async def main() -> list[StreamEvent]:
        events = [event async for event in client.stream(request)]
        await client.call(request)
        return events

    events = asyncio.run(main())
    assert [type(e) for e in events] == [TextDelta, ResponseCompleted]
    assert [r.metadata.get("tags") for r in inner.requests] == ["ab", "ab"]
    assert seen == [
        "a: call tags='' streamed=True", "b: call tags='a' streamed=True",
        "b: answer 'one'", "a: answer 'one'",
        "a: call tags='' streamed=False", "b: call tags='a' streamed=False",
        "b: answer 'two'", "a: answer 'two'",
    ]


def test_a_library_users_interceptors_run_around_every_turn_and_call(tmp_path: Path) -> None:
    seen: list[str] = []
    noting = Noting("mine", seen)
    parts = RuntimeParts(client=script(reply("hello")), interceptors=(noting,),
                         model_interceptors=(noting,))

    async def main() -> None:
        async with build_runtime(tmp_path, parts=parts) as assembly:
            store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
            async with await assembly.open_session(store) as live:
                await live.submit("hi")

    asyncio.run(main())
    assert seen == ["mine: execution 'hi'", "mine: call tags='' streamed=True",
                    "mine: answer 'hello'", "mine: ended answered"]


def test_a_library_user_traces_to_their_own_exporter(tmp_path: Path) -> None:
    from collections.abc import Sequence

    from aimon_core.observe import SpanRecord, Tracing

    class Collecting:
        def __init__(self) -> None:
            self.spans: list[SpanRecord] = []
            self.closed = False

        def export(self, spans: Sequence[SpanRecord]) -> None:
            self.spans.extend(spans)

        async def aclose(self) -> None:
            self.closed = True

    mine = Collecting()
    parts = RuntimeParts(client=script(reply("hello")),
                         interceptors=(Tracing(store=None, exporter=mine),))

    async def main() -> None:
        async with build_runtime(tmp_path, parts=parts) as assembly:
            store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
            async with await assembly.open_session(store) as live:
                await live.submit("hi")

    asyncio.run(main())
    assert [s.name for s in mine.spans] == ["invoke_agent default", "iteration 1",
                                           "chat scripted"]
