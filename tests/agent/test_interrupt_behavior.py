"""What Ctrl-C does to a running call (InterruptBehavior) and how read-only calls run together
(ConcurrencyBehavior)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aimon_core.agent import (
    INTERRUPTED_RESULT,
    AgentEvent,
    ExecutionFinished,
    ExecutionRequest,
    OrcaExecutor,
    StopCause,
    ToolCallFinished,
    Turn,
)
from aimon_core.config import SettingsError, TrustStore, load_settings
from aimon_core.llm import Message, ToolResultBlock, reply, script
from aimon_core.tools import (
    ConcurrencyBehavior,
    InterruptBehavior,
    PathSubject,
    Tool,
    ToolContext,
    ToolInput,
    ToolResult,
    builtin_tools,
)
from tests.agent.test_executor import ENV, make_runtime, make_tool


class _Slow:
    """A tool run that waits for `release`, noting whether it was cancelled or finished."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.outcome = "running"

    async def __call__(self, tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.outcome = "cancelled"
            raise
        self.outcome = "finished"
        return ToolResult.ok("wrote the file")


async def _settle() -> None:
    """Let a cancellation reach every task waiting on it (yields, no clock)."""
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.mark.parametrize(("behavior", "interrupts", "outcome", "answer"), [
    (InterruptBehavior.FINISH, 1, "finished", "wrote the file"),
    (InterruptBehavior.FINISH, 3, "finished", "wrote the file"),  # Ctrl-C pressed again
    (InterruptBehavior.CANCEL, 1, "cancelled", INTERRUPTED_RESULT),
])
def test_an_interrupt_cancels_or_lets_the_call_finish(
        context: ToolContext, behavior: InterruptBehavior, interrupts: int, outcome: str,
        answer: str) -> None:
    slow = _Slow()
    tool = Tool(name="Slow", description="slow", input_schema={"type": "object"}, run=slow,
                interrupt=behavior)
    client = script(reply("", ("Slow", {})))
    committed: list[Message] = []
    events: list[AgentEvent] = []

    async def main() -> None:
        request = ExecutionRequest(prompt=Message.user("go"), tool_context=context,
                                   environment=ENV,
                                   turn=Turn(persist=committed.append, emit=events.append))
        task = asyncio.create_task(OrcaExecutor().execute(make_runtime(client, tool), request))
        await asyncio.wait_for(slow.started.wait(), 5)
        for _ in range(interrupts):
            task.cancel()
            await _settle()
        slow.release.set()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)

    asyncio.run(main())
    assert slow.outcome == outcome
    [result] = [b for b in committed[-1].content if isinstance(b, ToolResultBlock)]
    assert result.text == answer
    finished = [e for e in events if isinstance(e, ExecutionFinished)]
    assert finished and finished[0].result.stop is StopCause.INTERRUPTED
    if behavior is InterruptBehavior.FINISH:
        assert [e.result.text for e in events if isinstance(e, ToolCallFinished)] == [answer]


@pytest.mark.parametrize("tool", builtin_tools(), ids=lambda tool: tool.name)
def test_a_builtin_that_writes_a_file_finishes_and_the_others_cancel(tool: Tool) -> None:
    writes = isinstance(tool.subject, PathSubject) and tool.subject.writes
    expected = InterruptBehavior.FINISH if writes else InterruptBehavior.CANCEL
    assert tool.interrupt is expected


@pytest.mark.parametrize("concurrency", list(ConcurrencyBehavior))
def test_read_only_calls_run_together_or_in_turn_as_set(
        context: ToolContext, concurrency: ConcurrencyBehavior) -> None:
    seen: list[str] = []
    b_started = asyncio.Event()

    async def a(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        seen.append("start A")
        if concurrency is ConcurrencyBehavior.PARALLEL:  # ends only once B has started
            await asyncio.wait_for(b_started.wait(), 5)
        else:  # gives B every chance to start, were it run alongside
            await _settle()
        seen.append("end A")
        return ToolResult.ok("a")

    async def b(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        seen.append("start B")
        b_started.set()
        await asyncio.sleep(0)
        seen.append("end B")
        return ToolResult.ok("b")

    client = script(reply("", ("A", {}), ("B", {})), reply("done"))
    runtime = make_runtime(client, make_tool("A", a), make_tool("B", b), concurrency=concurrency)

    async def main() -> None:
        await OrcaExecutor().execute(runtime, ExecutionRequest(
            prompt=Message.user("go"), tool_context=context, environment=ENV, turn=Turn()))

    asyncio.run(main())
    together = seen.index("start B") < seen.index("end A")
    assert together is (concurrency is ConcurrencyBehavior.PARALLEL)
    assert sorted(seen) == ["end A", "end B", "start A", "start B"]


def test_the_concurrency_setting(tmp_path: Path) -> None:
    settings = tmp_path / ".aimon" / "settings.json"
    settings.parent.mkdir()
    assert load_settings(tmp_path, trust_store=TrustStore()).settings.tools.concurrency is None
    settings.write_text('{"tools": {"concurrency": "serial"}}')
    loaded = load_settings(tmp_path, trust_store=TrustStore())
    assert ConcurrencyBehavior(loaded.settings.tools.concurrency) is ConcurrencyBehavior.SERIAL
    settings.write_text('{"tools": {"concurrency": "sometimes"}}')
    with pytest.raises(SettingsError, match=r"tools\.concurrency: 'sometimes' is not one of"):
        load_settings(tmp_path, trust_store=TrustStore())
