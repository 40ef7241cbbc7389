"""Hooks in the loop: real command hooks block, add context, insist and stop."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from aimon_core.agent import (
    AgentEvent,
    AgentRuntime,
    Environment,
    ExecutionRequest,
    ExecutionResult,
    Notice,
    OrcaExecutor,
    StopCause,
    Turn,
    parse_agent,
)
from aimon_core.hook import CommandHookSpec, HookDispatcher, HookEvent, HookRegistry
from aimon_core.llm import Message, ScriptedLLMClient, TextBlock, ToolResultBlock, reply, script
from aimon_core.tools import Tool, ToolContext, ToolInput, ToolRegistry, ToolResult

AGENT = parse_agent("---\nname: tester\n---\nTest agent.\n")
ENV = Environment(cwd=Path("/tmp"), platform="test", date="2026-01-01")
PY = sys.executable


async def shell(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
    return ToolResult.ok("ran " + tool_input.string("command"))


SHELL = Tool(name="Bash", description="run", run=shell, read_only=True,
             input_schema={"type": "object", "properties": {"command": {"type": "string"}},
                           "required": ["command"], "additionalProperties": False})


def hook_script(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text("import json, sys\nevent = json.load(sys.stdin)\n" + body)
    return f"{PY} {path}"


def run_with(tmp_path: Path, client: ScriptedLLMClient, specs: list[CommandHookSpec],
             context: ToolContext) -> tuple[ExecutionResult, list[AgentEvent], list[Message]]:
    registry = HookRegistry(specs, project_dir=tmp_path)
    runtime = AgentRuntime(agent=AGENT, client=client, model="scripted",
                           tools=ToolRegistry([SHELL]), hooks=registry)
    events: list[AgentEvent] = []
    committed: list[Message] = []
    hooks = HookDispatcher(registry, session_id="s1", cwd=context.cwd,
                           transcript_path="/t.jsonl", permission_mode=lambda: "acceptEdits")
    request = ExecutionRequest(prompt=Message.user("please"), tool_context=context,
                               environment=ENV, turn=Turn(session_id="s1", emit=events.append,
                                                          persist=committed.append, hooks=hooks))
    return asyncio.run(OrcaExecutor().execute(runtime, request)), events, committed


def spec(event: HookEvent, command: str, matcher: str | None = None) -> CommandHookSpec:
    return CommandHookSpec(event=event, matcher=matcher, command=command, timeout=10)


def result_text(message: Message) -> str:
    block = message.content[0]
    assert isinstance(block, ToolResultBlock)
    return block.text


def test_pre_tool_hook_blocks_rm_but_not_ls(tmp_path: Path, context: ToolContext) -> None:
    body = ("cmd = event['tool_input']['command']\n"
            "if cmd.startswith('rm'):\n"
            "    print('rm is not allowed here', file=sys.stderr); sys.exit(2)\n")
    command = hook_script(tmp_path, "no_rm", body)
    client = script(reply("", ("Bash", {"command": "rm -rf build"})),
                    reply("", ("Bash", {"command": "ls"})), reply("done"))
    result, _, committed = run_with(tmp_path, client, [spec(HookEvent.PRE_TOOL, command, "Bash")],
                                    context)
    assert result.stop is StopCause.ANSWERED
    assert "rm is not allowed here" in result_text(committed[2])
    assert result_text(committed[4]) == "ran ls"


def test_prompt_hook_context_and_post_tool_feedback(tmp_path: Path,
                                                    context: ToolContext) -> None:
    log = tmp_path / "seen.json"
    on_prompt = hook_script(tmp_path, "ctx", f"open({str(log)!r}, 'w').write(json.dumps(event))\n"
                            "print('The build uses make.')\n")
    post = hook_script(tmp_path, "post", "print(json.dumps({'hookSpecificOutput': "
                       "{'hookEventName': 'PostToolUse', "
                       "'additionalContext': 'lint is clean'}}))\n")
    client = script(reply("", ("Bash", {"command": "ls"})), reply("done"))
    result, _, committed = run_with(tmp_path, client, [
        spec(HookEvent.ON_START, on_prompt), spec(HookEvent.POST_TOOL, post, "Bash")], context)
    assert result.stop is StopCause.ANSWERED
    first = client.requests[0].messages[-1]
    assert "<system-reminder>" in first.text and "The build uses make." in first.text
    seen = json.loads(log.read_text())
    assert seen["hook_event_name"] == "UserPromptSubmit" and seen["prompt"] == "please"
    assert seen["session_id"] == "s1" and seen["transcript_path"] == "/t.jsonl"
    assert seen["permission_mode"] == "acceptEdits"
    assert "lint is clean" in result_text(committed[2])


def test_blocked_prompt_never_reaches_the_model(tmp_path: Path, context: ToolContext) -> None:
    command = hook_script(tmp_path, "block", "print('no secrets', file=sys.stderr); sys.exit(2)\n")
    client = script()
    result, _, committed = run_with(tmp_path, client, [spec(HookEvent.ON_START, command)],
                                    context)
    assert result.stop is StopCause.PROMPT_BLOCKED and "no secrets" in result.reason
    assert committed == [] and client.requests == []


def test_stop_hook_makes_the_agent_continue_once(tmp_path: Path, context: ToolContext) -> None:
    body = ("if not event['stop_hook_active']:\n"
            "    print('Run the tests before you finish.', file=sys.stderr); sys.exit(2)\n")
    command = hook_script(tmp_path, "stop", body)
    client = script(reply("I am done."), reply("Tests pass; now done."))
    result, _, _ = run_with(tmp_path, client, [spec(HookEvent.ON_STOP, command)], context)
    assert result.text == "Tests pass; now done." and result.iterations == 2
    nudge = client.requests[1].messages[-1]
    assert isinstance(nudge.content[0], TextBlock)
    assert "Run the tests before you finish." in nudge.text


def test_continue_false_stops_the_turn_with_valid_transcript(
    tmp_path: Path, context: ToolContext
) -> None:
    command = hook_script(tmp_path, "halt", "print(json.dumps({'continue': False, "
                          "'stopReason': 'quota of edits reached'}))\n")
    client = script(reply("", ("Bash", {"command": "ls"}), ("Bash", {"command": "pwd"})))
    result, _, committed = run_with(
        tmp_path, client, [spec(HookEvent.PRE_TOOL, command, "Bash")], context)
    assert result.stop is StopCause.HOOK_STOPPED and "quota of edits" in result.reason
    results = [b for b in committed[-1].content if isinstance(b, ToolResultBlock)]
    assert len(results) == 2 and all(b.is_error for b in results)


def test_hook_errors_are_shown_not_fatal(tmp_path: Path, context: ToolContext) -> None:
    broken = hook_script(tmp_path, "broken", "print('{not json')\n")
    failing = hook_script(tmp_path, "fail", "sys.exit(1)\n")
    client = script(reply("", ("Bash", {"command": "ls"})), reply("done"))
    result, events, _ = run_with(tmp_path, client, [
        spec(HookEvent.PRE_TOOL, broken, "Bash"), spec(HookEvent.PRE_TOOL, failing, "*")],
        context)
    assert result.stop is StopCause.ANSWERED
    notes = [e.text for e in events if isinstance(e, Notice)]
    assert any("invalid JSON" in n for n in notes) and len(notes) >= 2


