"""The input a hook receives: each event's own typed input (Claude Code's stdin JSON) and
the facts every event carries."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from aimon_core.hook._lifecycle import HookEvent

# ---------------------------------------------------------------- each event's own input
# One frozen type per event, as Claude Code's hook protocol describes it; the dispatcher adds
# the facts every event carries (session, cwd, transcript, mode) to make a `HookInput`.


@dataclass(frozen=True, slots=True, kw_only=True)
class PreToolUseInput:
    """A tool call is about to be checked and run."""

    event: ClassVar[HookEvent] = HookEvent.PRE_TOOL
    tool_name: str
    tool_input: Mapping[str, Any]
    tool_use_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PostToolUseInput:
    """A tool call ran and succeeded; `tool_response` is its structured form or its text."""

    event: ClassVar[HookEvent] = HookEvent.POST_TOOL
    tool_name: str
    tool_input: Mapping[str, Any]
    tool_response: Mapping[str, Any] | str
    tool_use_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PostToolUseFailureInput:
    """A tool call ran and failed; `is_interrupt`: because the user interrupted it."""

    event: ClassVar[HookEvent] = HookEvent.POST_TOOL_FAILURE
    tool_name: str
    tool_input: Mapping[str, Any]
    error: str
    is_interrupt: bool = False
    tool_use_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionRequestInput:
    """A tool call needs the user's approval; a hook may answer for the user."""

    event: ClassVar[HookEvent] = HookEvent.PERMISSION_REQUEST
    tool_name: str
    tool_input: Mapping[str, Any]
    tool_use_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionDeniedInput:
    """A tool call was refused; `reason` says why."""

    event: ClassVar[HookEvent] = HookEvent.PERMISSION_DENIED
    tool_name: str
    tool_input: Mapping[str, Any]
    reason: str
    tool_use_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UserPromptSubmitInput:
    """A turn starts: the user's prompt was submitted."""

    event: ClassVar[HookEvent] = HookEvent.ON_START
    prompt: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StopInput:
    """The agent finished answering a turn.

    `stop_hook_active`: the agent is already going on because a Stop hook blocked; a script
    checks it to avoid keeping the agent going forever.
    """

    event: ClassVar[HookEvent] = HookEvent.ON_STOP
    stop_hook_active: bool = False
    last_assistant_message: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentStartInput:
    """A subagent (a fork) starts; `agent_id` is its execution id."""

    event: ClassVar[HookEvent] = HookEvent.SUBAGENT_START
    agent_id: str
    agent_type: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentStopInput:
    """A subagent (a fork) finished."""

    event: ClassVar[HookEvent] = HookEvent.SUBAGENT_STOP
    agent_id: str
    agent_type: str
    last_assistant_message: str | None = None
    stop_hook_active: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class PreCompactInput:
    """The transcript is about to be compacted ("manual" or "auto")."""

    event: ClassVar[HookEvent] = HookEvent.PRE_COMPACT
    trigger: str
    custom_instructions: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PostCompactInput:
    """The transcript was compacted; `compact_summary` is what replaced it."""

    event: ClassVar[HookEvent] = HookEvent.POST_COMPACT
    trigger: str
    custom_instructions: str | None = None
    compact_summary: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStartInput:
    """A session opened: "startup", "resume", "clear" or "compact"."""

    event: ClassVar[HookEvent] = HookEvent.ON_SESSION_START
    source: str
    model: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionEndInput:
    """A session closed: "clear", "logout", "prompt_input_exit" or "other"."""

    event: ClassVar[HookEvent] = HookEvent.ON_SESSION_END
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigChangeInput:
    """A settings file changed (`source`: "user_settings", "project_settings", ...)."""

    event: ClassVar[HookEvent] = HookEvent.ON_CONFIG_RELOAD
    source: str
    file_path: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NotificationInput:
    """The agent waits for the user ("permission_prompt") or is idle ("idle_prompt")."""

    event: ClassVar[HookEvent] = HookEvent.NOTIFICATION
    message: str
    notification_type: str
    title: str = "aimon"


HookEventInput = (
    PreToolUseInput | PostToolUseInput | PostToolUseFailureInput | PermissionRequestInput
    | PermissionDeniedInput | UserPromptSubmitInput | StopInput | SubagentStartInput
    | SubagentStopInput | PreCompactInput | PostCompactInput | SessionStartInput
    | SessionEndInput | ConfigChangeInput | NotificationInput
)
"""What one event tells its hooks, besides the facts every event carries."""

ToolEventInput = (PreToolUseInput | PostToolUseInput | PostToolUseFailureInput
                  | PermissionRequestInput | PermissionDeniedInput)


