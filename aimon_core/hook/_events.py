"""Hook events and the input a hook receives (Claude Code's stdin JSON, typed)."""

from __future__ import annotations

import difflib
import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any


class HookEvent(enum.Enum):
    """A point in the agent's lifecycle where hooks run; the value is Claude Code's name."""

    PRE_TOOL = "PreToolUse"
    POST_TOOL = "PostToolUse"
    ON_START = "UserPromptSubmit"  # a turn starts: the user's prompt was submitted
    ON_STOP = "Stop"  # the agent finished answering a turn
    PRE_COMPACT = "PreCompact"
    POST_COMPACT = "PostCompact"
    PERMISSION_REQUEST = "PermissionRequest"
    PERMISSION_DENIED = "PermissionDenied"
    SUBAGENT_START = "SubagentStart"
    SUBAGENT_STOP = "SubagentStop"
    ON_SESSION_START = "SessionStart"
    ON_SESSION_END = "SessionEnd"
    ON_CONFIG_RELOAD = "ConfigChange"
    NOTIFICATION = "Notification"  # waiting for approval, or idle at the prompt
    POST_TOOL_FAILURE = "PostToolUseFailure"  # a tool call ran and failed

    @property
    def claude_name(self) -> str:
        """Return Claude Code's name for the event (sent to scripts as `hook_event_name`)."""
        return self.value

    @classmethod
    def from_name(cls, name: str) -> HookEvent:
        """Return the event named `name`: ours (`PRE_TOOL`) or Claude Code's (`PreToolUse`).

        Case, `_` and `-` are ignored. Raises ValueError naming the nearest event.
        """
        event = _BY_KEY.get(_key(name))
        if event is not None:
            return event
        raise ValueError(unknown_event_message(name))


def _key(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


_BY_KEY: dict[str, HookEvent] = {
    **{_key(event.name): event for event in HookEvent},
    **{_key(event.value): event for event in HookEvent},
}
_ALL_NAMES = tuple(
    dict.fromkeys([event.value for event in HookEvent] + [event.name for event in HookEvent])
)

# Claude Code events aimon does not have: settings that use them are skipped, not refused,
# so a Claude Code settings file still loads.
UNSUPPORTED_CLAUDE_EVENTS = frozenset({
    "StopFailure", "TeammateIdle", "TaskCompleted",
    "WorktreeCreate", "WorktreeRemove", "InstructionsLoaded", "Elicitation",
    "ElicitationResult", "Setup",
})


def unknown_event_message(name: str) -> str:
    """Return the error text for an unknown event name, with the nearest known name."""
    nearest = difflib.get_close_matches(name, _ALL_NAMES, n=1, cutoff=0.5)
    if not nearest:
        lowered = {n.lower(): n for n in _ALL_NAMES}
        found = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.5)
        nearest = [lowered[found[0]]] if found else []
    hint = f"; did you mean {nearest[0]!r}?" if nearest else ""
    return f"unknown hook event {name!r}{hint} (known: {', '.join(e.value for e in HookEvent)})"


_EMPTY: Mapping[str, Any] = MappingProxyType({})
_STOP_EVENTS = (HookEvent.ON_STOP, HookEvent.SUBAGENT_STOP)


