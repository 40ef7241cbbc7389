"""A server's question during a call is a form in the REPL, each default already typed in."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from aimon_core.session import user_config_dir
from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall

AIMON = str(Path(sys.executable).with_name("aimon"))
FAKE = str(Path(__file__).with_name("fake_server.py"))

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")


@pytest.fixture
def server() -> Iterator[LoopbackModelServer]:
    with LoopbackModelServer(provider="openai") as srv:
        yield srv


def connected(child: pexpect.spawn) -> None:
    """Run /mcp until the server is connected (it starts after the first prompt)."""
    for _ in range(100):
        child.sendline("/mcp")
        if child.expect([r"fake  connected", r"fake  (starting|failed)", "No MCP servers"]) == 0:
            child.expect_exact("›")
            return
        child.expect_exact("›")
    raise AssertionError("the fake server never connected")


def test_the_form_keeps_defaults_on_enter_and_sends_what_was_typed(
        tmp_path: Path, server: LoopbackModelServer) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    settings = user_config_dir() / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"mcpServers": {"fake": {
        "command": sys.executable, "args": [FAKE, "--elicit"]}}}))
    server.add(Reply(tool_calls=(ScriptedToolCall(name="mcp__fake__ask", input={}),)),
               Reply(text="Thanks for answering."))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="k", OPENAI_BASE_URL=server.base_url,
               AIMON_NO_LOCAL_PROBE="1", PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm")
    child = pexpect.spawn(AIMON, ["--model", "gpt-5.4", "--allowed-tools", "mcp__fake"],
                          cwd=str(project), env=env, dimensions=(40, 120), encoding="utf-8",
                          timeout=30)
    try:
        child.expect_exact("›")
        connected(child)
        child.send("who am I?\r")
        child.expect_exact("MCP server fake asks: Who are you?")
        child.expect_exact("Name (string, may stay empty):")
        child.expect_exact("Ada")  # the default, already typed in
        child.send("\r")
        child.expect_exact("age (integer):")
        child.send("seven\r")  # not a whole number: said, and asked again
        child.expect_exact("invalid literal")
        child.expect_exact("age (integer):")
        child.send("7\r")
        child.expect_exact("color (red / blue, may stay empty):")
        child.send("\r")
        child.expect_exact("subscribed (yes or no, may stay empty):")
        child.send("\r")
        child.expect_exact("Send this to the server?")
        child.expect_exact("[s/d]")  # the choice is ready: keys before it never count
        child.send("s\r")
        child.expect_exact("Thanks for answering.")
    finally:
        child.terminate(force=True)
    [result] = list(server.requests[-1].tool_results().values())
    assert json.loads(result) == {"action": "accept", "content": {
        "name": "Ada", "age": 7, "color": "blue", "subscribed": False}}
