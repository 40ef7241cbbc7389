"""The composition root and the one event stream: approvals, hooks, commands, agent tool lists.

Runtimes are built by `aimon_core.runtime.build_runtime` exactly as the command line builds
them (settings files under AIMON_HOME and the project), with a scripted model client.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from aimon_core.agent import (
    ApprovalAnswer,
    ApprovalRequested,
    ApprovalResolved,
    ApprovalScope,
    ApprovalWithdrawn,
    StopCause,
    ToolCallFinished,
    parse_agent,
)
from aimon_core.live import CommandRan, LiveSession, LiveSessionEvent
from aimon_core.llm import ScriptedLLMClient, ToolResultBlock, reply, script
from aimon_core.runtime import AgentAssembly, RuntimeFlags, RuntimeParts, build_runtime
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore

CALC = "def add(a, b):\n    return a + b\n"


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir(exist_ok=True)
    (root / "calc.py").write_text(CALC)
    return root


def memory_store() -> SessionStore:
    return SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())


NO_FLAGS = RuntimeFlags()


def assemble(root: Path, client: ScriptedLLMClient, *, flags: RuntimeFlags = NO_FLAGS,
             agent: str | None = None) -> AgentAssembly:
    definition = parse_agent(agent) if agent is not None else None
    return build_runtime(root, flags=flags,
                         parts=RuntimeParts(client=client, agent_definition=definition))


def edit_steps(root: Path) -> list[object]:
    calc = str(root / "calc.py")
    return [reply("", ("Read", {"file_path": calc})),
            reply("", ("Edit", {"file_path": calc, "old_string": "a + b",
                                "new_string": "a - b"}))]


def results(client: ScriptedLLMClient) -> list[str]:
    """The tool result texts of the last request, in order."""
    return [block.text for message in client.requests[-1].messages
            for block in message.content if isinstance(block, ToolResultBlock)]


def test_a_plain_subscriber_answers_an_approval_through_the_live_session(
        tmp_path: Path) -> None:
    root = project(tmp_path)
    client = script(*edit_steps(root), reply("edited"))
    seen: list[LiveSessionEvent] = []

    async def main() -> None:
        live = await assemble(root, client).open_session(memory_store())

        def subscriber(event: LiveSessionEvent) -> None:
            seen.append(event)
            if isinstance(event, ApprovalRequested):
                assert live.pending_approvals() == (event.request,)
                assert live.answer(event.request.id,
                                   ApprovalAnswer(allowed=True, scope=ApprovalScope.TURN))

        live.subscribe(subscriber, answers=True)
        result = await live.submit("make it subtract")
        await live.close()
        assert result.stop is StopCause.ANSWERED and result.text == "edited"

    asyncio.run(main())
    assert (root / "calc.py").read_text() == CALC.replace("+", "-")
    kinds = [type(e) for e in seen if isinstance(e, ApprovalRequested | ApprovalResolved)]
    assert kinds == [ApprovalRequested, ApprovalResolved]
    requested = next(e for e in seen if isinstance(e, ApprovalRequested))
    assert requested.request.tool_name == "Edit" and requested.request.tool_use_id
    assert "in " + str(root) in requested.request.agent_scope


def test_with_no_one_answering_a_call_that_needs_approval_is_refused(tmp_path: Path) -> None:
    root = project(tmp_path)
    client = script(*edit_steps(root), reply("could not"))

    async def main() -> None:
        live = await assemble(root, client).open_session(memory_store())
        events: list[LiveSessionEvent] = []
        live.subscribe(events.append)  # listens, but does not answer
        await live.submit("make it subtract")
        await live.close()
        assert not any(isinstance(e, ApprovalRequested) for e in events)

    asyncio.run(main())
    assert (root / "calc.py").read_text() == CALC
    assert "--allowed-tools" in results(client)[-1]


def test_an_interrupted_turn_withdraws_its_question(tmp_path: Path) -> None:
    root = project(tmp_path)
    client = script(*edit_steps(root))

    async def main() -> list[LiveSessionEvent]:
        live = await assemble(root, client).open_session(memory_store())
        events: list[LiveSessionEvent] = []
        asked = asyncio.Event()

        def subscriber(event: LiveSessionEvent) -> None:
            events.append(event)
            if isinstance(event, ApprovalRequested):
                asked.set()

        live.subscribe(subscriber, answers=True)
        turn = live.submit_async("edit")
        await asked.wait()
        assert live.interrupt()
        with pytest.raises(asyncio.CancelledError):
            await turn
        assert live.pending_approvals() == ()
        await live.close()
        return events

    events = asyncio.run(main())
    requested = next(e for e in events if isinstance(e, ApprovalRequested))
    withdrawn = [e for e in events if isinstance(e, ApprovalWithdrawn)]
    assert [w.request_id for w in withdrawn] == [requested.request.id]


def _hook_settings(tmp_path: Path, log: Path) -> None:
    script_path = tmp_path / "log_hook.py"
    script_path.write_text("import json, sys\nevent = json.load(sys.stdin)\n"
                           f"with open({str(log)!r}, 'a') as f:\n"
                           "    f.write(json.dumps(event) + '\\n')\n")
    command = {"type": "command", "command": f"{sys.executable} {script_path}"}
    events = ("UserPromptSubmit", "PreToolUse", "PostToolUse", "PermissionRequest",
              "PermissionDenied", "Stop", "SessionStart", "SessionEnd")
    hooks = {event: [{"matcher": "*", "hooks": [command]}] if "Tool" in event
             or event.startswith("Permission") else [{"hooks": [command]}]
             for event in events}
    settings = Path(os.environ["AIMON_HOME"]) / "config" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"hooks": hooks}))


def test_every_hook_event_carries_the_permission_mode(tmp_path: Path) -> None:
    root = project(tmp_path)
    log = tmp_path / "hooks.jsonl"
    _hook_settings(tmp_path, log)
    calc = str(root / "calc.py")
    client = script(reply("", ("Read", {"file_path": calc})),
                    reply("", ("Bash", {"command": "touch x"})), reply("done"))

    async def main() -> None:
        assembly = assemble(root, client, flags=RuntimeFlags(permission_mode="acceptEdits"))
        live = await assembly.open_session(memory_store())
        await live.submit("go")
        await live.close()

    asyncio.run(main())
    fired = [json.loads(line) for line in log.read_text().splitlines()]
    names = {event["hook_event_name"] for event in fired}
    assert names == {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
                     "PermissionRequest", "PermissionDenied", "Stop", "SessionEnd"}
    assert {event["permission_mode"] for event in fired} == {"acceptEdits"}
    assert all(event["session_id"] and event["cwd"] for event in fired)


SEEDS_AGENT = """---
name: seed-reviewer
description: Reviews code.
allowed-tools: Read, Grep, Glob, Bash
---
You review code.
"""

GIT_ONLY_AGENT = """---
name: git-reader
description: Reads git history.
tools: Read, Bash(git:*)
---
You read git history.
"""


def test_an_agent_tool_list_as_the_seeds_write_it_gives_exactly_those_tools(
        tmp_path: Path) -> None:
    assembly = assemble(project(tmp_path), script(), agent=SEEDS_AGENT)
    assert assembly.runtime.tools.names() == ("Read", "Glob", "Grep", "Bash")


def test_a_pattern_in_an_agent_tool_list_restricts_the_tool(tmp_path: Path) -> None:
    root = project(tmp_path)
    client = script(reply("", ("Bash", {"command": "ls"})),
                    reply("", ("Bash", {"command": "git --version"})), reply("done"))

    async def main() -> list[ToolCallFinished]:
        assembly = assemble(root, client, agent=GIT_ONLY_AGENT,
                            flags=RuntimeFlags(allowed=("Bash",)))
        assert assembly.runtime.tools.names() == ("Read", "Bash")
        live = await assembly.open_session(memory_store())
        finished: list[ToolCallFinished] = []
        live.subscribe(lambda e: finished.append(e) if isinstance(e, ToolCallFinished)
                       else None)
        await live.submit("look")
        await live.close()
        return finished

    ls, git = asyncio.run(main())
    assert ls.result.is_error and "only as Bash(git:*)" in ls.result.text
    assert not git.result.is_error and "git version" in git.result.text


def test_slash_commands_run_in_the_session_before_any_model_call(tmp_path: Path) -> None:
    client = script(reply("hello"))

    async def main() -> None:
        live = await assemble(project(tmp_path), client).open_session(memory_store())
        events: list[LiveSessionEvent] = []
        live.subscribe(events.append)
        budget = await live.submit("/budget")
        assert budget.stop is StopCause.COMMAND and "iterations" in budget.text
        unknown = await live.submit("/nope")
        assert unknown.stop is StopCause.COMMAND_FAILED and "Unknown command" in unknown.text
        clear = await live.submit("/clear")
        assert clear.stop is StopCause.COMMAND_FAILED and "interactive" in clear.text
        assert client.requests == []
        path = await live.submit("/usr/bin/env is broken, why?")  # a path is a prompt
        assert path.text == "hello"
        assert [type(e) for e in events if isinstance(e, CommandRan)] == [CommandRan] * 3
        await live.close()

    asyncio.run(main())


def test_live_session_is_importable_from_the_runtime_packages() -> None:
    assert LiveSession.__module__ == "aimon_core.live._live"
