"""MCP servers in a runtime built by `build_runtime`: tools join late, rules, agent tool lists."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from aimon_core.agent import StopCause, parse_agent
from aimon_core.llm import ScriptedLLMClient, ToolResultBlock, reply, script
from aimon_core.runtime import AgentAssembly, RuntimeFlags, RuntimeParts, build_runtime
from aimon_core.session import (
    MemorySessionLeaseStore,
    MemorySessionRecordStore,
    SessionStore,
    user_config_dir,
)

FAKE = str(Path(__file__).with_name("fake_server.py"))

ECHO_ONLY_AGENT = """---
name: echo-only
description: Echoes.
tools: Read, mcp__fake__echo, mcp__other
---
You echo.
"""


def configure(root: Path) -> None:
    path = user_config_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": {
        "fake": {"command": sys.executable, "args": [FAKE]},
        "other": {"command": sys.executable, "args": [FAKE]}}}))


def assemble(root: Path, client: ScriptedLLMClient, *, allowed: tuple[str, ...] = (),
             agent: str | None = None) -> AgentAssembly:
    definition = parse_agent(agent) if agent is not None else None
    return build_runtime(root, flags=RuntimeFlags(allowed=allowed),
                         parts=RuntimeParts(client=client, agent_definition=definition))


def results(client: ScriptedLLMClient) -> list[str]:
    return [block.text for message in client.requests[-1].messages
            for block in message.content if isinstance(block, ToolResultBlock)]


def test_tools_join_the_next_model_call_and_a_server_rule_allows_them(tmp_path: Path) -> None:
    configure(tmp_path)
    client = script(reply("", ("mcp__fake__echo", {"text": "hi"})), reply("done"))

    async def main() -> None:
        assembly = assemble(tmp_path, client, allowed=("mcp__fake",))
        assert assembly.mcp is not None
        assert not any(n.startswith("mcp__") for n in assembly.runtime.tools.names())
        live = await assembly.open_session(SessionStore(MemorySessionRecordStore(),
                                                        MemorySessionLeaseStore()))
        try:
            assembly.start_background()
            await assembly.mcp.wait_ready(30)
            result = await live.submit("echo please")
            assert result.stop is StopCause.ANSWERED
            sent = {tool.name for tool in client.requests[0].tools}
            assert {"mcp__fake__echo", "mcp__other__echo", "ListMcpResources",
                    "ReadMcpResource"} <= sent
            assert results(client) == ["echo: hi (start 1)"]
            shown = await live.submit("/mcp")
            assert "fake connected stdio 5 tools" in " ".join(shown.text.split())
        finally:
            await live.close()
            await assembly.aclose()
        assert not any(n.startswith("mcp__") for n in assembly.runtime.tools.names())

    asyncio.run(main())


def test_an_agent_tool_list_picks_mcp_tools_by_name_or_server(tmp_path: Path) -> None:
    configure(tmp_path)

    async def main() -> None:
        assembly = assemble(tmp_path, script(), agent=ECHO_ONLY_AGENT)
        assert assembly.mcp is not None
        try:
            assembly.start_background()
            await assembly.mcp.wait_ready(30)
            names = set(assembly.runtime.tools.names())
            assert "mcp__fake__echo" in names and "mcp__fake__crash" not in names
            assert {"mcp__other__echo", "mcp__other__crash"} <= names
        finally:
            await assembly.aclose()

    asyncio.run(main())
