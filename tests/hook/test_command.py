"""Command hooks: real scripts, real subprocesses, Claude Code's exit-code and JSON protocol."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from aimon_core.hook import (
    CommandHookSpec,
    Flow,
    HookEvent,
    HookInput,
    HookRegistry,
    HookResult,
    PermissionDecision,
    parse_hooks_config,
)

from .conftest import MakeInput, MakeScript

BLOCK_RM = """
import json, shlex, sys
data = json.load(sys.stdin)
command = data["tool_input"]["command"]
if "rm" in shlex.split(command):
    print(f"Blocked: {command!r} deletes files; move them to ./trash instead.", file=sys.stderr)
    sys.exit(2)
"""


def dispatch(registry: HookRegistry, hook_input: HookInput) -> HookResult:
    return asyncio.run(registry.dispatch(hook_input.event, hook_input))


def registry_for(event: str, command: str, *, matcher: str | None = None,
                 timeout: float | None = None, **kwargs: Any) -> HookRegistry:
    entry: dict[str, Any] = {"type": "command", "command": command}
    if timeout is not None:
        entry["timeout"] = timeout
    group: dict[str, Any] = {"hooks": [entry]}
    if matcher is not None:
        group["matcher"] = matcher
    return HookRegistry(parse_hooks_config({"hooks": {event: [group]}}), **kwargs)


def bash(make_input: MakeInput, command: str) -> HookInput:
    return make_input(HookEvent.PRE_TOOL, tool_name="Bash", tool_input={"command": command},
                      tool_use_id="toolu_1")


def test_pre_tool_hook_blocks_rm_and_allows_ls(
    script: MakeScript, make_input: MakeInput
) -> None:
    registry = registry_for("PreToolUse", script("block_rm.py", BLOCK_RM, python=True),
                            matcher="Bash")
    denied = dispatch(registry, bash(make_input, "rm -rf build"))
    assert denied.permission is PermissionDecision.DENY
    assert denied.flow is Flow.BLOCK
    assert "Blocked: 'rm -rf build' deletes files" in denied.feedback
    assert denied.errors == ()

    allowed = dispatch(registry, bash(make_input, "ls -la"))
    assert allowed.permission is None
    assert allowed.flow is Flow.CONTINUE
    assert (allowed.feedback, allowed.errors) == ("", ())


def test_stdin_json_env_and_cwd(
    script: MakeScript, make_input: MakeInput, project: Path, tmp_path: Path
) -> None:
    seen = tmp_path / "seen"
    command = script("record.sh", f"""
cat > {seen}.json
pwd > {seen}.pwd
printf '%s\\n%s' "$AIMON_PROJECT_DIR" "$CLAUDE_PROJECT_DIR" > {seen}.env
""")
    hook_input = make_input(HookEvent.PRE_TOOL, tool_name="Edit", transcript_path="/t.jsonl",
                            tool_input={"file_path": "a.py", "old_string": "x"},
                            tool_use_id="toolu_9", permission_mode="default")
    result = dispatch(registry_for("PreToolUse", command), hook_input)
    assert result.errors == ()
    data = json.loads(Path(f"{seen}.json").read_text())
    assert data == {
        "session_id": "sess-1",
        "transcript_path": "/t.jsonl",
        "cwd": str(project),
        "hook_event_name": "PreToolUse",
        "permission_mode": "default",
        "tool_name": "Edit",
        "tool_input": {"file_path": "a.py", "old_string": "x"},
        "tool_use_id": "toolu_9",
    }
    assert Path(f"{seen}.pwd").read_text().strip() == str(project.resolve())
    assert Path(f"{seen}.env").read_text().splitlines() == [str(project), str(project)]


def test_json_additional_context(script: MakeScript, make_input: MakeInput) -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                     "additionalContext": "lint: 2 warnings in a.py"}}
    command = script("ctx.sh", f"cat > /dev/null\necho '{json.dumps(answer)}'\n")
    result = dispatch(registry_for("PostToolUse", command),
                      make_input(HookEvent.POST_TOOL, tool_name="Write",
                                 tool_response={"success": True}))
    assert result.additional_context.endswith("] lint: 2 warnings in a.py")
    assert result.flow is Flow.CONTINUE


def test_plain_stdout_is_context_for_prompt_submit_only(
    script: MakeScript, make_input: MakeInput
) -> None:
    command = script("plain.sh", "echo 'Current branch: main'\n")
    on_start = dispatch(registry_for("UserPromptSubmit", command),
                        make_input(HookEvent.ON_START, prompt="fix the bug"))
    assert "Current branch: main" in on_start.additional_context
    session = dispatch(registry_for("SessionStart", command),
                       make_input(HookEvent.ON_SESSION_START, source="startup"))
    assert "Current branch: main" in session.additional_context
    pre_tool = dispatch(registry_for("PreToolUse", command), bash(make_input, "ls"))
    assert pre_tool == HookResult(source=pre_tool.source)


def test_a_slow_hook_times_out_and_its_process_group_is_killed(
    script: MakeScript, make_input: MakeInput, tmp_path: Path
) -> None:
    pid_file = tmp_path / "child.pid"
    command = script("slow.sh", f"sleep 10 &\necho $! > {pid_file}\nsleep 10\n")
    registry = registry_for("PreToolUse", command, timeout=1, kill_grace=0.2)
    started = time.monotonic()
    result = dispatch(registry, bash(make_input, "ls"))
    assert time.monotonic() - started < 3
    assert len(result.errors) == 1
    assert "timed out after 1 s" in result.errors[0]
    assert result.permission is None and result.flow is Flow.CONTINUE
    assert _gone(int(pid_file.read_text()))


def _gone(pid: int) -> bool:
    """Return True once `pid` no longer runs (a zombie awaiting its reaper counts as gone)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


