"""End to end: real MCP servers through the `aimon` command and the loopback model.

mcp-server-time and mcp-server-git come from PyPI (the test extras); server-everything and
server-filesystem from npm, found in the folder `.ci/run` installs them into
(`AIMON_MCP_NPM`, default ~/.cache/aimon-ci/mcp-npm) and skipped when it is missing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from aimon_core.session import user_config_dir
from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall

from .conftest import AIMON, MODEL_ARGS, aimon_env

FAKE = str(Path(__file__).parents[1] / "mcp" / "fake_server.py")
NPM_BIN = Path(os.environ.get("AIMON_MCP_NPM", Path.home() / ".cache" / "aimon-ci" / "mcp-npm")
               ) / "node_modules" / ".bin"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    git = ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git[:3], "init", "-q", "-b", "main"], check=True)
    (project / "README.md").write_text("hello\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "init"], check=True)
    (project / "untracked.txt").write_text("new\n")
    return project


def configure(servers: dict[str, Any], **extra: Any) -> None:
    """Write the servers into the user's settings (the user layer needs no trust)."""
    path = user_config_dir() / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers, **extra}))


def aimon(server: LoopbackModelServer, cwd: Path, *args: str, **env_extra: str
          ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([AIMON, *MODEL_ARGS, "-p", "go", *args], cwd=cwd,
                          env=aimon_env(server, **env_extra), capture_output=True, text=True,
                          timeout=90, check=False)


def results(server: LoopbackModelServer) -> list[str]:
    """Tool result texts in the last request, in order."""
    return list(server.requests[-1].tool_results().values())


def tool_names(server: LoopbackModelServer, index: int = 0) -> set[str]:
    return set(server.requests[index].tool_names())


def call(name: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=(ScriptedToolCall(name=name, input=arguments),))


TIME = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


def git_server(repo: Path) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "mcp_server_git", "-r", str(repo)]}


def test_time_and_git_tools_reach_the_model_and_rules_apply(
        repo: Path, server: LoopbackModelServer) -> None:
    configure({"time": TIME, "git": git_server(repo)})
    server.add(call("mcp__time__get_current_time", timezone="Europe/Paris"),
               call("mcp__git__git_log", repo_path=str(repo)),
               call("mcp__git__git_status", repo_path=str(repo)),
               Reply(text="done"))
    done = aimon(server, repo, "--allowed-tools", "mcp__time,mcp__git__git_status")
    assert done.returncode == 0, done.stderr
    names = tool_names(server)
    assert {"mcp__time__get_current_time", "mcp__git__git_status", "mcp__git__git_log"} <= names
    time_result, log_result, status_result = results(server)
    assert '"timezone": "Europe/Paris"' in time_result
    # A rule for one tool of a server allows no other: print mode has nobody to ask, refused.
    assert "init" not in log_result
    assert "no rule allows mcp__git__git_log" in log_result
    assert "untracked.txt" in status_result


def test_pre_tool_use_hooks_match_mcp_tools(repo: Path, server: LoopbackModelServer) -> None:
    hook = {"matcher": "mcp__time__.*",
            "hooks": [{"type": "command", "command": "echo no clocks today >&2; exit 2"}]}
    configure({"time": TIME}, hooks={"PreToolUse": [hook]})
    server.add(call("mcp__time__get_current_time", timezone="UTC"), Reply(text="done"))
    done = aimon(server, repo, "--allowed-tools", "mcp__time")
    assert done.returncode == 0, done.stderr
    assert "no clocks today" in results(server)[-1]


def test_a_server_that_crashes_mid_session_is_restarted(
        repo: Path, server: LoopbackModelServer, tmp_path: Path) -> None:
    state = tmp_path / "starts"
    configure({"flaky": {"command": sys.executable, "args": [FAKE, "--state", str(state)]}})
    server.add(call("mcp__flaky__crash"), call("mcp__flaky__echo", text="hi"),
               Reply(text="done"))
    done = aimon(server, repo, "--allowed-tools", "mcp__flaky")
    assert done.returncode == 0, done.stderr
    crashed, echoed = results(server)
    assert "went away" in crashed
    assert echoed == "echo: hi (start 2)"
    assert "MCP server flaky stopped" in done.stderr


def test_a_server_that_never_answers_does_not_hang_the_turn(
        repo: Path, server: LoopbackModelServer) -> None:
    configure({"silent": {"command": sys.executable, "args": [FAKE, "--silent"]},
               "slowtool": {"command": sys.executable, "args": [FAKE]}})
    server.add(call("mcp__slowtool__hang"), Reply(text="done"))
    done = aimon(server, repo, "--allowed-tools", "mcp__slowtool",
                 MCP_TIMEOUT="8000", MCP_TOOL_TIMEOUT="1500")
    assert done.returncode == 0, done.stderr
    assert "mcp__silent__echo" not in tool_names(server)
    assert "did not answer within 1.5 s" in results(server)[-1]


