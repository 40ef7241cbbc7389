"""Hooks: commands and callbacks run on lifecycle events, speaking Claude Code's protocol."""

from aimon_core.hook._command import OUTPUT_LIMIT, hook_label, interpret_output, run_command_hook
from aimon_core.hook._config import (
    DEFAULT_TIMEOUT,
    CommandHookSpec,
    HookConfigError,
    group_specs,
    matcher_accepts,
    parse_hooks_config,
)
from aimon_core.hook._dispatch import HookDispatcher
from aimon_core.hook._events import HookEvent, HookInput
from aimon_core.hook._registry import HookCallback, HookRegistry
from aimon_core.hook._result import Flow, HookResult, PermissionDecision, combine, feedback_reminder

__all__ = [
    "DEFAULT_TIMEOUT",
    "OUTPUT_LIMIT",
    "CommandHookSpec",
    "Flow",
    "HookCallback",
    "HookConfigError",
    "HookDispatcher",
    "HookEvent",
    "HookInput",
    "HookRegistry",
    "HookResult",
    "PermissionDecision",
    "combine",
    "feedback_reminder",
    "group_specs",
    "hook_label",
    "interpret_output",
    "matcher_accepts",
    "parse_hooks_config",
    "run_command_hook",
]
