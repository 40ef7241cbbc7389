"""MCP servers and credentials: a server gets a safe environment plus what its entry names,
and nothing a server sends back carries a credential to the model, by any route."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from aimon_core.command import CommandRegistry
from aimon_core.config import StdioServerConfig
from aimon_core.mcp import (
    LIST_RESOURCES,
    READ_RESOURCE,
    MCPServers,
    attach_resources,
    bind_extras,
)
from aimon_core.tools import ToolInput, ToolRegistry

SERVER = str(Path(__file__).with_name("env_server.py"))
PASSWORD = "pw-0a9b8c7d6e5f"
GITHUB = "ghp_" + "HandedThrough" * 3
ANTHROPIC = "sk-ant-api03-" + "NeverInAServer" * 3
LITERAL = "literal-probe-token-" + "7" * 12
ENVIRON = {
    "PATH": os.environ["PATH"], "HOME": "/nonexistent/home", "LANG": "C.UTF-8",
    "HTTPS_PROXY": "http://proxy.corp:3128", "HTTP_PROXY": f"http://me:{PASSWORD}@proxy:3128",
    "GITHUB_TOKEN": GITHUB, "ANTHROPIC_API_KEY": ANTHROPIC,
    "DATABASE_URL": f"postgres://app:{PASSWORD}@db/app", "RANDOM_SETTING": "plain-value",
    "KEYBOARD_LAYOUT": "us",
}
ENTRY_ENV = (("PROBE_TOKEN", LITERAL), ("HANDED", "${GITHUB_TOKEN}"), ("PLAIN", "visible"))
# The MCP SDK adds these from the real environment to whatever it is given.
SDK_DEFAULTS = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}


def run(tmp_path: Path, body: Any) -> Any:
    """Start the env server with ENVIRON, run `body(servers, tools)`, stop it."""

    async def scenario() -> Any:
        tools = ToolRegistry()
        config = StdioServerConfig(command=sys.executable,
                                   args=(SERVER, "--dump", str(tmp_path / "env.json")),
                                   env=ENTRY_ENV)
        servers = MCPServers({"probe": config}, tools=tools, roots=lambda: (tmp_path,),
                             env=ENVIRON)
        servers.start()
        await servers.wait_ready(60)
        try:
            return await body(servers, tools)
        finally:
            await servers.aclose()

    return asyncio.run(scenario())


def test_a_stdio_server_gets_a_safe_environment_and_what_its_entry_names(
        tmp_path: Path) -> None:
    async def nothing(servers: MCPServers, tools: ToolRegistry) -> None:
        assert "mcp__probe__env" in tools

    run(tmp_path, nothing)
    env = json.loads((tmp_path / "env.json").read_text())
    assert set(env) - SDK_DEFAULTS == {
        "PATH", "HOME", "LANG", "HTTPS_PROXY", "AIMON_PROJECT_DIR", "CLAUDE_PROJECT_DIR",
        "PROBE_TOKEN", "HANDED", "PLAIN"} - SDK_DEFAULTS
    assert env["HANDED"] == GITHUB and env["PROBE_TOKEN"] == LITERAL
    assert env["HOME"] == ENVIRON["HOME"]
    assert env["AIMON_PROJECT_DIR"] == str(tmp_path)
    text = json.dumps(env)
    for secret in (ANTHROPIC, PASSWORD):
        assert secret not in text


async def _routes(servers: MCPServers, tools: ToolRegistry) -> dict[str, str]:
    """Return what each route from the server toward the model carries, as text."""
    registry = CommandRegistry()
    bind_extras(servers, tools, lambda: (registry,))
    servers._tell("probe", servers.connected()[0][1])  # the listener joined after connecting
    env_tool, fail_tool = tools.get("mcp__probe__env"), tools.get("mcp__probe__fail")
    listing, reading = tools.get(LIST_RESOURCES), tools.get(READ_RESOURCE)
    assert None not in (env_tool, fail_tool, listing, reading)
    no_turn = SimpleNamespace(turn=None)  # a call outside any session
    called = await env_tool.run(ToolInput({}), no_turn)  # type: ignore[union-attr, arg-type]
    failed = await fail_tool.run(ToolInput({}), no_turn)  # type: ignore[union-attr, arg-type]
    listed = await listing.run(ToolInput({}), no_turn)  # type: ignore[union-attr, arg-type]
    read = await reading.run(  # type: ignore[union-attr]
        ToolInput({"server": "probe", "uri": "env://all"}), None)  # type: ignore[arg-type]
    mentioned, problems = await attach_resources(servers, "look at @probe:env://all")
    prompt = registry.get("mcp__probe__env")
    assert prompt is not None and not problems
    outcome = await prompt.run("", SimpleNamespace(policy=None))  # type: ignore[arg-type]
    return {
        "tool result": called.text, "tool data": json.dumps(dict(called.data)),
        "tool error": failed.text, "tool description": env_tool.description,  # type: ignore[union-attr]
        "resource listing": listed.text, "resource read": read.text,
        "resource mention": mentioned, "prompt command": str(outcome.prompt),
    }


ROUTES = ("tool result", "tool data", "tool error", "tool description", "resource listing",
          "resource read", "resource mention", "prompt command")
SECRETS = {"literal in the entry's env": LITERAL, "handed through ${GITHUB_TOKEN}": GITHUB}


@pytest.fixture(scope="module")
def routes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return run(tmp_path_factory.mktemp("mcp-routes"), _routes)  # type: ignore[no-any-return]


@pytest.mark.parametrize("secret", list(SECRETS))
@pytest.mark.parametrize("route", ROUTES)
def test_no_credential_comes_back_from_a_server(route: str, secret: str,
                                                routes: dict[str, str]) -> None:
    text = routes[route]
    assert "visible" in text or route in ("tool description", "resource listing")  # control
    assert SECRETS[secret] not in text
