"""Event names (ours and Claude Code's) and the stdin JSON a hook receives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aimon_core.hook import HookEvent, HookInput

CLAUDE_NAMES = {
    "PreToolUse": HookEvent.PRE_TOOL,
    "PostToolUse": HookEvent.POST_TOOL,
    "UserPromptSubmit": HookEvent.ON_START,
    "Stop": HookEvent.ON_STOP,
    "SubagentStart": HookEvent.SUBAGENT_START,
    "SubagentStop": HookEvent.SUBAGENT_STOP,
    "PreCompact": HookEvent.PRE_COMPACT,
    "PostCompact": HookEvent.POST_COMPACT,
    "PermissionRequest": HookEvent.PERMISSION_REQUEST,
    "PermissionDenied": HookEvent.PERMISSION_DENIED,
    "SessionStart": HookEvent.ON_SESSION_START,
    "SessionEnd": HookEvent.ON_SESSION_END,
    "ConfigChange": HookEvent.ON_CONFIG_RELOAD,
    "Notification": HookEvent.NOTIFICATION,
    "PostToolUseFailure": HookEvent.POST_TOOL_FAILURE,
}


def test_there_are_fifteen_events_each_with_its_claude_code_name() -> None:
    assert len(HookEvent) == 15
    assert {event.claude_name: event for event in HookEvent} == CLAUDE_NAMES


@pytest.mark.parametrize(("name", "event"), sorted(CLAUDE_NAMES.items()))
def test_claude_code_names_parse(name: str, event: HookEvent) -> None:
    assert HookEvent.from_name(name) is event


@pytest.mark.parametrize("event", list(HookEvent))
def test_our_names_parse_in_any_case(event: HookEvent) -> None:
    assert HookEvent.from_name(event.name) is event
    assert HookEvent.from_name(event.name.lower()) is event


def test_an_unknown_name_suggests_the_nearest() -> None:
    with pytest.raises(ValueError, match=r"unknown hook event 'PreToolUs'; did you mean "
                                         r"'PreToolUse'\?"):
        HookEvent.from_name("PreToolUs")
    with pytest.raises(ValueError, match=r"did you mean 'ON_SESSION_START'\?"):
        HookEvent.from_name("ON_SESION_START")
    with pytest.raises(ValueError, match=r"unknown hook event 'Zzz'"):
        HookEvent.from_name("Zzz")


def test_pre_tool_json_has_claude_code_fields(tmp_path: Path) -> None:
    hook_input = HookInput(
        event=HookEvent.PRE_TOOL, session_id="s1", cwd=tmp_path,
        transcript_path="/t/s1.jsonl", permission_mode="default",
        tool_name="Bash", tool_input={"command": "ls"}, tool_use_id="toolu_1",
    )
    assert json.loads(hook_input.to_json()) == {
        "session_id": "s1",
        "transcript_path": "/t/s1.jsonl",
        "cwd": str(tmp_path),
        "hook_event_name": "PreToolUse",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": "toolu_1",
    }


def test_only_fields_that_apply_are_sent(tmp_path: Path) -> None:
    prompt = HookInput(event=HookEvent.ON_START, session_id="s", cwd=tmp_path, prompt="hi")
    assert json.loads(prompt.to_json()) == {
        "session_id": "s", "transcript_path": None, "cwd": str(tmp_path),
        "hook_event_name": "UserPromptSubmit", "prompt": "hi",
    }
    stop = json.loads(HookInput(event=HookEvent.ON_STOP, session_id="s", cwd=tmp_path,
                                stop_hook_active=True).to_json())
    assert stop["stop_hook_active"] is True
    assert stop["hook_event_name"] == "Stop"
    start = json.loads(HookInput(event=HookEvent.ON_SESSION_START, session_id="s", cwd=tmp_path,
                                 source="resume").to_json())
    assert start["source"] == "resume"
    assert "stop_hook_active" not in start


def test_post_tool_response_and_extra_fields(tmp_path: Path) -> None:
    hook_input = HookInput(
        event=HookEvent.POST_TOOL, session_id="s", cwd=tmp_path, tool_name="Write",
        tool_input={"file_path": "a.txt"}, tool_response={"success": True},
        extra={"custom": 1, "session_id": "not this"},
    )
    data = json.loads(hook_input.to_json())
    assert data["tool_response"] == {"success": True}
    assert data["custom"] == 1
    assert data["session_id"] == "s"  # extra never overrides a standard field


def test_match_subject_per_event(tmp_path: Path) -> None:
    def subject(event: HookEvent) -> str | None:
        return HookInput(event=event, session_id="s", cwd=tmp_path, tool_name="Bash",
                         source="startup", trigger="auto", agent_type="explore",
                         reason="clear").match_subject()

    assert subject(HookEvent.PRE_TOOL) == "Bash"
    assert subject(HookEvent.PERMISSION_DENIED) == "Bash"
    assert subject(HookEvent.ON_SESSION_START) == "startup"
    assert subject(HookEvent.PRE_COMPACT) == "auto"
    assert subject(HookEvent.SUBAGENT_STOP) == "explore"
    assert subject(HookEvent.ON_SESSION_END) == "clear"
    assert subject(HookEvent.ON_START) is None
    assert subject(HookEvent.ON_STOP) is None
