"""MCPServers against real stdio servers: mcp-server-time, and a small misbehaving one."""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from aimon_core.command import CommandRegistry
from aimon_core.config import StdioServerConfig
from aimon_core.mcp import (
    LIST_RESOURCES,
    READ_RESOURCE,
    MCPOptions,
    MCPServers,
    ServerPhase,
    attach_resources,
    bind_extras,
    status_text,
)
from aimon_core.permission import PermissionRules
from aimon_core.tools import ToolInput, ToolRegistry

FAKE = str(Path(__file__).with_name("fake_server.py"))
TIME = StdioServerConfig(command=sys.executable,
                         args=("-m", "mcp_server_time", "--local-timezone", "UTC"))


def fake(*args: str) -> StdioServerConfig:
    return StdioServerConfig(command=sys.executable, args=(FAKE, *args))


def sync(test: Callable[[], Coroutine[Any, Any, None]]) -> Callable[[], None]:
    """Run an async test body in its own event loop."""
    @functools.wraps(test)
    def run() -> None:
        asyncio.run(test())
    return run


async def _no_wait(seconds: float) -> None:
    await asyncio.sleep(0)


def servers(configs: dict[str, StdioServerConfig], tools: ToolRegistry, notes: list[str],
            **options: float) -> MCPServers:
    return MCPServers(configs, tools=tools, roots=lambda: (Path.cwd(),), notify=notes.append,
                      options=MCPOptions(**options), env={"PATH": "/usr/bin:/bin"},  # type: ignore[arg-type]
                      sleep=_no_wait)


@sync
async def test_time_server_tools_join_the_registry_and_answer() -> None:
    tools, notes = ToolRegistry(), list[str]()
    mcp = servers({"time": TIME}, tools, notes)
    mcp.start()
    await mcp.wait_ready(60)
    try:
        assert [s.phase for s in mcp.statuses()] == [ServerPhase.CONNECTED]
        assert {"mcp__time__get_current_time", "mcp__time__convert_time"} <= set(tools.names())
        tool = tools.get("mcp__time__get_current_time")
        assert tool is not None and not tool.read_only  # readOnlyHint does not make it so
        assert tool.input_schema["required"] == ["timezone"]
        result = await tool.run(ToolInput({"timezone": "Europe/Paris"}),
                                SimpleNamespace(turn=None))  # type: ignore[arg-type]
        assert not result.is_error
        assert '"timezone": "Europe/Paris"' in result.text
        assert result.data["structured_content"]["timezone"] == "Europe/Paris"
        unknown = await mcp.call_tool("time", "no_such_tool", {})
        assert unknown.is_error and "no_such_tool" in unknown.text
    finally:
        await mcp.aclose()
    assert not any(name.startswith("mcp__") for name in tools.names())


@sync
async def test_a_server_that_fails_to_start_is_failed_with_its_stderr() -> None:
    tools, notes = ToolRegistry(), list[str]()
    broken = StdioServerConfig(command=sys.executable, args=("-c", "import sys; "
                               "sys.stderr.write('no config here\\n'); sys.exit(4)"))
    mcp = servers({"broken": broken, "missing": StdioServerConfig(command="/nonexistent/x")},
                  tools, notes, connect_timeout=20)
    mcp.start()
    await mcp.wait_ready(30)
    try:
        broken_status, missing = mcp.statuses()
        assert broken_status.phase is ServerPhase.FAILED
        assert "no config here" in broken_status.stderr
        assert missing.phase is ServerPhase.FAILED and missing.error
        text = status_text(mcp)
        assert "broken failed stdio 0 tools" in " ".join(text.split())
        assert "stderr: no config here" in text
        rows = [line for line in text.splitlines() if "  stdio  " in line]
        assert len({line.index("stdio") for line in rows}) == 1  # the columns line up
    finally:
        await mcp.aclose()


