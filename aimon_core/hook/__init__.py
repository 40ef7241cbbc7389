"""Hooks: commands and callbacks run on lifecycle events, speaking Claude Code's protocol."""

from typing import TYPE_CHECKING

from aimon_core._lazy import lazy_getattr
from aimon_core.hook._command import OUTPUT_LIMIT, hook_label, interpret_output, run_command_hook
from aimon_core.hook._config import (
    DEFAULT_TIMEOUT,
    CommandHookSpec,
    HookConfigError,
    condition_accepts,
    group_specs,
    matcher_accepts,
    parse_hooks_config,
)
from aimon_core.hook._dispatch import HookDispatcher
from aimon_core.hook._lifecycle import UNSUPPORTED_CLAUDE_EVENTS, HookEvent
from aimon_core.hook._registry import HookCallback, HookNotice, HookRegistry
from aimon_core.hook._result import Flow, HookResult, PermissionDecision, combine, feedback_reminder
from aimon_core.hook._shapes import claude_tool_response, structured_patch

if TYPE_CHECKING:
    from aimon_core.hook._events import (
        ConfigChangeInput,
        HookEventInput,
        HookInput,
        NotificationInput,
        PermissionDeniedInput,
        PermissionRequestInput,
        PostCompactInput,
        PostToolUseFailureInput,
        PostToolUseInput,
        PreCompactInput,
        PreToolUseInput,
        SessionEndInput,
        SessionStartInput,
        StopInput,
        SubagentStartInput,
        SubagentStopInput,
        UserPromptSubmitInput,
    )

__all__ = [
    "DEFAULT_TIMEOUT",
    "OUTPUT_LIMIT",
    "UNSUPPORTED_CLAUDE_EVENTS",
    "CommandHookSpec",
    "ConfigChangeInput",
    "Flow",
    "HookCallback",
    "HookConfigError",
    "HookDispatcher",
    "HookEvent",
    "HookEventInput",
    "HookInput",
    "HookNotice",
    "HookRegistry",
    "HookResult",
    "NotificationInput",
    "PermissionDecision",
    "PermissionDeniedInput",
    "PermissionRequestInput",
    "PostCompactInput",
    "PostToolUseFailureInput",
    "PostToolUseInput",
    "PreCompactInput",
    "PreToolUseInput",
    "SessionEndInput",
    "SessionStartInput",
    "StopInput",
    "SubagentStartInput",
    "SubagentStopInput",
    "UserPromptSubmitInput",
    "claude_tool_response",
    "combine",
    "condition_accepts",
    "feedback_reminder",
    "group_specs",
    "hook_label",
    "interpret_output",
    "matcher_accepts",
    "parse_hooks_config",
    "run_command_hook",
    "structured_patch",
]

# The inputs load when a hook fires (one frozen class per event, ~6 ms of the first prompt on
# Python 3.11): a session without hooks never builds one.
_INPUTS = (
    "ConfigChangeInput", "HookEventInput", "HookInput", "NotificationInput",
    "PermissionDeniedInput", "PermissionRequestInput", "PostCompactInput",
    "PostToolUseFailureInput", "PostToolUseInput", "PreCompactInput", "PreToolUseInput",
    "SessionEndInput", "SessionStartInput", "StopInput", "SubagentStartInput",
    "SubagentStopInput", "UserPromptSubmitInput",
)
__getattr__ = lazy_getattr(__name__, dict.fromkeys(_INPUTS, "_events"))
