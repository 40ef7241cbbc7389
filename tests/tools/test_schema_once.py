"""A tool call's input is checked against the schema once: by the executor, before the gate."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from aimon_core.agent import (
    AgentRuntime,
    Environment,
    ExecutionBudget,
    ExecutionRequest,
    OrcaExecutor,
    parse_agent,
)
from aimon_core.filesystem import LocalFileSystem
from aimon_core.llm import Message, reply, script
from aimon_core.shell import LocalShell
from aimon_core.tools import (
    Tool,
    ToolContext,
    ToolInput,
    ToolRegistry,
    ToolResult,
    check_input,
    execute_tool,
    warm_validators,
)
from aimon_core.tools._state import ToolState

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}},
          "required": ["n"], "additionalProperties": False}


async def _echo(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
    return ToolResult.ok(f"n={tool_input.raw['n']}")


ECHO = Tool(name="Echo", description="echo n", input_schema=SCHEMA, run=_echo, read_only=True)


def _context(root: Path) -> ToolContext:
    return ToolContext(project_root=root, cwd=root, fs=LocalFileSystem(root), shell=LocalShell(),
                       state=ToolState())


def _count_checks(run: Any) -> tuple[Any, int]:
    """Run `run()` and count the calls of `check_input` it makes (a profiler, not a mock)."""
    calls = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call" and frame.f_code is check_input.__code__:
            calls += 1

    sys.setprofile(profile)
    try:
        result = run()
    finally:
        sys.setprofile(None)
    return result, calls


def test_each_call_is_checked_once_through_the_executor(tmp_path: Path) -> None:
    steps = [reply("", ("Echo", {"n": 1})), reply("", ("Echo", {"n": 2}), ("Echo", {"n": 3})),
             reply("done")]
    runtime = AgentRuntime(agent=parse_agent("---\nname: t\n---\nT.\n"), client=script(*steps),
                           model="m", tools=ToolRegistry([ECHO]))
    request = ExecutionRequest(prompt=Message.user("go"), tool_context=_context(tmp_path),
                               environment=Environment(cwd=tmp_path, platform="t", date="d"),
                               budget=ExecutionBudget(max_iterations=10))
    result, calls = _count_checks(lambda: asyncio.run(OrcaExecutor().execute(runtime, request)))
    assert result.tool_calls == 3
    assert calls == 3
    assert all(f"n={n}" in str(result.new_messages) for n in (1, 2, 3))


def test_a_bad_input_is_refused_once(tmp_path: Path) -> None:
    steps = [reply("", ("Echo", {"n": "x"})), reply("done")]
    runtime = AgentRuntime(agent=parse_agent("---\nname: t\n---\nT.\n"), client=script(*steps),
                           model="m", tools=ToolRegistry([ECHO]))
    request = ExecutionRequest(prompt=Message.user("go"), tool_context=_context(tmp_path),
                               environment=Environment(cwd=tmp_path, platform="t", date="d"),
                               budget=ExecutionBudget(max_iterations=10))
    result, calls = _count_checks(lambda: asyncio.run(OrcaExecutor().execute(runtime, request)))
    assert calls == 1
    assert "Invalid input for Echo" in str(result.new_messages)


def test_execute_tool_checks_unless_told_the_input_was_checked(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    refused, calls = _count_checks(lambda: asyncio.run(execute_tool(ECHO, {"n": "x"}, ctx)))
    assert refused.is_error and calls == 1
    ran, calls = _count_checks(
        lambda: asyncio.run(execute_tool(ECHO, {"n": 4}, ctx, checked=True)))
    assert ran.text == "n=4" and calls == 0


def test_warm_validators_builds_what_check_input_uses() -> None:
    warm_validators([ECHO])
    assert check_input(ECHO, {"n": 1}) is None
    assert check_input(ECHO, {}) is not None
