"""A forked skill's or a subagent's own `hooks:` (deny and shell actions), run in its fork.

They are code from the skill's folder, so a skill that is repository code (the project's
folders, or any skill whose folder really lies in the project or its repository) has its hooks
run only once the user trusted them as they read (`config.skill_hooks_trusted`); built-in and
user skills are the user's own. `deny` refuses matching tool calls before they run; `shell` runs a
command with Claude Code's hook protocol (stdin JSON; exit 2 blocks), with `AIMON_SKILL_DIR` set.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aimon_core.hook import (
    CommandHookSpec,
    HookEvent,
    HookInput,
    HookRegistry,
    HookResult,
    run_command_hook,
)

if TYPE_CHECKING:
    from aimon_core.skill import DefinitionHooks, HookAction, Skill
    from aimon_core.tools import ToolRegistry

# A postTool action runs after every call, failed ones too: AIMON_SUCCESS tells which.
_EVENTS = (("pre_tool", HookEvent.PRE_TOOL), ("post_tool", HookEvent.POST_TOOL),
           ("post_tool", HookEvent.POST_TOOL_FAILURE),
           ("on_start", HookEvent.ON_START), ("on_stop", HookEvent.ON_STOP))


def hook_variables(owner: Skill | DefinitionHooks, hook_input: HookInput) -> dict[str, str]:
    """Return the `AIMON_*` variables a skill's (or subagent's) shell hook gets
    (AIMON_PROJECT_DIR comes with every command hook): the skill, the event, the session, and
    for tool events the tool and, after the call, whether it succeeded."""
    from aimon_core.hook import PostToolUseFailureInput, PostToolUseInput
    from aimon_core.skill import Skill

    env = {"AIMON_HOOK_EVENT": hook_input.event.value, "AIMON_SESSION_ID": hook_input.session_id}
    if isinstance(owner, Skill):
        env |= {"AIMON_SKILL_DIR": str(owner.directory), "AIMON_SKILL_NAME": owner.name}
    if hook_input.tool_name is not None:
        env["AIMON_TOOL_NAME"] = hook_input.tool_name
    match hook_input.data:
        case PostToolUseInput():
            env["AIMON_SUCCESS"] = "true"
        case PostToolUseFailureInput():
            env["AIMON_SUCCESS"] = "false"
        case _:
            pass
    return env


def skill_hooks_allowed(skill: Skill | DefinitionHooks, project_root: Path) -> bool:
    """Tell whether a skill's hooks may run: not repository code, or trusted as they read."""
    from aimon_core.config import skill_hooks_trusted

    return skill_hooks_trusted(skill, project_root)


def register_skill_hooks(registry: HookRegistry, skill: Skill | DefinitionHooks,
                         tools: ToolRegistry, project_root: Path) -> int:
    """Register the skill's (or subagent's) hook actions on a fork's registry; return how many."""
    count = 0
    for field, event in _EVENTS:
        for action in getattr(skill.hooks, field):
            registry.register(event, _callback(action, skill, tools, project_root),
                              name=f"skill {skill.name} {field}")
            count += 1
    return count


def _callback(action: HookAction, skill: Skill | DefinitionHooks, tools: ToolRegistry,
              root: Path) -> Any:
    from aimon_core.skill import DenyAction, Skill

    owner = "skill" if isinstance(skill, Skill) else "subagent"

    async def run(hook_input: HookInput) -> HookResult | None:
        if not _matches(action.matcher, hook_input, tools, root):
            return None
        if isinstance(action, DenyAction):
            return HookResult.deny(f"the {owner} {skill.name} does not allow this: "
                                   f"{action.reason}")
        spec = CommandHookSpec(event=hook_input.event, matcher=None, command=action.command,
                               timeout=action.timeout_seconds, source=str(skill.path))
        return await run_command_hook(spec, hook_input, project_dir=root,
                                      env=hook_variables(skill, hook_input))

    return run


def _matches(matcher: str | None, hook_input: HookInput, tools: ToolRegistry,
             root: Path) -> bool:
    """Tell whether a tool event's call is one the action's matcher (a name or rule) names."""
    if matcher is None or hook_input.tool_name is None:
        return True
    from aimon_core.permission import PermissionRules, Verdict, decide, parse_rule

    rule = parse_rule(matcher)
    if rule.tool != hook_input.tool_name:
        return False
    tool = tools.get(hook_input.tool_name)
    if rule.specifier is None or tool is None:
        return True
    tool_input: Mapping[str, Any] = hook_input.tool_input or {}
    decision = decide(tool, tool_input, PermissionRules.parse(allow=[matcher]), root)
    return decision.verdict is Verdict.ALLOW and decision.rule is not None
