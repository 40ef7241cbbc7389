"""Hooks: commands and callbacks run on lifecycle events, speaking Claude Code's protocol."""

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
from aimon_core.hook._events import UNSUPPORTED_CLAUDE_EVENTS, HookEvent, HookInput
from aimon_core.hook._registry import HookCallback, HookNotice, HookRegistry
from aimon_core.hook._result import Flow, HookResult, PermissionDecision, combine, feedback_reminder
from aimon_core.hook._shapes import claude_tool_response, structured_patch

__all__ = [
    "DEFAULT_TIMEOUT",
    "OUTPUT_LIMIT",
    "UNSUPPORTED_CLAUDE_EVENTS",
    "CommandHookSpec",
    "Flow",
    "HookCallback",
    "HookConfigError",
    "HookDispatcher",
    "HookEvent",
    "HookInput",
    "HookNotice",
    "HookRegistry",
    "HookResult",
    "PermissionDecision",
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
