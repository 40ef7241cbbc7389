"""End to end: the `aimon` command, the real SDKs, a loopback model server, a real repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from aimon_core.testing import (
    CutStream,
    Fault,
    LoopbackModelServer,
    RecordedRequest,
    Reply,
    ScriptedToolCall,
    Step,
)

AIMON = str(Path(sys.executable).with_name("aimon"))
PROVIDERS = ("anthropic", "openai")

BUGGY = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\nassert add(2, 3) == 5, add(2, 3)\nprint('calc ok')\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "calc.py").write_text(BUGGY)
    (project / "test_calc.py").write_text(TEST)
    return project


@pytest.fixture
def server() -> Iterator[LoopbackModelServer]:
    with LoopbackModelServer() as srv:
        yield srv


def run_aimon(provider: str, server: LoopbackModelServer, cwd: Path, *args: str,
              stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "OPENAI_", "AIMON_PROVIDER", "AIMON_MODEL"))}
    if provider == "anthropic":
        env.update(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=server.base_url)
        model = "claude-sonnet-5-5"
    else:
        env.update(OPENAI_API_KEY="test-key", OPENAI_BASE_URL=server.openai_base_url)
        model = "gpt-5.4"
    return subprocess.run(
        [AIMON, "--provider", provider, "--model", model, *args],
        cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=timeout,
        check=False,
    )


def fix_script(repo: Path) -> list[Step]:
    calc = str(repo / "calc.py")
    return [
        Reply(text="Let me look.", tool_calls=(
            ScriptedToolCall(name="Read", input={"file_path": calc}),)),
        Reply(tool_calls=(ScriptedToolCall(name="Edit", input={
            "file_path": calc, "old_string": "return a - b", "new_string": "return a + b"}),)),
        Reply(tool_calls=(ScriptedToolCall(name="Bash", input={
            "command": "python3 test_calc.py", "description": "Run the test"}),)),
        Reply(text="Fixed `calc.py`: `add` subtracted instead of adding. The test passes."),
    ]


def tool_exchanges(requests: Sequence[RecordedRequest]) -> list[tuple[str, str]]:
    """Return (tool name, result text) pairs as the final request shows them."""
    body = requests[-1].body
    pairs: list[tuple[str, str]] = []
    if requests[-1].provider == "anthropic":
        names: dict[str, str] = {}
        for message in body["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block["type"] == "tool_use":
                    names[block["id"]] = block["name"]
                elif block["type"] == "tool_result":
                    content = block["content"]
                    text = content if isinstance(content, str) else "".join(
                        c.get("text", "") for c in content)
                    pairs.append((names[block["tool_use_id"]], text))
    else:
        names = {}
        for message in body["messages"]:
            for call in message.get("tool_calls") or []:
                names[call["id"]] = call["function"]["name"]
            if message["role"] == "tool":
                pairs.append((names[message["tool_call_id"]], str(message["content"])))
    return pairs


def assert_every_tool_use_answered(requests: Sequence[RecordedRequest]) -> None:
    for request in requests:
        messages = request.body["messages"]
        for i, message in enumerate(messages):
            if request.provider == "anthropic":
                content = message["content"] if isinstance(message["content"], list) else []
                uses = [b["id"] for b in content if b["type"] == "tool_use"]
                if uses:
                    answers = [b["tool_use_id"] for b in messages[i + 1]["content"]
                               if b["type"] == "tool_result"]
                    assert answers == uses
            else:
                uses = [c["id"] for c in message.get("tool_calls") or []]
                following = [m.get("tool_call_id") for m in messages[i + 1: i + 1 + len(uses)]]
                assert following == uses


def assert_tool_schemas_valid(request: RecordedRequest) -> None:
    import jsonschema

    tools = request.body["tools"]
    assert {"Read", "Write", "Edit", "Glob", "Grep", "Bash", "TodoWrite"} <= {
        t["name"] if "name" in t else t["function"]["name"] for t in tools}
    for tool in tools:
        schema: dict[str, Any] = tool.get("input_schema") or tool["function"]["parameters"]
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object" and schema["additionalProperties"] is False


@pytest.mark.parametrize("provider", PROVIDERS)
def test_fixes_a_bug_end_to_end(provider: str, repo: Path, server: LoopbackModelServer) -> None:
    server.add(*fix_script(repo))
    done = run_aimon(provider, server, repo, "-p",
                     "the tests in test_calc.py fail, fix calc.py",
                     "--allowed-tools", "Edit,Bash(python3 test_calc.py)")
    assert done.returncode == 0, done.stderr
    assert "Fixed `calc.py`" in done.stdout
    assert (repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    assert server.remaining == 0 and len(server.requests) == 4
    assert all(r.provider == provider for r in server.requests)
    assert_every_tool_use_answered(server.requests)
    assert_tool_schemas_valid(server.requests[0])
    exchanges = tool_exchanges(server.requests)
    assert [name for name, _ in exchanges] == ["Read", "Edit", "Bash"]
    assert "return a - b" in exchanges[0][1]
    assert "calc ok" in exchanges[2][1]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_edit_without_permission_is_refused_and_explained(
    provider: str, repo: Path, server: LoopbackModelServer
) -> None:
    server.add(*fix_script(repo)[:2], Reply(text="I need permission to edit."))
    done = run_aimon(provider, server, repo, "-p", "fix calc.py")
    assert done.returncode == 0, done.stderr
    assert (repo / "calc.py").read_text() == BUGGY
    _, edit_result = tool_exchanges(server.requests)[1]
    assert "--allowed-tools" in edit_result and "Edit" in edit_result


@pytest.mark.parametrize("provider", PROVIDERS)
def test_json_output_and_prompt_from_stdin(provider: str, repo: Path,
                                           server: LoopbackModelServer) -> None:
    server.add(Reply(text="Four."))
    done = run_aimon(provider, server, repo, "-p", "--output-format", "json", stdin="2+2?")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["type"] == "result" and result["result"] == "Four."
    assert result["is_error"] is False and result["num_iterations"] == 1
    assert result["usage"]["output_tokens"] > 0
    first_user = server.requests[0].body["messages"][-1]
    assert "2+2?" in json.dumps(first_user)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_stream_json_emits_one_event_per_line(provider: str, repo: Path,
                                              server: LoopbackModelServer) -> None:
    server.add(Reply(tool_calls=(ScriptedToolCall(name="Glob", input={"pattern": "*.py"}),)),
               Reply(text="Two Python files."))
    done = run_aimon(provider, server, repo, "-p", "list python files",
                     "--output-format", "stream-json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "system" and types[-1] == "result"
    assert "tool_use" in types and "tool_result" in types and "text_delta" in types
    tool_result = next(e for e in events if e["type"] == "tool_result")
    assert "calc.py" in tool_result["content"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_retries_a_429_then_answers(provider: str, repo: Path,
                                    server: LoopbackModelServer) -> None:
    server.add(Fault(status=429, headers={"retry-after": "0"}), Reply(text="Recovered."))
    done = run_aimon(provider, server, repo, "-p", "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Recovered."
    assert len(server.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_auth_error_is_clear_and_not_retried(provider: str, repo: Path,
                                             server: LoopbackModelServer) -> None:
    server.add(Fault(status=401, error_type="authentication_error", message="invalid x-api-key"))
    done = run_aimon(provider, server, repo, "-p", "hi")
    assert done.returncode == 1
    assert "401" in done.stderr and "invalid x-api-key" in done.stderr
    assert len(server.requests) == 1


@pytest.mark.parametrize("graceful", [False, True])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_cut_stream_never_runs_its_tool_call(provider: str, graceful: bool, repo: Path,
                                             server: LoopbackModelServer) -> None:
    write = Reply(tool_calls=(ScriptedToolCall(name="Write", input={
        "file_path": str(repo / "new.txt"), "content": "from a cut stream"}),))
    server.add(CutStream(reply=write, after_events=5, graceful=graceful),
               Reply(text="Second try answered."))
    done = run_aimon(provider, server, repo, "-p", "write it", "--allowed-tools", "Write",
                     "--output-format", "stream-json")
    assert done.returncode == 0, done.stderr
    assert not (repo / "new.txt").exists()
    assert len(server.requests) == 2
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert not any(e["type"] == "tool_use" for e in events)
    assert any(e["type"] == "retry" for e in events)
    assert events[-1]["result"] == "Second try answered."


def test_no_model_configured_says_how_to_configure(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    env["AIMON_NO_LOCAL_PROBE"] = "1"
    done = subprocess.run([AIMON, "-p", "hi"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=30, check=False)
    assert done.returncode == 2
    assert "ANTHROPIC_API_KEY" in done.stderr and "OPENAI_API_KEY" in done.stderr


def test_version_is_fast_and_light() -> None:
    done = subprocess.run([AIMON, "--version"], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"})
    assert done.stdout.startswith("aimon ")
    imported = done.stderr
    for heavy in ("anthropic", "openai", "typer", "rich", "httpx"):
        assert f" {heavy}\n" not in imported and f" {heavy}." not in imported


def test_slash_commands_run_in_print_mode_without_a_model_call(
        repo: Path, server: LoopbackModelServer) -> None:
    shown = run_aimon("openai", server, repo, "-p", "/help")
    assert shown.returncode == 0, shown.stderr
    assert "/budget" in shown.stdout and "/status" in shown.stdout
    budget = run_aimon("openai", server, repo, "-p", "/budget", "--output-format", "json")
    assert budget.returncode == 0, budget.stderr
    assert json.loads(budget.stdout)["stop_reason"] == "command"
    unknown = run_aimon("openai", server, repo, "-p", "/revew")
    assert unknown.returncode == 2 and "aimon: Unknown command /revew" in unknown.stderr
    assert server.requests == []