@pytest.mark.skipif(not (NPM_BIN / "mcp-server-everything").exists(),
                    reason=f"npm MCP servers not installed in {NPM_BIN} (.ci/run installs them "
                           "when npm is available)")
def test_npm_everything_and_filesystem_servers(repo: Path, server: LoopbackModelServer) -> None:
    configure({"everything": {"command": str(NPM_BIN / "mcp-server-everything"),
                              "args": ["stdio"]},
               "fs": {"command": str(NPM_BIN / "mcp-server-filesystem"), "args": [str(repo)]}})
    server.add(call("mcp__everything__echo", message="hello"),
               call("mcp__everything__get-tiny-image"),
               call("ListMcpResources", server="everything"),
               call("mcp__fs__list_directory", path=str(repo)),
               Reply(text="done"))
    done = aimon(server, repo, "--allowed-tools", "mcp__everything", "--allowed-tools",
                 "mcp__fs", "--allowed-tools", "ListMcpResources")
    assert done.returncode == 0, done.stderr
    echo, image, resources, listing = results(server)
    assert echo == "Echo: hello"
    assert "demo://resource/static/document/" in resources
    # aimon offers the project as the client's root: the filesystem server serves it.
    assert "[FILE] README.md" in listing
    # OpenAI's tool messages hold text only: the image follows in a user message.
    image_parts = [part for m in server.requests[-1].body["messages"]
                   if isinstance(m.get("content"), list) for part in m["content"]
                   if part.get("type") == "image_url"]
    assert image_parts and image != ""


def test_mcp_command_and_server_prompts_in_print_mode(
        repo: Path, server: LoopbackModelServer) -> None:
    configure({"fake": {"command": sys.executable, "args": [FAKE]}})
    env = aimon_env(server)
    shown = subprocess.run([AIMON, *MODEL_ARGS, "-p", "/mcp"], cwd=repo, env=env,
                           capture_output=True, text=True, timeout=90, check=False)
    assert shown.returncode == 0, shown.stderr
    assert "fake connected stdio 5 tools, 1 prompt, resources" in " ".join(shown.stdout.split())
    server.add(Reply(text="Hello, Ada!"))
    ran = subprocess.run([AIMON, *MODEL_ARGS, "-p", "/mcp__fake__greet Ada"],
                         cwd=repo, env=env, capture_output=True, text=True, timeout=90,
                         check=False)
    assert ran.returncode == 0, ran.stderr
    assert "Hello, Ada!" in ran.stdout
    assert "Say hello to Ada." in server.requests[-1].conversation()[0][1]


def test_a_resource_mention_attaches_the_resource(repo: Path,
                                                  server: LoopbackModelServer) -> None:
    configure({"fake": {"command": sys.executable, "args": [FAKE]}})
    server.add(Reply(text="read it"))
    done = subprocess.run([AIMON, *MODEL_ARGS, "-p",
                           "summarise @fake:note://hello and @fake:note://gone"],
                          cwd=repo, env=aimon_env(server), capture_output=True, text=True,
                          timeout=90, check=False)
    assert done.returncode == 0, done.stderr
    text = server.requests[-1].conversation()[0][1]
    assert '<resource server="fake" uri="note://hello">\nthe note at note://hello' in text
    assert "the note at note://gone" in text  # the fake server serves any uri


@pytest.mark.skipif(not (NPM_BIN / "mcp-server-everything").exists(),
                    reason=f"npm MCP servers not installed in {NPM_BIN}")
@pytest.mark.parametrize(("mode", "transport", "path"),
                         [("streamableHttp", "http", "/mcp"), ("sse", "sse", "/sse")])
def test_http_and_sse_servers_with_headers(repo: Path, server: LoopbackModelServer, mode: str,
                                           transport: str, path: str) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    everything = subprocess.Popen(
        [str(NPM_BIN / "mcp-server-everything"), mode],
        env={**os.environ, "PORT": str(port)}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        assert everything.stdout is not None
        for line in everything.stdout:  # wait for the server to name its port
            if f"port {port}" in line:
                break
        configure({"ev": {"type": transport, "url": f"http://127.0.0.1:{port}{path}",
                          "headers": {"X-Token": "${EV_TOKEN}"}}})
        server.add(call("mcp__ev__echo", message=f"over {transport}"), Reply(text="done"))
        done = aimon(server, repo, "--allowed-tools", "mcp__ev", EV_TOKEN="t")
        assert done.returncode == 0, done.stderr
        assert results(server) == [f"Echo: over {transport}"]
    finally:
        everything.terminate()
        everything.communicate(timeout=10)
