"""A separate process for the crash tests: `python _child.py MODE BASE_DIR SESSION_ID HOLDER`.

append  take the lease, then append numbered messages forever, printing each number once the
        append returned
hold    take the lease, print "ready", then wait (until killed)
claim   claim the session through SessionStore; print "claimed" and append, or print
        "locked <holder>" and exit with status 3
write   run one turn whose model calls Write on HOLDER (a path), persisting like LiveSession
        (messages appended, tool calls marked started); once Write has written the file,
        print "written" and wait (until killed) before the result is recorded
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from pathlib import Path

from aimon_core.agent import (
    AgentRuntime,
    Environment,
    ExecutionRequest,
    OrcaExecutor,
    Turn,
    allow_all,
    parse_agent,
)
from aimon_core.filesystem import LocalFileSystem
from aimon_core.llm import Message, reply, script
from aimon_core.session import (
    FileSessionLeaseStore,
    FileSessionRecordStore,
    SessionId,
    SessionLease,
    SessionLockedError,
    SessionStore,
)
from aimon_core.shell import LocalShell
from aimon_core.tools import (
    ToolContext,
    ToolInput,
    ToolRegistry,
    ToolResult,
    ToolState,
    builtin_tools,
)


def write_turn(records: FileSessionRecordStore, lease: SessionLease, session_id: SessionId,
               target: str) -> None:
    """Run a turn that calls Write on `target`, then hang after the file is written."""
    write = next(t for t in builtin_tools() if t.name == "Write")

    async def write_then_hang(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        result = await write.run(tool_input, ctx)
        print("written", flush=True)
        await asyncio.to_thread(sys.stdin.read)
        return result

    runtime = AgentRuntime(
        agent=parse_agent("---\nname: default\n---\nCrash test agent.\n"),
        client=script(reply("", ("Write", {"file_path": target, "content": "done\n"})),
                      reply("unreachable")),
        model="scripted", gate=allow_all,
        tools=ToolRegistry([dataclasses.replace(write, run=write_then_hang)]),
    )
    project = Path(target).parent
    ctx = ToolContext(project_root=project, cwd=project, fs=LocalFileSystem(project),
                      shell=LocalShell(), state=ToolState())
    request = ExecutionRequest(
        prompt=Message.user("write it"), tool_context=ctx,
        environment=Environment(cwd=project, platform="test", date="2026-01-01"),
        turn=Turn(persist=lambda m: records.append(session_id, [m], lease=lease),
                  tool_started=lambda use, _: records.mark_tool_started(
                      session_id, [use.id], lease=lease, sync=True)),
    )
    asyncio.run(OrcaExecutor().execute(runtime, request))


def main(mode: str, base_dir: str, session_id: str, holder: str) -> int:
    records = FileSessionRecordStore(Path(base_dir))
    leases = FileSessionLeaseStore(Path(base_dir))
    if mode == "append":
        lease = leases.acquire(SessionId(session_id), holder)
        n = 0
        while True:
            # Large messages make it likely that the kill lands in the middle of a write.
            message = Message.user(f"message {n} " + "x" * (n % 7) * 20_000)
            records.append(SessionId(session_id), [message], lease=lease)
            print(n, flush=True)
            n += 1
    if mode == "write":
        lease = leases.acquire(SessionId(session_id), "writer")
        write_turn(records, lease, SessionId(session_id), holder)
        return 0
    if mode == "hold":
        leases.acquire(SessionId(session_id), holder)
        print("ready", flush=True)
        sys.stdin.read()
        return 0
    if mode == "claim":
        sessions = SessionStore(records, leases)
        record = records.load(SessionId(session_id))
        try:
            claimed = sessions.claim(
                session_id,
                project_root=record.project_root,
                agent_ref=record.agent_ref,
                holder=holder,
            )
        except SessionLockedError as exc:
            print(f"locked {exc.holder}", flush=True)
            return 3
        records.append(claimed.record.id, [Message.user("from claim")], lease=claimed.lease)
        print("claimed", flush=True)
        return 0
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