@sync
async def test_a_crashed_server_is_restarted_and_the_call_after_works() -> None:
    tools, notes = ToolRegistry(), list[str]()
    mcp = servers({"flaky": fake()}, tools, notes)
    mcp.start()
    await mcp.wait_ready(30)
    try:
        crashed = await mcp.call_tool("flaky", "crash", {})
        assert crashed.is_error and "went away" in crashed.text
        again = await mcp.call_tool("flaky", "echo", {"text": "hi"})
        assert again.text == "echo: hi (start 1)" or "echo: hi" in again.text, again
        assert not again.is_error
        assert mcp.statuses()[0].restarts == 1
        assert any("restarting" in note for note in notes)
        assert any("is back" in note for note in notes)
        assert "mcp__flaky__echo" in tools
    finally:
        await mcp.aclose()


@sync
async def test_a_silent_server_times_out_and_a_hanging_tool_does_not_hang() -> None:
    tools, notes = ToolRegistry(), list[str]()
    mcp = servers({"silent": fake("--silent"), "ok": fake()}, tools, notes,
                  connect_timeout=1.5, tool_timeout=1.0)
    mcp.start()
    await mcp.wait_ready(20)
    try:
        silent, ok = mcp.statuses()
        assert silent.phase is ServerPhase.FAILED and "no answer within 1.5 s" in silent.error
        assert ok.phase is ServerPhase.CONNECTED
        hung = await mcp.call_tool("ok", "hang", {})
        assert hung.is_error and "did not answer within 1 s" in hung.text
    finally:
        await mcp.aclose()


@sync
async def test_error_results_truncation_resources_and_prompts() -> None:
    tools, notes = ToolRegistry(), list[str]()
    mcp = servers({"fake": fake()}, tools, notes)
    registry = CommandRegistry()
    bind_extras(mcp, tools, lambda: (registry,))
    mcp.options = MCPOptions(max_output_tokens=25)
    mcp.start()
    await mcp.wait_ready(30)
    try:
        failed = await mcp.call_tool("fake", "fail", {})
        assert failed.is_error and failed.text == "it failed"
        big = await mcp.call_tool("fake", "big", {"size": 5000})
        assert big.text.startswith("x" * 100) and "[output truncated" in big.text
        assert LIST_RESOURCES in tools and READ_RESOURCE in tools
        listing = tools.get(LIST_RESOURCES)
        assert listing is not None
        no_turn = SimpleNamespace(turn=None)  # a call outside any session
        listed = await listing.run(ToolInput({}), no_turn)  # type: ignore[arg-type]
        assert "fake: note://hello — hello (text/plain)" in listed.text
        prompt, problems = await attach_resources(mcp, "look at @fake:note://hello please")
        assert "the note at note://hello" in prompt and not problems
        command = registry.get("mcp__fake__greet")
        assert command is not None
        no_rules = SimpleNamespace(policy=None)
        outcome = await command.run("Ada", no_rules)  # type: ignore[arg-type]
        assert outcome.prompt == "Say hello to Ada."
        missing = await command.run("", no_rules)  # type: ignore[arg-type]
        assert missing.is_error and "name" in missing.text
        # A rule denying the whole server holds for its prompts and its mentioned resources.
        deny = SimpleNamespace(policy=SimpleNamespace(rules=PermissionRules.parse(
            deny=["mcp__fake"])))
        refused = await command.run("Ada", deny)  # type: ignore[arg-type]
        assert refused.is_error and "denied by rule mcp__fake" in refused.text
        prompt, problems = await attach_resources(
            mcp, "look at @fake:note://hello", lambda server: "denied by rule mcp__fake")
        assert "the note at" not in prompt and problems == [
            "@fake:note://hello: denied by rule mcp__fake"]
    finally:
        await mcp.aclose()


@pytest.mark.parametrize("env", [{"MCP_TIMEOUT": "2500", "MCP_TOOL_TIMEOUT": "1000",
                                  "MAX_MCP_OUTPUT_TOKENS": "900"}])
def test_options_from_claude_code_variables(env: dict[str, str]) -> None:
    options = MCPOptions.from_env(env)
    assert (options.connect_timeout, options.tool_timeout, options.max_output_tokens) == (
        2.5, 1.0, 900)
    assert MCPOptions.from_env({"MCP_TIMEOUT": "x"}) == MCPOptions()
