"""A forked skill's `hooks:` block, validated into typed actions.

    hooks:
      preTool:
        - matcher: Bash(git push:*)     # a tool name or rule; absent: every tool call
          deny: Pushing is not part of this skill
        - matcher: Edit
          shell: python "${AIMON_SKILL_DIR}/scripts/check.py"
          timeout: 30
      onStop:
        - shell: ./scripts/cleanup.sh

Hooks are code: a malformed block is an error, never half-read.
"""

from __future__ import annotations

from pathlib import Path

from aimon_core.skill._model import DenyAction, HookAction, ShellAction, SkillError, SkillHooks

_EVENTS = {"preTool": "pre_tool", "postTool": "post_tool", "onStart": "on_start",
           "onStop": "on_stop"}
_TOOL_EVENTS = frozenset({"preTool", "postTool"})


def parse_hooks(value: object, path: Path) -> SkillHooks:
    """Validate a `hooks:` mapping; raise SkillError naming the event and the problem."""
    if value is None:
        return SkillHooks()
    if not isinstance(value, dict):
        raise SkillError(path, "hooks must be a mapping of events (preTool, postTool, onStart, "
                               "onStop) to lists of actions")
    unknown = sorted(str(k) for k in value if k not in _EVENTS)
    if unknown:
        raise SkillError(path, f"hooks: unknown event(s) {', '.join(unknown)} (use "
                               f"{', '.join(_EVENTS)})")
    per_event: dict[str, tuple[HookAction, ...]] = {}
    for event, actions in value.items():
        if actions is None:
            actions = []
        if not isinstance(actions, list):
            raise SkillError(path, f"hooks.{event} must be a list of actions")
        per_event[_EVENTS[event]] = tuple(
            _action(action, path, f"hooks.{event}[{i}]", event) for i, action in
            enumerate(actions))
    return SkillHooks(**per_event)


def _action(value: object, path: Path, where: str, event: str) -> HookAction:
    if not isinstance(value, dict):
        raise SkillError(path, f"{where} must be a mapping with deny: REASON or shell: COMMAND")
    unknown = sorted(set(map(str, value)) - {"matcher", "deny", "shell", "timeout"})
    if unknown:
        raise SkillError(path, f"{where}: unknown key(s) {', '.join(unknown)} (use matcher, "
                               "deny, shell, timeout)")
    matcher = value.get("matcher")
    if matcher is not None:
        if event not in _TOOL_EVENTS:
            raise SkillError(path, f"{where}: matcher applies only to preTool and postTool")
        if not isinstance(matcher, str) or not matcher.strip():
            raise SkillError(path, f"{where}: matcher must be a tool name or rule")
        matcher = matcher.strip()
    match ("deny" in value, "shell" in value):
        case (True, True) | (False, False):
            raise SkillError(path, f"{where} needs exactly one of deny or shell")
        case (True, False):
            return _deny(value, matcher, path, where, event)
    command = value["shell"]
    if not isinstance(command, str) or not command.strip():
        raise SkillError(path, f"{where}: shell must be a command line")
    timeout = value.get("timeout", 60)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise SkillError(path, f"{where}: timeout must be a positive number of seconds")
    return ShellAction(matcher=matcher, command=command.strip(), timeout_seconds=float(timeout))


def _deny(value: dict[object, object], matcher: str | None, path: Path, where: str,
          event: str) -> DenyAction:
    if event != "preTool":
        raise SkillError(path, f"{where}: deny is possible only before a tool runs (preTool)")
    if "timeout" in value:
        raise SkillError(path, f"{where}: timeout applies only to shell")
    reason = value["deny"]
    if not isinstance(reason, str) or not reason.strip():
        raise SkillError(path, f"{where}: deny must give the reason the model is told")
    return DenyAction(matcher=matcher, reason=reason.strip())
