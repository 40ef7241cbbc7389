"""A skill's own hooks are code from its folder: trusted for their content, like settings hooks.

A forked skill may declare `hooks:` (shell commands run around its tool calls). When the skill
is repository code they run only once the user has trusted those hooks as they read: a new or
changed hook of the skill is asked about again. Repository code is judged from real paths: a
skill of the project's folders, or any skill (a user's too) whose folder really lies in the
project or in the repository the project is part of (a start in a sub-folder, a link in the
user's skills folder to a folder of a clone).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aimon_core.config._scripts import named_scripts
from aimon_core.config._trust import TrustStore, item_digest

if TYPE_CHECKING:
    from aimon_core.skill import HookAction, Skill

_EVENTS = (("pre_tool", "preTool"), ("post_tool", "postTool"), ("on_start", "onStart"),
           ("on_stop", "onStop"))
_PREVIEW = 60


def skill_hooks_item(skill: Skill) -> str:
    """Return the digest the skill's hooks are trusted by (its name, every action, and the
    scripts of its folder the actions run: `named_scripts`)."""
    from aimon_core.skill import DenyAction

    folder = skill.directory
    variables = {"AIMON_SKILL_DIR": str(folder), "CLAUDE_SKILL_DIR": str(folder)}
    scripts: dict[str, str] = {}
    for field, _ in _EVENTS:
        for action in getattr(skill.hooks, field):
            if not isinstance(action, DenyAction):
                scripts |= named_scripts(action.command, folder, variables)
    if scripts:
        return item_digest("skillHooks", skill.name, _hooks_json(skill), scripts)
    return item_digest("skillHooks", skill.name, _hooks_json(skill))


def _hooks_json(skill: Skill) -> dict[str, list[dict[str, Any]]]:
    from aimon_core.skill import DenyAction

    def action(value: HookAction) -> dict[str, Any]:
        if isinstance(value, DenyAction):
            return {"matcher": value.matcher, "deny": value.reason}
        return {"matcher": value.matcher, "shell": value.command,
                "timeout": value.timeout_seconds}

    return {name: [action(a) for a in getattr(skill.hooks, field)]
            for field, name in _EVENTS if getattr(skill.hooks, field)}


def describe_skill_hooks(skill: Skill, project_root: Path) -> str:
    """Say in one line what trusting the skill's hooks would run."""
    shown = "; ".join(
        f"{name}: {', '.join(_preview(a['shell']) for a in actions if 'shell' in a)}"
        for name, actions in _hooks_json(skill).items() if any("shell" in a for a in actions))
    where = (skill.path.relative_to(project_root) if skill.path.is_relative_to(project_root)
             else skill.path)
    return f"runs the hooks of the skill {skill.name} ({where}): {shown or 'deny rules only'}"


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


def repository_skill_hooks(project_root: Path) -> tuple[Skill, ...]:
    """Return the forked skills with hooks that are repository code (project and user folders).

    A SKILL.md that never says `hooks` is not parsed (start-up reads each small file once more).
    """
    from aimon_core.session import user_config_dir
    from aimon_core.skill import Layer, hooked_skills

    root = project_root.absolute()
    roots = repository_roots(root)
    found = [*hooked_skills(root / ".claude" / "skills", Layer.CLAUDE_PROJECT, inside=root),
             *hooked_skills(root / ".aimon" / "skills", Layer.PROJECT, inside=root),
             *hooked_skills(user_config_dir() / "skills", Layer.USER,
                            where=lambda folder: is_repository_code(folder, root, roots))]
    return tuple(found)


def skill_hooks_trusted(skill: Skill, project_root: Path,
                        store: TrustStore | None = None) -> bool:
    """Tell whether a skill's hooks may run: not repository code, or trusted as they read."""
    if not is_repository_code(skill.path, project_root):
        return True
    return skill_hooks_item(skill) in (store or TrustStore()).trusted_items(project_root)
