"""LiveSession: turns run one at a time, queue in order, persist as they go, reopen intact."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from aimon_core.agent import (
    AgentRuntime,
    Environment,
    ExecutionBudget,
    GateVerdict,
    StopCause,
    allow_all,
    parse_agent,
    repair_tool_pairs,
)
from aimon_core.filesystem import LocalFileSystem
from aimon_core.hook import PermissionDecision
from aimon_core.live import (
    LiveSession,
    LiveSessionEvent,
    LiveSessionOptions,
    SubmitOutcome,
    TurnFinished,
    TurnQueued,
    TurnStarted,
)
from aimon_core.llm import LLMRequest, LLMResponse, ToolResultBlock, reply, script
from aimon_core.session import (
    BudgetOverride,
    FileSessionLeaseStore,
    FileSessionRecordStore,
    SessionLockedError,
    SessionStore,
)
from aimon_core.shell import LocalShell
from aimon_core.tools import Tool, ToolContext, ToolInput, ToolRegistry, ToolResult
from aimon_core.tools._state import ToolState

AGENT = parse_agent("---\nname: tester\nmaxIterations: 9\n---\nTest agent.\n")


def make_tool(name: str, run: Any) -> Tool:
    return Tool(name=name, description=name, run=run, read_only=False,
                input_schema={"type": "object", "properties": {},
                              "additionalProperties": False})


async def ok_tool(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
    return ToolResult.ok("fine")


def setup(tmp_path: Path, client: Any, *tools: Tool) -> tuple[AgentRuntime, SessionStore,
                                                              ToolContext]:
    runtime = AgentRuntime(agent=AGENT, client=client, model="scripted", gate=allow_all,
                           tools=ToolRegistry(tools or (make_tool("Ok", ok_tool),)))
    base = tmp_path / "data"
    store = SessionStore(FileSessionRecordStore(base), FileSessionLeaseStore(base))
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    ctx = ToolContext(project_root=project, cwd=project, fs=LocalFileSystem(project),
                      shell=LocalShell(), state=ToolState())
    return runtime, store, ctx


ENV = Environment(cwd=Path("/p"), platform="test", date="2026-01-01")


async def open_live(runtime: AgentRuntime, store: SessionStore, ctx: ToolContext,
                    session_id: str | None = None) -> LiveSession:
    return await LiveSession.open(runtime, store, ctx, session_id=session_id,
                                  options=LiveSessionOptions(environment=ENV))


def test_turns_persist_and_totals_survive_reopen(tmp_path: Path) -> None:
    client = script(reply("", ("Ok", {})), reply("first done"), reply("second done"))
    runtime, store, ctx = setup(tmp_path, client)

    async def main() -> str:
        live = await open_live(runtime, store, ctx)
        events: list[LiveSessionEvent] = []
        live.subscribe(events.append)
        first = await live.submit("one")
        second = await live.submit("two")
        assert first.text == "first done" and second.text == "second done"
        assert isinstance(events[0], TurnStarted) and isinstance(events[-1], TurnFinished)
        live.set_budget_override(BudgetOverride(max_iterations=7))
        await live.close()
        return live.id

    session_id = asyncio.run(main())
    record = store.records.load(session_id)  # type: ignore[arg-type]
    assert [m.role for m in record.transcript.messages] == [
        "user", "assistant", "user", "assistant", "user", "assistant"]
    assert record.totals.turns == 2 and record.totals.iterations == 3
    assert record.totals.input_tokens == 30
    assert record.budget_override == BudgetOverride(max_iterations=7)

    async def reopen() -> None:
        live = await open_live(runtime, store, ctx, session_id)
        status = live.status()
        assert status.totals.turns == 2 and status.budget.max_iterations == 7
        assert status.message_count == 6
        await live.close()

    asyncio.run(reopen())


def test_second_holder_is_refused(tmp_path: Path) -> None:
    runtime, store, ctx = setup(tmp_path, script(reply("hi")))

    async def main() -> None:
        live = await open_live(runtime, store, ctx)
        await live.submit("one")  # a new session is stored with its first prompt
        with pytest.raises(SessionLockedError) as info:
            await open_live(runtime, store, ctx, live.id)
        assert "pid" in str(info.value)
        await live.close()
        again = await open_live(runtime, store, ctx, live.id)
        await again.close()

    asyncio.run(main())


def test_offer_queues_while_a_turn_runs(tmp_path: Path) -> None:
    gate = asyncio.Event()

    async def slow(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        await gate.wait()
        return ToolResult.ok("slow done")

    seen: list[str] = []

    def second(request: LLMRequest) -> LLMResponse:
        seen.append(request.messages[-1].text)
        return reply("answer two")

    client = script(reply("", ("Slow", {})), reply("answer one"), second)
    runtime, store, ctx = setup(tmp_path, client, make_tool("Slow", slow))

    async def main() -> None:
        live = await open_live(runtime, store, ctx)
        events: list[LiveSessionEvent] = []
        live.subscribe(events.append)
        outcome1, task1 = live.offer_async("one")
        await asyncio.sleep(0)
        outcome2, task2 = live.offer_async("two")
        assert (outcome1, outcome2) == (SubmitOutcome.EXECUTED, SubmitOutcome.QUEUED)
        assert any(isinstance(e, TurnQueued) for e in events)
        assert live.status().queued == 1
        gate.set()
        assert (await task1).text == "answer one"
        assert (await task2).text == "answer two"
        await live.close()

    asyncio.run(main())
    assert seen == ["two"]


def test_interrupt_keeps_a_valid_transcript_and_counts_the_turn(tmp_path: Path) -> None:
    started = asyncio.Event()

    async def hang(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        started.set()
        await asyncio.sleep(60)
        return ToolResult.ok("never")

    client = script(reply("", ("Hang", {})), reply("after"))
    runtime, store, ctx = setup(tmp_path, client, make_tool("Hang", hang))

    async def main() -> str:
        live = await open_live(runtime, store, ctx)
        finished: list[TurnFinished] = []
        live.subscribe(lambda e: finished.append(e) if isinstance(e, TurnFinished) else None)
        task = live.submit_async("start")
        await asyncio.wait_for(started.wait(), 5)
        assert live.interrupt()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert finished[-1].result.stop is StopCause.INTERRUPTED
        assert (await live.submit("continue")).text == "after"
        await live.close()
        return live.id

    session_id = asyncio.run(main())
    record = store.records.load(session_id)  # type: ignore[arg-type]
    messages = record.transcript.messages
    assert repair_tool_pairs(messages) == messages
    result = messages[2].content[0]
    assert isinstance(result, ToolResultBlock) and "Interrupted" in result.text
    assert record.totals.turns == 2


def test_per_turn_budget_and_events_iterator(tmp_path: Path) -> None:
    client = script(reply("", ("Ok", {})), reply("", ("Ok", {})))
    runtime, store, ctx = setup(tmp_path, client)

    async def main() -> None:
        live = await open_live(runtime, store, ctx)
        seen: list[LiveSessionEvent] = []

        async def watch() -> None:
            async for event in live.events():
                seen.append(event)

        watcher = asyncio.create_task(watch())
        await asyncio.sleep(0)
        result = await live.submit("go", budget=ExecutionBudget(max_iterations=1))
        assert result.stop is StopCause.ITERATION_LIMIT
        await live.close()
        await asyncio.wait_for(watcher, 2)
        assert isinstance(seen[-1], TurnFinished)

    asyncio.run(main())


def test_session_start_and_end_hooks(tmp_path: Path) -> None:
    from dataclasses import replace

    from aimon_core.hook import (
        HookEvent,
        HookInput,
        HookRegistry,
        HookResult,
        SessionEndInput,
        SessionStartInput,
    )

    seen: list[tuple[str, str | None]] = []

    async def on_start(hook_input: HookInput) -> HookResult:
        assert isinstance(hook_input.data, SessionStartInput)
        seen.append(("start", hook_input.data.source))
        return HookResult.context("Remember: the CI is red on main.")

    async def on_end(hook_input: HookInput) -> HookResult:
        assert isinstance(hook_input.data, SessionEndInput)
        seen.append(("end", hook_input.data.reason))
        return HookResult()

    hooks = HookRegistry()
    hooks.register(HookEvent.ON_SESSION_START, on_start)
    hooks.register(HookEvent.ON_SESSION_END, on_end)
    client = script(reply("noted"))
    runtime, store, ctx = setup(tmp_path, client)
    runtime = replace(runtime, hooks=hooks)

    async def main() -> None:
        live = await open_live(runtime, store, ctx)
        assert live.transcript_path is not None and live.transcript_path.endswith(".jsonl")
        await live.submit("hi")
        await live.close()

    asyncio.run(main())
    assert seen == [("start", "startup"), ("end", "other")]  # Claude Code's list
    assert "the CI is red on main" in client.requests[0].messages[-1].text


def test_a_call_starts_durably_unless_the_tool_or_the_gate_says_it_changes_nothing(
        tmp_path: Path) -> None:
    async def gate(tool: Tool, tool_input: Mapping[str, Any], ctx: ToolContext, *,
                   hint: PermissionDecision | None = None,
                   tool_use_id: str = "") -> GateVerdict:
        return GateVerdict(allowed=True, read_only=tool_input.get("proven") is True)

    reader = Tool(name="Look", description="Look", run=ok_tool, read_only=True,
                  input_schema={"type": "object"})
    client = script(reply("", ("Ok", {"proven": True}), ("Ok", {"proven": False}),
                          ("Look", {})), reply("done"))
    writer = Tool(name="Ok", description="Ok", run=ok_tool, read_only=False,
                  input_schema={"type": "object"})
    runtime, store, ctx = setup(tmp_path, client, writer, reader)
    runtime = dataclasses.replace(runtime, gate=gate)
    synced: dict[str, bool] = {}
    _before_each_mark(store, lambda ids, sync: synced.update(dict.fromkeys(ids, sync)))
    _one_turn(runtime, store, ctx)
    assert sorted(synced.values()) == [False, False, True]  # the unproven Ok call only


def _before_each_mark(store: SessionStore, before: Callable[[list[str], bool], object]) -> None:
    """Call `before(ids, sync)` as each tool-started line is written, before it is."""
    mark = store.records.mark_tool_started

    def noted(session_id: Any, ids: Any, *, lease: Any = None, sync: bool = False) -> None:
        before(list(ids), sync)
        mark(session_id, ids, lease=lease, sync=sync)

    store.records.mark_tool_started = noted  # type: ignore[method-assign,assignment]


def _one_turn(runtime: AgentRuntime, store: SessionStore, ctx: ToolContext) -> str:
    """Open a session, run one turn ("go"), close it; return its id."""
    async def main() -> str:
        live = await open_live(runtime, store, ctx)
        await live.submit("go")
        await live.close()
        return live.id

    return asyncio.run(main())


def test_a_read_only_call_runs_once_the_turn_so_far_is_written(tmp_path: Path) -> None:
    """Its start line is not synced, but it and everything before it (the prompt) are
    written before the tool runs: a process killed during a long read keeps the turn."""
    import threading

    ran = threading.Event()

    async def look(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        ran.set()
        return ToolResult.ok("seen")

    reader = Tool(name="Look", description="Look", run=look, read_only=True,
                  input_schema={"type": "object"})
    runtime, store, ctx = setup(tmp_path, script(reply("", ("Look", {})), reply("done")), reader)
    written: list[tuple[bool, bool]] = []
    _before_each_mark(store, lambda ids, sync: written.append((ran.is_set(), sync)))
    session_id = _one_turn(runtime, store, ctx)
    assert written == [(False, False)]  # written first, not synced
    stored = store.records.path_of(session_id).read_text()  # type: ignore[attr-defined]
    assert stored.count('"type":"tool_started"') == 1  # written all the same
