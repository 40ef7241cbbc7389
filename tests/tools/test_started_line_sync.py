"""The tool-started line: written for every call, fsynced only for tools that may write.

The line exists so that after a crash a call with no result is known to have maybe run. For a
call that changes something it must be on the disk before the tool runs (fsync); a read-only
call's line is queued behind the session's writes: it changed nothing either way. `os.fsync` is
wrapped in this one test to see which lines each sync made durable.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from aimon_core.agent import AgentRuntime, Environment, allow_all, parse_agent
from aimon_core.filesystem import LocalFileSystem
from aimon_core.live import LiveSession, LiveSessionOptions
from aimon_core.llm import ToolUseBlock, reply, script
from aimon_core.session import (
    FileSessionLeaseStore,
    FileSessionRecordStore,
    SessionId,
    SessionNotFoundError,
    SessionStore,
)
from aimon_core.shell import LocalShell
from aimon_core.tools import Tool, ToolContext, ToolInput, ToolRegistry, ToolResult
from aimon_core.tools._state import ToolState

AGENT = parse_agent("---\nname: tester\nmaxIterations: 9\n---\nTest agent.\n")
ENV = Environment(cwd=Path("/p"), platform="test", date="2026-01-01")
EMPTY = {"type": "object", "properties": {}, "additionalProperties": False}


def _started_ids(data: bytes) -> list[str]:
    """Return the ids of every tool_started line in a session file's bytes.

    A line still being written (no newline yet: the session's writer thread appends while a
    read-only tool runs) is not counted.
    """
    ids: list[str] = []
    for line in data[:data.rfind(b"\n") + 1].splitlines():
        obj = json.loads(line)
        if obj.get("type") == "tool_started":
            ids += obj["ids"]
    return ids


def test_read_only_calls_are_written_but_not_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = tmp_path / "data"
    records = FileSessionRecordStore(base)
    synced: list[list[str]] = []  # at each fsync of the session file: its started ids
    seen_at_run: dict[str, list[str]] = {}  # per tool: started ids in the file as it runs
    session: list[SessionId] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        real_fsync(fd)
        if session and Path(f"/proc/self/fd/{fd}").readlink().name == f"{session[0]}.jsonl":
            synced.append(_started_ids(os.pread(fd, 1 << 20, 0)))

    def tool(name: str, *, read_only: bool) -> Tool:
        async def run(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
            try:  # a read-only call may run before the session's first line is written
                data = records.path_of(session[0]).read_bytes()
            except SessionNotFoundError:
                data = b""
            seen_at_run[name] = _started_ids(data)
            return ToolResult.ok("fine")

        return Tool(name=name, description=name, run=run, read_only=read_only,
                    input_schema=EMPTY)

    client = script(reply("", ("Look", {})), reply("", ("Change", {})), reply("done"))
    runtime = AgentRuntime(agent=AGENT, client=client, model="scripted", gate=allow_all,
                           tools=ToolRegistry((tool("Look", read_only=True),
                                               tool("Change", read_only=False))))
    project = tmp_path / "proj"
    project.mkdir()
    ctx = ToolContext(project_root=project, cwd=project, fs=LocalFileSystem(project),
                      shell=LocalShell(), state=ToolState())

    async def main() -> None:
        store = SessionStore(records, FileSessionLeaseStore(base))
        live = await LiveSession.open(runtime, store, ctx,
                                      options=LiveSessionOptions(environment=ENV))
        session.append(live.id)
        monkeypatch.setattr(os, "fsync", fsync)
        try:
            assert (await live.submit("go")).text == "done"
        finally:
            monkeypatch.setattr(os, "fsync", real_fsync)
            await live.close()

    asyncio.run(main())
    uses = {block.name: block.id for message in records.load(session[0]).transcript
            for block in message.content if isinstance(block, ToolUseBlock)}
    look, change = uses["Look"], uses["Change"]
    # The line of a call that may change something is in the file, synced, before the tool
    # runs; a read-only call's line is queued in order (it may land while the tool runs:
    # whether it ran or not, it changed nothing) and is never synced on its own (it reached
    # the disk with the Change line's sync).
    assert seen_at_run["Look"] in ([], [look])
    assert seen_at_run["Change"] == [look, change]
    assert _started_ids(records.path_of(session[0]).read_bytes()) == [look, change]
    with_look = [ids for ids in synced if look in ids]
    assert with_look, synced
    assert with_look[0] == [look, change], synced