def test_invalid_json_is_a_non_blocking_error(script: MakeScript, make_input: MakeInput) -> None:
    command = script("bad.sh", "echo '{\"decision\": \"block\",'\n")
    result = dispatch(registry_for("PreToolUse", command), bash(make_input, "ls"))
    assert len(result.errors) == 1
    assert "printed invalid JSON" in result.errors[0]
    assert result.permission is None and result.flow is Flow.CONTINUE


def test_other_exit_codes_are_non_blocking_errors(
    script: MakeScript, make_input: MakeInput
) -> None:
    command = script("fail.sh", "echo 'config file missing' >&2\nexit 1\n")
    result = dispatch(registry_for("PreToolUse", command), bash(make_input, "rm x"))
    assert result.permission is None and result.flow is Flow.CONTINUE
    assert len(result.errors) == 1
    assert "failed with exit code 1: config file missing" in result.errors[0]


@pytest.mark.parametrize("decision", ["allow", "deny", "ask"])
def test_permission_decision_json(
    script: MakeScript, make_input: MakeInput, decision: str
) -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                     "permissionDecision": decision,
                                     "permissionDecisionReason": f"policy says {decision}"}}
    command = script("decide.sh", f"echo '{json.dumps(answer)}'\n")
    result = dispatch(registry_for("PreToolUse", command), bash(make_input, "make"))
    assert result.permission is PermissionDecision(decision)
    assert result.errors == ()
    if decision == "deny":  # the reason goes to the model
        assert "policy says deny" in result.feedback
    else:  # the reason is shown to the user
        assert f"policy says {decision}" in result.system_message
        assert result.feedback == ""


def test_updated_input_and_unknown_decision(script: MakeScript, make_input: MakeInput) -> None:
    answer = {"hookSpecificOutput": {"permissionDecision": "allow",
                                     "updatedInput": {"command": "ls -1"}}}
    command = script("rewrite.sh", f"echo '{json.dumps(answer)}'\n")
    result = dispatch(registry_for("PreToolUse", command), bash(make_input, "ls"))
    assert result.updated_input == {"command": "ls -1"}
    bogus = script("bogus.sh", """echo '{"hookSpecificOutput": {"permissionDecision": "yes"}}'""")
    result = dispatch(registry_for("PreToolUse", bogus), bash(make_input, "ls"))
    assert result.permission is None
    assert "unknown permissionDecision 'yes'" in result.errors[0]


def test_legacy_decision_block_on_pre_tool_denies(
    script: MakeScript, make_input: MakeInput
) -> None:
    command = script("legacy.sh", """echo '{"decision": "block", "reason": "not on main"}'""")
    result = dispatch(registry_for("PreToolUse", command), bash(make_input, "git push"))
    assert result.permission is PermissionDecision.DENY
    assert "not on main" in result.feedback


def test_exit_2_blocks_a_prompt(script: MakeScript, make_input: MakeInput) -> None:
    command = script("secret.sh", "echo 'the prompt contains a secret' >&2\nexit 2\n")
    result = dispatch(registry_for("UserPromptSubmit", command),
                      make_input(HookEvent.ON_START, prompt="key=sk-123"))
    assert result.blocked
    assert result.permission is None
    assert "the prompt contains a secret" in result.feedback


