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

Claude Code's names and shape are read too, as its skill and agent files write them:

    hooks:
      PreToolUse:                       # or PostToolUse, Stop (SubagentStop), SubagentStart
        - matcher: "Write|Edit"         # tool names joined by |; "" or "*": every tool
          hooks:
            - type: command
              command: ./scripts/check.sh
              timeout: 30

Claude Code's other events (UserPromptSubmit, Notification, ...) never happen inside a fork:
they are skipped with a warning, as are its non-command hook types. Hooks are code: a malformed
block is an error, never half-read.
"""

from __future__ import annotations

import re
from pathlib import Path

from aimon_core.skill._model import DenyAction, HookAction, ShellAction, SkillError, SkillHooks

_EVENTS = {"preTool": "pre_tool", "postTool": "post_tool", "onStart": "on_start",
           "onStop": "on_stop"}
# Claude Code's names of the same events; for a skill or agent, its Stop is the SubagentStop
# of the fork.
_CLAUDE_EVENTS = {"PreToolUse": "preTool", "PostToolUse": "postTool", "SubagentStart": "onStart",
                  "Stop": "onStop", "SubagentStop": "onStop"}
_CLAUDE_SKIPPED = frozenset({"UserPromptSubmit", "Notification", "PreCompact", "PostCompact",
                             "SessionStart", "SessionEnd", "PermissionRequest",
                             "PostToolUseFailure", "ConfigChange", "Setup", "TeammateIdle",
                             "TaskCompleted", "WorktreeCreate", "WorktreeRemove",
                             "InstructionsLoaded", "Elicitation", "ElicitationResult"})
_TOOL_EVENTS = frozenset({"preTool", "postTool"})
# A Claude Code matcher aimon reads: tool names (or MCP names) joined by `|`.
_NAMES = re.compile(r"[A-Za-z_][\w-]*(?:\|[A-Za-z_][\w-]*)*")


def parse_hooks(value: object, path: Path, warnings: list[str] | None = None) -> SkillHooks:
    """Validate a `hooks:` mapping; raise SkillError naming the event and the problem.

    Claude Code's events that never happen in a fork are left out with a note in `warnings`.
    """
    if value is None:
        return SkillHooks()
    if not isinstance(value, dict):
        raise SkillError(path, "hooks must be a mapping of events (preTool, postTool, onStart, "
                               "onStop, or Claude Code's PreToolUse, ...) to lists of actions")
    unknown = sorted(str(k) for k in value
                     if k not in _EVENTS and k not in _CLAUDE_EVENTS and k not in _CLAUDE_SKIPPED)
    if unknown:
        raise SkillError(path, f"hooks: unknown event(s) {', '.join(unknown)} (use "
                               f"{', '.join(_EVENTS)}, or {', '.join(_CLAUDE_EVENTS)})")
    per_event: dict[str, list[HookAction]] = {}
    for event, actions in value.items():
        if event in _CLAUDE_SKIPPED:
            if warnings is not None:
                warnings.append(f"hooks.{event}: never happens inside a skill or subagent here; "
                                "skipped")
            continue
        if actions is None:
            actions = []
        if not isinstance(actions, list):
            raise SkillError(path, f"hooks.{event} must be a list of actions")
        ours = _CLAUDE_EVENTS.get(str(event), str(event))
        found = per_event.setdefault(_EVENTS[ours], [])
        for i, action in enumerate(actions):
            where = f"hooks.{event}[{i}]"
            if event in _CLAUDE_EVENTS:
                found.extend(_claude_actions(action, path, where, ours, warnings))
            else:
                found.append(_action(action, path, where, ours))
    return SkillHooks(**{field: tuple(found) for field, found in per_event.items()})


def _claude_actions(value: object, path: Path, where: str, event: str,
                    warnings: list[str] | None) -> list[HookAction]:
    """Read one Claude Code matcher group: `{matcher, hooks: [{type, command, timeout}]}`."""
    if not isinstance(value, dict) or not isinstance(value.get("hooks"), list):
        raise SkillError(path, f"{where} must be a mapping with hooks: a list of commands")
    unknown = sorted(set(map(str, value)) - {"matcher", "hooks"})
    if unknown:
        raise SkillError(path, f"{where}: unknown key(s) {', '.join(unknown)} (use matcher, "
                               "hooks)")
    matchers = _claude_matcher(value.get("matcher"), path, where, event)
    actions: list[HookAction] = []
    for i, hook in enumerate(value["hooks"]):
        at = f"{where}.hooks[{i}]"
        if not isinstance(hook, dict):
            raise SkillError(path, f"{at} must be a mapping with type and command")
        kind = hook.get("type", "command")
        if kind != "command":
            if warnings is not None:
                warnings.append(f"{at}: {kind!r} hooks are not run by aimon; skipped")
            continue
        unknown = sorted(set(map(str, hook)) - {"type", "command", "timeout", "statusMessage"})
        if unknown:
            raise SkillError(path, f"{at}: unknown key(s) {', '.join(unknown)} (use type, "
                                   "command, timeout)")
        shell = {"shell": hook.get("command"),
                 **({"timeout": hook["timeout"]} if "timeout" in hook else {})}
        actions.extend(_action({**shell, **({"matcher": m} if m else {})}, path, at, event)
                       for m in matchers)
    return actions


def _claude_matcher(value: object, path: Path, where: str, event: str) -> tuple[str | None, ...]:
    """Return the tool names a Claude Code matcher names (None: every tool call)."""
    if value is None or (isinstance(value, str) and value.strip() in ("", "*")):
        return (None,)
    if event not in _TOOL_EVENTS:
        raise SkillError(path, f"{where}: matcher applies only to PreToolUse and PostToolUse")
    if not isinstance(value, str) or not _NAMES.fullmatch(value.strip()):
        raise SkillError(path, f"{where}: matcher {value!r} must be tool names joined by | "
                               "(or * for every tool)")
    return tuple(value.strip().split("|"))


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
