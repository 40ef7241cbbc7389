"""Event names (ours and Claude Code's) and the stdin JSON a hook receives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aimon_core.hook import (
    ConfigChangeInput,
    HookEvent,
    HookEventInput,
    HookInput,
    NotificationInput,
    PermissionDeniedInput,
    PostCompactInput,
    PostToolUseInput,
    PreCompactInput,
    PreToolUseInput,
    SessionEndInput,
    SessionStartInput,
    StopInput,
    SubagentStopInput,
    UserPromptSubmitInput,
)

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
        data=PreToolUseInput(tool_name="Bash", tool_input={"command": "ls"},
                             tool_use_id="toolu_1"),
        session_id="s1", cwd=tmp_path, transcript_path="/t/s1.jsonl", permission_mode="default",
    )
    assert hook_input.event is HookEvent.PRE_TOOL
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
    def sent(data: HookEventInput) -> dict[str, object]:
        loaded: dict[str, object] = json.loads(
            HookInput(data=data, session_id="s", cwd=tmp_path).to_json())
        return loaded

    assert sent(UserPromptSubmitInput(prompt="hi")) == {
        "session_id": "s", "transcript_path": None, "cwd": str(tmp_path),
        "hook_event_name": "UserPromptSubmit", "prompt": "hi",
    }
    stop = sent(StopInput(stop_hook_active=True))
    assert stop["stop_hook_active"] is True
    assert stop["hook_event_name"] == "Stop"
    assert "last_assistant_message" not in stop
    start = sent(SessionStartInput(source="resume"))
    assert start["source"] == "resume"
    assert "stop_hook_active" not in start and "model" not in start
    assert sent(PreCompactInput(trigger="auto"))["custom_instructions"] is None
    assert sent(SubagentStopInput(agent_id="e1", agent_type="x"))["stop_hook_active"] is False


def test_each_event_sends_its_own_fields(tmp_path: Path) -> None:
    def sent(data: HookEventInput) -> dict[str, object]:
        loaded: dict[str, object] = json.loads(
            HookInput(data=data, session_id="s", cwd=tmp_path).to_json())
        return loaded

    post = sent(PostToolUseInput(tool_name="Write", tool_input={"file_path": "a.txt"},
                                 tool_response={"success": True}))
    assert post["tool_response"] == {"success": True}
    compacted = sent(PostCompactInput(trigger="manual", compact_summary="the gist"))
    assert compacted["compact_summary"] == "the gist"
    changed = sent(ConfigChangeInput(source="project_settings", file_path="/p/s.json"))
    assert (changed["source"], changed["file_path"]) == ("project_settings", "/p/s.json")
    assert "file_path" not in sent(ConfigChangeInput(source="user_settings"))
    notice = sent(NotificationInput(message="waiting", notification_type="idle_prompt"))
    assert notice["title"] == "aimon"
    denied = sent(PermissionDeniedInput(tool_name="Bash", tool_input={}, reason="no"))
    assert denied["reason"] == "no"


def test_match_subject_per_event(tmp_path: Path) -> None:
    def subject(data: HookEventInput) -> str | None:
        return HookInput(data=data, session_id="s", cwd=tmp_path).match_subject()

    call = {"tool_name": "Bash", "tool_input": {"command": "ls"}}
    assert subject(PreToolUseInput(**call)) == "Bash"  # type: ignore[arg-type]
    assert subject(PermissionDeniedInput(**call, reason="x")) == "Bash"  # type: ignore[arg-type]
    assert subject(SessionStartInput(source="startup")) == "startup"
    assert subject(PreCompactInput(trigger="auto")) == "auto"
    assert subject(SubagentStopInput(agent_id="e", agent_type="explore")) == "explore"
    assert subject(SessionEndInput(reason="clear")) == "clear"
    assert subject(UserPromptSubmitInput(prompt="p")) is None
    assert subject(StopInput()) is None
    assert HookInput(data=StopInput(), session_id="s", cwd=tmp_path).tool_name is None