@dataclass(frozen=True, slots=True, kw_only=True)
class HookInput:
    """What a hook receives: where the event happens, and the event's own input (`data`).

    Args:
        permission_mode: the session's permission mode ("default", "acceptEdits", "plan", ...).
        data: the event's typed input (`PreToolUseInput`, `StopInput`, ...).
    """

    session_id: str
    cwd: Path
    data: HookEventInput
    transcript_path: str | None = None
    permission_mode: str | None = None

    @property
    def event(self) -> HookEvent:
        """Return the event this input is for."""
        return self.data.event

    @property
    def tool_name(self) -> str | None:
        """Return the tool a tool event is about (None for other events)."""
        return self.data.tool_name if isinstance(self.data, ToolEventInput) else None

    @property
    def tool_input(self) -> Mapping[str, Any] | None:
        """Return the input of the call a tool event is about (None for other events)."""
        return self.data.tool_input if isinstance(self.data, ToolEventInput) else None

    def match_subject(self) -> str | None:
        """Return the text a settings matcher is tested against, or None if matchers do not
        apply to this event (every hook of the event then runs)."""
        match self.data:
            case (PreToolUseInput() | PostToolUseInput() | PostToolUseFailureInput()
                  | PermissionRequestInput() | PermissionDeniedInput()):
                return self.data.tool_name
            case NotificationInput(notification_type=kind):
                return kind
            case SessionStartInput(source=source):
                return source
            case SessionEndInput(reason=reason):
                return reason
            case PreCompactInput(trigger=trigger) | PostCompactInput(trigger=trigger):
                return trigger
            case SubagentStartInput(agent_type=kind) | SubagentStopInput(agent_type=kind):
                return kind
            case _:
                return None

    def to_dict(self) -> dict[str, Any]:
        """Return Claude Code's hook input object: the base fields and the event's own."""
        data: dict[str, Any] = {
            "session_id": self.session_id,
            "transcript_path": self.transcript_path,
            "cwd": str(self.cwd),
            "hook_event_name": self.event.claude_name,
        }
        if self.permission_mode is not None:
            data["permission_mode"] = self.permission_mode
        data.update(event_fields(self.data))
        return data

    def to_json(self) -> str:
        """Return the JSON text a command hook reads on stdin."""
        return json.dumps(self.to_dict(), ensure_ascii=False, default=str)


def event_fields(data: HookEventInput) -> dict[str, Any]:
    """Return an event's own fields as Claude Code's stdin JSON names them.

    Optional fields that are unknown are left out, except where Claude Code always sends
    them (`stop_hook_active` of the stop events, `custom_instructions` of PreCompact).
    """
    fields: dict[str, Any] = {}
    match data:
        case PreToolUseInput() | PermissionRequestInput():
            fields = {"tool_name": data.tool_name, "tool_input": dict(data.tool_input),
                      "tool_use_id": data.tool_use_id}
        case PostToolUseInput():
            response = data.tool_response
            fields = {"tool_name": data.tool_name, "tool_input": dict(data.tool_input),
                      "tool_response": response if isinstance(response, str) else dict(response),
                      "tool_use_id": data.tool_use_id}
        case PostToolUseFailureInput():
            fields = {"tool_name": data.tool_name, "tool_input": dict(data.tool_input),
                      "tool_use_id": data.tool_use_id, "error": data.error,
                      "is_interrupt": data.is_interrupt}
        case PermissionDeniedInput():
            fields = {"tool_name": data.tool_name, "tool_input": dict(data.tool_input),
                      "tool_use_id": data.tool_use_id, "reason": data.reason}
        case UserPromptSubmitInput(prompt=prompt):
            fields = {"prompt": prompt}
        case StopInput():
            return _present({"last_assistant_message": data.last_assistant_message},
                            stop_hook_active=data.stop_hook_active)
        case SubagentStartInput(agent_id=agent_id, agent_type=agent_type):
            fields = {"agent_id": agent_id, "agent_type": agent_type}
        case SubagentStopInput():
            return _present({"agent_id": data.agent_id, "agent_type": data.agent_type,
                             "last_assistant_message": data.last_assistant_message},
                            stop_hook_active=data.stop_hook_active)
        case PreCompactInput(trigger=trigger, custom_instructions=instructions):
            return _present({"trigger": trigger}, custom_instructions=instructions)
        case PostCompactInput():
            fields = {"trigger": data.trigger, "custom_instructions": data.custom_instructions,
                      "compact_summary": data.compact_summary}
        case SessionStartInput(source=source, model=model):
            fields = {"source": source, "model": model}
        case SessionEndInput(reason=reason):
            fields = {"reason": reason}
        case ConfigChangeInput(source=source, file_path=file_path):
            fields = {"source": source, "file_path": file_path}
        case NotificationInput(message=message, notification_type=kind, title=title):
            fields = {"message": message, "notification_type": kind, "title": title}
    return _present(fields)


def _present(fields: dict[str, Any], **always: Any) -> dict[str, Any]:
    """Return `fields` without the None values, then `always` as they are."""
    return {**{key: value for key, value in fields.items() if value is not None}, **always}