def test_stop_hook_keeps_the_agent_going_or_stops_it(
    script: MakeScript, make_input: MakeInput
) -> None:
    keep_going = script("tests.sh", """echo '{"decision": "block", "reason": "tests fail"}'""")
    result = dispatch(registry_for("Stop", keep_going), make_input(HookEvent.ON_STOP))
    assert result.flow is Flow.BLOCK
    assert "tests fail" in result.feedback
    halt = script("halt.sh", """echo '{"continue": false, "stopReason": "budget used up",
"decision": "block", "reason": "x"}'""")
    result = dispatch(registry_for("Stop", halt), make_input(HookEvent.ON_STOP))
    assert result.flow is Flow.STOP
    assert "budget used up" in result.stop_reason


def test_blocking_an_unblockable_event_is_reported(
    script: MakeScript, make_input: MakeInput
) -> None:
    command = script("no.sh", "echo nope >&2\nexit 2\n")
    result = dispatch(registry_for("SessionEnd", command),
                      make_input(HookEvent.ON_SESSION_END, reason="clear"))
    assert result.flow is Flow.CONTINUE
    assert "cannot be blocked: nope" in result.errors[0]


def test_permission_request_decision(script: MakeScript, make_input: MakeInput) -> None:
    allow = {"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                                    "decision": {"behavior": "allow",
                                                 "updatedInput": {"command": "npm test"}}}}
    deny = {"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "not today",
                                                "interrupt": True}}}
    request = make_input(HookEvent.PERMISSION_REQUEST, tool_name="Bash",
                         tool_input={"command": "npm t"})
    result = dispatch(registry_for("PermissionRequest",
                                   script("allow.sh", f"echo '{json.dumps(allow)}'")), request)
    assert result.permission is PermissionDecision.ALLOW
    assert result.updated_input == {"command": "npm test"}
    result = dispatch(registry_for("PermissionRequest",
                                   script("deny.sh", f"echo '{json.dumps(deny)}'")), request)
    assert result.permission is PermissionDecision.DENY
    assert result.flow is Flow.STOP
    assert "not today" in result.feedback


def test_a_hook_that_ignores_a_large_input(script: MakeScript, make_input: MakeInput) -> None:
    command = script("quiet.sh", "exit 0\n")
    big = make_input(HookEvent.POST_TOOL, tool_name="Read", tool_response="x" * 1_000_000)
    assert dispatch(registry_for("PostToolUse", command), big).errors == ()


def test_huge_output_is_capped(script: MakeScript, make_input: MakeInput) -> None:
    command = script("loud.sh", "head -c 500000 /dev/zero | tr '\\0' 'a'\n")
    result = dispatch(registry_for("UserPromptSubmit", command, output_limit=1000),
                      make_input(HookEvent.ON_START, prompt="hi"))
    assert 1000 <= len(result.additional_context) < 1100


def test_a_child_left_holding_the_pipes_is_stopped(
    script: MakeScript, make_input: MakeInput
) -> None:
    command = script("daemon.sh", "sleep 30 &\necho started\n")
    started = time.monotonic()
    result = dispatch(registry_for("Stop", command, kill_grace=0.2),
                      make_input(HookEvent.ON_STOP))
    assert time.monotonic() - started < 5
    assert result.errors == ()


def test_cancelling_dispatch_kills_the_hook(
    script: MakeScript, make_input: MakeInput, tmp_path: Path
) -> None:
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    command = script("long.sh", f"echo $$ > {fifo}\nsleep 30\n")
    registry = registry_for("Stop", command, kill_grace=0.2)

    async def scenario() -> int:
        task = asyncio.create_task(registry.dispatch(HookEvent.ON_STOP,
                                                     make_input(HookEvent.ON_STOP)))
        pid = int(await asyncio.to_thread(fifo.read_text))  # returns once the hook runs
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return pid

    assert _gone(asyncio.run(scenario()))


def test_a_missing_project_folder_is_an_error(make_input: MakeInput, tmp_path: Path) -> None:
    spec = CommandHookSpec(event=HookEvent.ON_STOP, matcher=None, command="true")
    registry = HookRegistry([spec], project_dir=tmp_path / "missing")
    result = dispatch(registry, make_input(HookEvent.ON_STOP))
    assert "could not be started" in result.errors[0]


def test_environment_is_inherited(
    script: MakeScript, make_input: MakeInput, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIMON_HOOK_TEST_VAR", "hello")
    command = script("env.sh", 'echo "var=$AIMON_HOOK_TEST_VAR"\n')
    result = dispatch(registry_for("UserPromptSubmit", command),
                      make_input(HookEvent.ON_START, prompt="p"))
    assert "var=hello" in result.additional_context
    assert os.environ["AIMON_HOOK_TEST_VAR"] == "hello"
