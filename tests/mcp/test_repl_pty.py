"""The REPL draws its first prompt and stays usable while a slow MCP server is starting."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from aimon_core.session import user_config_dir
from aimon_core.testing import LoopbackModelServer

AIMON = str(Path(sys.executable).with_name("aimon"))
FAKE = str(Path(__file__).with_name("fake_server.py"))


@pytest.fixture
def server() -> Iterator[LoopbackModelServer]:
    with LoopbackModelServer(provider="openai") as srv:
        yield srv


def mcp_status(child: pexpect.spawn, until: str) -> str:
    """Run /mcp until the slow server's line shows `until` or a later state; return the state.

    The runtime may still be opening (no servers listed yet) right after the first prompt.
    """
    order = ["starting", "connected", "failed"]
    for _ in range(100):
        child.sendline("/mcp")
        if child.expect([r"slow  (starting|connected|failed)", "No MCP servers"]) == 0:
            state = str(child.match.group(1))
            if order.index(state) >= order.index(until):
                return state
        child.expect_exact("›")
    raise AssertionError(f"/mcp never showed the slow server {until}")


def test_first_prompt_is_drawn_while_a_slow_server_starts(
        tmp_path: Path, server: LoopbackModelServer) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    ready = tmp_path / "ready"
    settings = user_config_dir() / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"mcpServers": {"slow": {
        "command": sys.executable, "args": [FAKE, "--delay", "5", "--ready", str(ready)]}}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env.update(OPENAI_API_KEY="k", OPENAI_BASE_URL=server.base_url,
               AIMON_NO_LOCAL_PROBE="1", PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm")
    child = pexpect.spawn(AIMON, ["--model", "gpt-5.4"], cwd=str(project), env=env,
                          dimensions=(40, 120), encoding="utf-8", timeout=30)
    try:
        child.expect_exact("›")
        assert mcp_status(child, "starting") == "starting"
        assert not ready.exists()  # the prompt answered while the server was still asleep
        child.expect_exact("›")
        assert mcp_status(child, "connected") == "connected"
        assert ready.exists()
        child.expect_exact("stdio  5 tools, 1 prompt, resources")
    finally:
        child.terminate(force=True)
