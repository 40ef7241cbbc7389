"""An interrupted turn counts what its cut-off model call spent, and keeps it in the totals.

The client streams part of an answer and then waits (as a slow model does) until the turn is
interrupted. Anthropic reports the input tokens when the stream starts; OpenAI only at the end,
so there the input is estimated too.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aimon_core.agent import AgentRuntime, AssistantTextDelta, StopCause, allow_all, parse_agent
from aimon_core.filesystem import LocalFileSystem
from aimon_core.live import LiveSession, LiveSessionEvent, TurnFinished
from aimon_core.llm import (
    LLMRequest,
    LLMResponse,
    StreamEvent,
    TextDelta,
    Usage,
    UsageReported,
    cost_usd,
    model_info,
)
from aimon_core.session import FileSessionLeaseStore, FileSessionRecordStore, SessionStore
from aimon_core.shell import LocalShell
from aimon_core.tools import ToolContext, ToolRegistry
from aimon_core.tools._state import ToolState

AGENT = parse_agent("---\nname: tester\n---\nTest agent.\n")
MODEL = "claude-sonnet-4-5"
STREAMED = "word " * 80  # 400 characters: ~100 tokens


class StallingClient:
    """Streams `events`, then waits for ever (until the turn is cancelled)."""

    provider = "anthropic"

    def __init__(self, *events: StreamEvent) -> None:
        self.events = events

    async def call(self, request: LLMRequest) -> LLMResponse:
        raise AssertionError("the executor streams")

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        for event in self.events:
            yield event
        await asyncio.Event().wait()

    async def aclose(self) -> None:
        """Nothing to release."""


def interrupted(tmp_path: Path, client: StallingClient) -> tuple[TurnFinished, SessionStore, str]:
    """Run a turn until its text streams, interrupt it; return its TurnFinished and where it
    is stored."""
    runtime = AgentRuntime(agent=AGENT, client=client, model=MODEL, gate=allow_all,
                           tools=ToolRegistry(()))
    base = tmp_path / "data"
    store = SessionStore(FileSessionRecordStore(base), FileSessionLeaseStore(base))
    project = tmp_path / "proj"
    project.mkdir()
    ctx = ToolContext(project_root=project, cwd=project, fs=LocalFileSystem(project),
                      shell=LocalShell(), state=ToolState())

    async def main() -> tuple[TurnFinished, str]:
        live = await LiveSession.open(runtime, store, ctx)
        streamed = asyncio.Event()
        finished: list[TurnFinished] = []

        def on_event(event: LiveSessionEvent) -> None:
            if isinstance(event, AssistantTextDelta):
                streamed.set()
            elif isinstance(event, TurnFinished):
                finished.append(event)

        live.subscribe(on_event)
        task = live.submit_async("explain")
        await asyncio.wait_for(streamed.wait(), 5)
        assert live.interrupt()
        with pytest.raises(asyncio.CancelledError):
            await task
        await live.close()
        return finished[-1], str(live.id)

    done, session_id = asyncio.run(main())
    return done, store, session_id


def test_the_reported_input_and_the_streamed_output_are_counted_and_stored(
        tmp_path: Path) -> None:
    started = Usage(input_tokens=1200, cache_read_tokens=300, output_tokens=1)
    done, store, session_id = interrupted(
        tmp_path, StallingClient(UsageReported(usage=started), TextDelta(text=STREAMED)))
    result = done.result
    assert result.stop is StopCause.INTERRUPTED
    spent = Usage(input_tokens=1200, cache_read_tokens=300, output_tokens=100)
    assert result.usage == spent
    assert result.usage_estimated  # the output is counted from the streamed text
    assert result.cost_usd == pytest.approx(cost_usd(spent, model_info(MODEL, "anthropic")))
    assert result.cost_usd > 0
    assert done.totals.input_tokens == 1200 and done.totals.output_tokens == 100
    totals = store.records.load(session_id).totals  # type: ignore[arg-type]
    assert (totals.turns, totals.input_tokens, totals.cache_read_tokens, totals.output_tokens
            ) == (1, 1200, 300, 100)
    assert totals.cost_usd == pytest.approx(result.cost_usd)


def test_without_reported_usage_the_input_is_estimated_from_the_request(tmp_path: Path) -> None:
    done, store, session_id = interrupted(tmp_path, StallingClient(TextDelta(text=STREAMED)))
    result = done.result
    assert result.usage_estimated
    assert result.usage.output_tokens == 100
    assert result.usage.input_tokens > len("explain") // 4  # the system prompt counts too
    totals = store.records.load(session_id).totals  # type: ignore[arg-type]
    assert totals.input_tokens == result.usage.input_tokens
