"""A skill's or subagent's own hooks are code from its file: trusted for their content.

A forked skill, and a subagent definition, may declare `hooks:` (shell commands run around the
fork's tool calls). When the skill or agent is repository code they run only once the user has
trusted those hooks as they read: a new or changed hook is asked about again. Repository code
is judged from real paths: a skill or agent of the project's folders, or any (a user's too)
whose file really lies in the project or in the repository the project is part of (a start in
a sub-folder, a link in the user's folder to a folder of a clone).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aimon_core.config._scripts import named_scripts
from aimon_core.config._trust import TrustStore, item_digest

if TYPE_CHECKING:
    from aimon_core.skill import DefinitionHooks, HookAction, Skill

    # A forked skill, or a subagent definition's hooks: whose hooks they are, and where.
    HookOwner = Skill | DefinitionHooks

_EVENTS = (("pre_tool", "preTool"), ("post_tool", "postTool"), ("on_start", "onStart"),
           ("on_stop", "onStop"))
_PREVIEW = 60


def skill_hooks_item(skill: HookOwner) -> str:
    """Return the digest the hooks are trusted by (the owner's name, every action, and the
    scripts of the owner's folder the actions run: `named_scripts`)."""
    from aimon_core.skill import DenyAction, Skill

    kind = "skillHooks" if isinstance(skill, Skill) else "agentHooks"
    folder = skill.directory if isinstance(skill, Skill) else skill.path.parent
    variables = {"AIMON_SKILL_DIR": str(folder), "CLAUDE_SKILL_DIR": str(folder)}
    scripts: dict[str, str] = {}
    for field, _ in _EVENTS:
        for action in getattr(skill.hooks, field):
            if not isinstance(action, DenyAction):
                scripts |= named_scripts(action.command, folder, variables)
    if scripts:
        return item_digest(kind, skill.name, _hooks_json(skill), scripts)
    return item_digest(kind, skill.name, _hooks_json(skill))


def _is_skill(owner: HookOwner) -> bool:
    from aimon_core.skill import Skill

    return isinstance(owner, Skill)


def _hooks_json(skill: HookOwner) -> dict[str, list[dict[str, Any]]]:
    from aimon_core.skill import DenyAction

    def action(value: HookAction) -> dict[str, Any]:
        if isinstance(value, DenyAction):
            return {"matcher": value.matcher, "deny": value.reason}
        return {"matcher": value.matcher, "shell": value.command,
                "timeout": value.timeout_seconds}

    return {name: [action(a) for a in getattr(skill.hooks, field)]
            for field, name in _EVENTS if getattr(skill.hooks, field)}


def describe_skill_hooks(skill: HookOwner, project_root: Path) -> str:
    """Say in one line what trusting the hooks would run."""
    shown = "; ".join(
        f"{name}: {', '.join(_preview(a['shell']) for a in actions if 'shell' in a)}"
        for name, actions in _hooks_json(skill).items() if any("shell" in a for a in actions))
    where = (skill.path.relative_to(project_root) if skill.path.is_relative_to(project_root)
             else skill.path)
    owner = "skill" if _is_skill(skill) else "subagent"
    return f"runs the hooks of the {owner} {skill.name} ({where}): {shown or 'deny rules only'}"


def _preview(command: str) -> str:
    one_line = " ".join(command.split())
    return one_line if len(one_line) <= _PREVIEW else one_line[: _PREVIEW - 1] + "…"


def repository_roots(project_root: Path) -> tuple[str, ...]:
    """Return the real folders whose files are repository code: the project and its checkout."""
    from aimon_core.filesystem import find_repository

    roots = [os.path.realpath(project_root)]
    repository = find_repository(project_root)
    if repository is not None and repository.worktree is not None:
        roots.append(os.path.realpath(repository.worktree))
    return tuple(dict.fromkeys(roots))


def is_repository_code(path: Path, project_root: Path,
                       roots: tuple[str, ...] | None = None) -> bool:
    """Tell whether `path` is the project's (as written, or once its links are resolved)."""
    if Path(path).absolute().is_relative_to(project_root.absolute()):
        return True
    real = os.path.realpath(path)
    return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep)
               for root in (roots if roots is not None else repository_roots(project_root)))


def repository_skill_hooks(project_root: Path) -> tuple[HookOwner, ...]:
    """Return the forked skills and the subagents with hooks that are repository code.

    A SKILL.md or agent file that never says `hooks` is not parsed (start-up reads each small
    file once more).
    """
    from aimon_core.session import user_config_dir
    from aimon_core.skill import Layer, hooked_skills
    from aimon_core.subagent import hooked_agents

    root = project_root.absolute()
    roots = repository_roots(root)

    def ours(path: Path) -> bool:
        return is_repository_code(path, root, roots)

    found: list[HookOwner] = [
        *hooked_skills(root / ".claude" / "skills", Layer.CLAUDE_PROJECT, inside=root),
        *hooked_skills(root / ".aimon" / "skills", Layer.PROJECT, inside=root),
        *hooked_skills(user_config_dir() / "skills", Layer.USER, where=ours)]
    for folder, inside in ((root / ".claude" / "agents", root), (root / ".aimon" / "agents", root),
                           (user_config_dir() / "agents", None)):
        found.extend(hooked_agents(folder, inside=inside, where=None if inside else ours))
    return tuple(found)


def skill_hooks_trusted(skill: HookOwner, project_root: Path,
                        store: TrustStore | None = None) -> bool:
    """Tell whether a skill's (or agent's) hooks may run: not repository code, or trusted as
    they read."""
    if not is_repository_code(skill.path, project_root):
        return True
    return skill_hooks_item(skill) in (store or TrustStore()).trusted_items(project_root)
