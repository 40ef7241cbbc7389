"""What a front end sees of a tool call while it runs: its name as soon as the model starts
it, a command's output as it comes (whole lines, redacted), what an interruption or the time
limit leaves of it, and a time limit that stops a running command."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from aimon_core.agent import (
    AgentEvent,
    AgentRuntime,
    ExecutionBudget,
    ExecutionRequest,
    OrcaExecutor,
    StopCause,
    ToolCallAnnounced,
    ToolCallOutput,
    ToolCallStarted,
    Turn,
    allow_all,
    parse_agent,
)
from aimon_core.llm import Message, ToolResultBlock, reply, script
from aimon_core.tools import LiveOutput, ToolContext, ToolRegistry, builtin_tools

AGENT = parse_agent("---\nname: tester\n---\nYou test.\n")


def bash_runtime(*steps: Any) -> AgentRuntime:
    tools = ToolRegistry(t for t in builtin_tools() if t.name == "Bash")
    return AgentRuntime(agent=AGENT, client=script(*steps), model="scripted", tools=tools,
                        gate=allow_all)


def execute(runtime: AgentRuntime, context: ToolContext, events: list[AgentEvent],
            committed: list[Message], **kw: Any) -> Any:
    request = ExecutionRequest(prompt=Message.user("go"), tool_context=context,
                               turn=Turn(emit=events.append, persist=committed.append), **kw)
    return OrcaExecutor().execute(runtime, request)


def test_live_output_passes_whole_lines_redacted_and_keeps_the_last() -> None:
    told: list[str] = []
    output = LiveOutput((("API_TOKEN", "sekret-value-123"),), told.append)
    output("tick 1\ntick 2 sekret-val")
    output("ue-123 ok\npartial")
    assert told == ["tick 1\n", "tick 2 [REDACTED:API_TOKEN] ok\n"]
    output.flush()
    assert told[-1] == "partial\n"
    for number in range(30):
        output(f"line {number}\n")
    assert output.tail.splitlines()[0] == "line 10" and output.tail.endswith("line 29")


def test_a_call_is_announced_before_its_input_is_complete_and_its_output_streams(
        context: ToolContext) -> None:
    runtime = bash_runtime(reply("", ("Bash", {"command": "echo one; echo two >&2"})),
                           reply("done"))
    events: list[AgentEvent] = []
    asyncio.run(execute(runtime, context, events, []))
    kinds = [type(e) for e in events]
    assert kinds.index(ToolCallAnnounced) < kinds.index(ToolCallStarted)
    announced = next(e for e in events if isinstance(e, ToolCallAnnounced))
    assert announced.name == "Bash"
    printed = "".join(e.text for e in events if isinstance(e, ToolCallOutput))
    assert sorted(printed.splitlines()) == ["one", "two"]
    assert all(e.tool_use_id == announced.tool_use_id
               for e in events if isinstance(e, ToolCallOutput))


def test_an_interrupted_command_keeps_its_last_lines_for_the_model(
        context: ToolContext, tmp_path: Path) -> None:
    marker = tmp_path / "ticked"
    runtime = bash_runtime(reply("", ("Bash", {
        "command": f"echo tick-1; echo tick-2; touch {marker}; sleep 60"})))
    committed: list[Message] = []

    async def main() -> None:
        ticked = asyncio.Event()

        class Seen(list[AgentEvent]):
            def append(self, event: AgentEvent) -> None:
                super().append(event)
                if isinstance(event, ToolCallOutput) and "tick-2" in event.text:
                    ticked.set()

        seen = Seen()
        task = asyncio.ensure_future(execute(runtime, context, seen, committed))
        await ticked.wait()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(main())
    (result,) = committed[-1].content
    assert isinstance(result, ToolResultBlock) and result.is_error
    assert result.text.startswith("Interrupted")
    assert result.text.endswith("Its last lines of output:\ntick-1\ntick-2")


def test_the_time_limit_stops_a_running_command(context: ToolContext) -> None:
    runtime = bash_runtime(reply("", ("Bash", {"command": "echo started; sleep 30"})))
    events: list[AgentEvent] = []
    committed: list[Message] = []
    started = time.monotonic()
    result = asyncio.run(execute(runtime, context, events, committed,
                                 budget=ExecutionBudget(max_seconds=1.5)))
    assert time.monotonic() - started < 10
    assert result.stop is StopCause.TIME_LIMIT
    assert result.reason == "stopped: reached the time limit (1.5 s)"
    (block,) = committed[-1].content
    assert isinstance(block, ToolResultBlock) and block.is_error
    assert "the turn reached the time limit (1.5 s)" in block.text
    assert block.text.endswith("Its last lines of output:\nstarted")
