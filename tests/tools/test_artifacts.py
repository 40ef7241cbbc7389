"""Artifacts: the files an execution's artifact-aware calls created or changed."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from aimon_core.agent import ExecutionRequest, OrcaExecutor, Turn, allow_all
from aimon_core.llm import Message, TextBlock, ToolResultBlock, ToolUseBlock, reply, script
from aimon_core.tools import (
    PathSubject,
    Tool,
    ToolRegistry,
    ToolResult,
    builtin_tools,
    collect_artifacts,
)
from tests.agent.test_executor import ENV, make_runtime
from tests.command.test_model import session

TOOLS = ToolRegistry(builtin_tools())


async def _noop(_input: Any, _ctx: Any) -> ToolResult:
    return ToolResult.ok("ok")


def _call(use_id: str, name: str, given: dict[str, Any], *, error: bool = False
          ) -> tuple[Message, Message]:
    return (Message(role="assistant", content=(ToolUseBlock(id=use_id, name=name, input=given),)),
            Message(role="user", content=(ToolResultBlock(
                tool_use_id=use_id, content=(TextBlock(text="done"),), is_error=error),)))


@pytest.mark.parametrize(("calls", "expected"), [
    ([("1", "Write", {"file_path": "a.txt"}, False)], [("a.txt", "1", "Write")]),
    ([("1", "Write", {"file_path": "a.txt"}, True)], []),                 # refused or failed
    ([("1", "Read", {"file_path": "a.txt"}, False)], []),                 # reads make nothing
    ([("1", "Bash", {"command": "touch b.txt"}, False)], []),             # not artifact-aware
    ([("1", "Write", {"file_path": "a.txt"}, False),
      ("2", "Edit", {"file_path": "b.txt"}, False),
      ("3", "Edit", {"file_path": "a.txt"}, False)], [("b.txt", "2", "Edit"),
                                                      ("a.txt", "3", "Edit")]),
    ([("1", "Write", {"file_path": "gone.txt"}, False)], []),             # deleted since
    ([("1", "Export", {"target": "a.txt"}, False)], [("a.txt", "1", "Export")]),  # own tool
])
def test_collected_from_the_messages(tmp_path: Path, calls: list[tuple[str, str, dict[str, Any],
                                                                     bool]],
                                     expected: list[tuple[str, str, str]]) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    tools = ToolRegistry([*builtin_tools(), Tool(
        name="Export", description="export", input_schema={"type": "object"}, run=_noop,
        subject=PathSubject(param="target", writes=True))])
    messages = [m for use_id, name, given, error in calls
                for m in _call(use_id, name, given, error=error)]
    found = collect_artifacts(messages, tools, tmp_path)
    assert [(a.path.name, a.tool_use_id, a.tool_name) for a in found] == expected
    for artifact in found:
        data = artifact.path.read_bytes()
        assert artifact.size == len(data)
        assert artifact.sha256 == hashlib.sha256(data).hexdigest()


def test_an_execution_without_a_session_has_its_artifacts_too(ctx: Any) -> None:
    context = ctx
    target = str(context.project_root / "made.py")
    client = script(reply("", ("Write", {"file_path": target, "content": "x = 1\n"})),
                    reply("wrote it"))
    runtime = make_runtime(client, *builtin_tools(), gate=allow_all)

    async def main() -> Any:
        return await OrcaExecutor().execute(runtime, ExecutionRequest(
            prompt=Message.user("go"), tool_context=context, environment=ENV, turn=Turn()))

    result = asyncio.run(main())
    [made] = collect_artifacts(result.new_messages, runtime.tools, context.cwd)
    assert made.to_json(context.project_root) == {
        "path": "made.py", "size": 6, "sha256": hashlib.sha256(b"x = 1\n").hexdigest(),
        "tool_use_id": made.tool_use_id, "tool": "Write"}


def test_the_artifacts_command_lists_the_sessions_files(tmp_path: Path) -> None:
    async def main() -> tuple[str, str]:
        client = script(reply("", ("Write", {"file_path": str(tmp_path / "out.txt"),
                                             "content": "hello\n"})), reply("done"))
        client.provider = "anthropic"  # type: ignore[misc]
        async with session(tmp_path, client, "claude-sonnet-4-5",
                           tools=tuple(builtin_tools())) as live:
            before = (await live.submit("/artifacts")).text
            live.runtime = dataclasses.replace(live.runtime, gate=allow_all)
            await live.submit("write it")
            return before, (await live.submit("/artifacts")).text

    before, after = asyncio.run(main())
    assert before == "No files created or changed by this session's tools."
    digest = hashlib.sha256(b"hello\n").hexdigest()[:12]
    assert "out.txt  6 bytes  sha256 " + digest in after and "(Write " in after


def test_json_output_names_the_turns_artifacts(tmp_path: Path) -> None:
    import subprocess

    from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall
    from tests.e2e.conftest import AIMON, MODEL_ARGS, PROVIDER, aimon_env

    with LoopbackModelServer(provider=PROVIDER) as server:
        server.add(Reply(tool_calls=(ScriptedToolCall(
            name="Write", input={"file_path": "notes.md", "content": "# notes\n"}),)),
                   Reply(text="Wrote notes.md."))
        done = subprocess.run([AIMON, *MODEL_ARGS, "-p", "write notes", "--output-format",
                               "json", "--allowed-tools", "Write"], capture_output=True,
                              text=True, cwd=tmp_path, env=aimon_env(server), timeout=60)
    assert done.returncode == 0, done.stderr
    [artifact] = json.loads(done.stdout)["artifacts"]
    assert artifact["path"] == "notes.md" and artifact["size"] == 8 and artifact["tool"] == "Write"