@dataclass(frozen=True, slots=True, kw_only=True)
class HookInput:
    """What a hook is told about the event; fields that do not apply stay None.

    Args:
        permission_mode: the session's permission mode ("default", "acceptEdits", "plan", ...).
        tool_response: the tool's result (POST_TOOL): its structured form or its text.
        stop_hook_active: ON_STOP / SUBAGENT_STOP: the agent is already continuing because a
            stop hook blocked; a script checks it to avoid keeping the agent going forever.
        last_assistant_message: ON_STOP / SUBAGENT_STOP: the text of the final answer.
        source: ON_SESSION_START: "startup", "resume", "clear" or "compact".
        reason: ON_SESSION_END ("clear", "logout", "prompt_input_exit", "other") or
            PERMISSION_DENIED (why the call was denied).
        trigger: PRE_COMPACT / POST_COMPACT: "manual" or "auto".
        error: POST_TOOL_FAILURE: what went wrong.
        is_interrupt: POST_TOOL_FAILURE: the call failed because the user interrupted it.
        message: NOTIFICATION: the text of the notice.
        notification_type: NOTIFICATION: "permission_prompt" or "idle_prompt".
        model: ON_SESSION_START: the session's model.
        extra: more JSON fields for the script; never overrides the fields above.
    """

    event: HookEvent
    session_id: str
    cwd: Path
    transcript_path: str | None = None
    permission_mode: str | None = None
    tool_name: str | None = None
    tool_input: Mapping[str, Any] | None = None
    tool_response: Mapping[str, Any] | str | None = None
    tool_use_id: str | None = None
    prompt: str | None = None
    stop_hook_active: bool = False
    last_assistant_message: str | None = None
    source: str | None = None
    reason: str | None = None
    trigger: str | None = None
    custom_instructions: str | None = None
    agent_id: str | None = None
    agent_type: str | None = None
    error: str | None = None
    is_interrupt: bool | None = None
    message: str | None = None
    notification_type: str | None = None
    model: str | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    def match_subject(self) -> str | None:
        """Return the text a settings matcher is tested against, or None if matchers do not
        apply to this event (every hook of the event then runs)."""
        match self.event:
            case (
                HookEvent.PRE_TOOL
                | HookEvent.POST_TOOL
                | HookEvent.PERMISSION_REQUEST
                | HookEvent.PERMISSION_DENIED
                | HookEvent.POST_TOOL_FAILURE
            ):
                return self.tool_name
            case HookEvent.NOTIFICATION:
                return self.notification_type
            case HookEvent.ON_SESSION_START:
                return self.source
            case HookEvent.ON_SESSION_END:
                return self.reason
            case HookEvent.PRE_COMPACT | HookEvent.POST_COMPACT:
                return self.trigger
            case HookEvent.SUBAGENT_START | HookEvent.SUBAGENT_STOP:
                return self.agent_type
            case _:
                return None

    def to_dict(self) -> dict[str, Any]:
        """Return Claude Code's hook input object: the base fields and those that apply."""
        data: dict[str, Any] = {
            "session_id": self.session_id,
            "transcript_path": self.transcript_path,
            "cwd": str(self.cwd),
            "hook_event_name": self.event.claude_name,
        }
        optional: dict[str, Any] = {
            "permission_mode": self.permission_mode,
            "tool_name": self.tool_name,
            "tool_input": None if self.tool_input is None else dict(self.tool_input),
            "tool_response": (
                self.tool_response
                if self.tool_response is None or isinstance(self.tool_response, str)
                else dict(self.tool_response)
            ),
            "tool_use_id": self.tool_use_id,
            "prompt": self.prompt,
            "last_assistant_message": self.last_assistant_message,
            "source": self.source,
            "reason": self.reason,
            "trigger": self.trigger,
            "custom_instructions": self.custom_instructions,
            "agent_id": self.agent_id,
            "agent_type": self.agent_type,
            "error": self.error,
            "is_interrupt": self.is_interrupt,
            "message": self.message,
            "notification_type": self.notification_type,
            "model": self.model,
        }
        data.update((key, value) for key, value in optional.items() if value is not None)
        if self.event in _STOP_EVENTS:
            data["stop_hook_active"] = self.stop_hook_active
        if self.event is HookEvent.PRE_COMPACT:
            data.setdefault("custom_instructions", None)
        for key, value in self.extra.items():
            data.setdefault(key, value)
        return data

    def to_json(self) -> str:
        """Return the JSON text a command hook reads on stdin."""
        return json.dumps(self.to_dict(), ensure_ascii=False, default=str)
