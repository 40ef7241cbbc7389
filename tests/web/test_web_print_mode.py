"""`aimon -p` with WebFetch: a domain a rule allows returns Markdown; any other is refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aimon_core.testing import LoopbackModelServer, RecordedRequest, Reply, ScriptedToolCall

from .conftest import WebServer

AIMON = str(Path(sys.executable).with_name("aimon"))


def run_print(tmp_path: Path, url: str, *flags: str) -> tuple[str, str]:
    """Run a turn whose model fetches `url`; return the tool result the model got, stderr."""

    def respond(request: RecordedRequest) -> Reply:
        messages = request.body["messages"]
        if messages[-1]["role"] == "tool":
            return Reply(text="done")
        return Reply(tool_calls=(ScriptedToolCall(name="WebFetch", input={
            "url": url, "prompt": "what does the parser read?"}),))

    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    with LoopbackModelServer(respond, provider="openai") as server:
        env = {**os.environ, "OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.base_url,
               "AIMON_NO_LOCAL_PROBE": "1"}
        done = subprocess.run([AIMON, "--provider", "openai", "--model", "gpt-5.4", *flags,
                               "-p", "read it"], cwd=project, env=env, capture_output=True,
                              text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        last = server.requests[-1].body["messages"][-1]
    assert last["role"] == "tool"
    content = last["content"]
    text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
    return text, done.stderr


@pytest.mark.parametrize("rule", ["WebFetch(domain:127.0.0.1)", "WebFetch"])
def test_an_allowed_domain_returns_markdown(tmp_path: Path, web: WebServer, rule: str) -> None:
    text, _ = run_print(tmp_path, web.url("/page"), "--allowed-tools", rule)
    assert "# The parser" in text and "<untrusted-content" in text
    assert web.hits == {"/page": 1}


def test_a_domain_no_rule_allows_is_refused(tmp_path: Path, web: WebServer) -> None:
    text, stderr = run_print(tmp_path, web.url("/page", "localhost"), "--allowed-tools",
                             "WebFetch(domain:127.0.0.1)")
    assert "# The parser" not in text and "WebFetch(domain:localhost)" in text
    assert "WebFetch(domain:localhost)" in stderr
    assert web.hits == {}
    denied, _ = run_print(tmp_path, web.url("/page"), "--allowed-tools", "WebFetch",
                          "--disallowed-tools", "WebFetch(domain:127.0.0.1)")
    assert "denied" in denied and web.hits == {}
    assert json.dumps(denied)
