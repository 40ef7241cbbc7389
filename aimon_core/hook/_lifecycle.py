"""Hook events: the points of the agent's lifecycle where hooks run, and their names.

Kept apart from the inputs (`_events`, one frozen class per event): what only names an event
(settings, the registry, the executor asking whether a hook would run) loads without them, and
they are built only when a hook fires.
"""

from __future__ import annotations

import difflib
import enum


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
