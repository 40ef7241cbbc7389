"""System prompt assembly: the agent's prompt, the environment, the project's instructions.

The environment is gathered at every session start, before the user has said anything and in
every permission mode, so it runs nothing a cloned repository could have chosen: the branch is
read from the repository's HEAD file (found as git finds it, from a sub-folder too), and
`git status` runs only where the repository's configuration is proven inert (the check the Bash
tool uses); elsewhere the status is left out. The instruction file is read as aimon reads any
file by itself (`aimon_core.filesystem.read_own`): a link out of the project, a special file or
a file a deny rule covers is skipped with a warning naming it. Imports (`@path` lines) in
instruction files are not expanded.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import os
import platform
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aimon_core.agent._definition import AgentDefinition

log = logging.getLogger(__name__)

INSTRUCTION_FILES = ("AIMON.md", "AGENTS.md", "CLAUDE.md")
_MAX_INSTRUCTIONS = 40_000
_STATUS_TIMEOUT = 3.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ProjectInstructions:
    """The project's instruction file and its text."""

    path: Path
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Environment:
    """Facts about where the agent runs, taken once at the start of a session."""

    cwd: Path
    platform: str
    date: str
    git_branch: str | None = None
    git_status: str | None = None
    instructions: ProjectInstructions | None = None


def _git_status(cwd: Path) -> str | None:
    """Return `git status --porcelain` in ``cwd`` if its repository is proven inert, else None.

    The command changes nothing on disk (``--no-optional-locks``) and gets the environment of
    the model's commands: no credentials.
    """
    from aimon_core.filesystem import repository_is_inert
    from aimon_core.shell import model_env

    if not repository_is_inert(cwd):
        return None
    env = {**model_env(os.environ), "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
    try:
        done = subprocess.run(
            ["git", "--no-optional-locks", "status", "--porcelain"], cwd=cwd, env=env,
            capture_output=True, text=True, timeout=_STATUS_TIMEOUT, check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _status_summary(porcelain: str) -> str:
    lines = [line for line in porcelain.splitlines() if line.strip()]
    if not lines:
        return "clean"
    untracked = sum(1 for line in lines if line.startswith("??"))
    changed = len(lines) - untracked
    parts = [f"{changed} changed"] if changed else []
    if untracked:
        parts.append(f"{untracked} untracked")
    shown = "\n".join(lines[:20]) + ("\n..." if len(lines) > 20 else "")
    return f"{', '.join(parts)}\n{shown}"


def find_instructions(project_root: Path, readable: Callable[[Path], bool] | None = None
                      ) -> ProjectInstructions | None:
    """Return the first of AIMON.md, AGENTS.md, CLAUDE.md in the project root.

    A file that leads out of the project, is not a regular file, or that `readable` (the path
    deny rules) refuses is skipped with a warning naming it.
    """
    from aimon_core.filesystem import RefusedFileError, read_own

    for name in INSTRUCTION_FILES:
        path = project_root / name
        if not os.path.lexists(path):
            continue
        try:
            data = read_own(path, inside=project_root, readable=readable,
                            limit=_MAX_INSTRUCTIONS * 4)
        except RefusedFileError as exc:
            log.warning("%s: not read: %s", path, exc)
            continue
        except OSError:
            continue
        text = data.decode("utf-8", errors="replace")
        return ProjectInstructions(path=path, text=text[:_MAX_INSTRUCTIONS])
    return None


def gather_environment_sync(project_root: Path, cwd: Path | None = None, *,
                            path_filter: Callable[[Path], bool] | None = None) -> Environment:
    """Collect the environment facts (reads the repository's files; blocking).

    Args:
        path_filter: the path deny rules (`ToolContext.path_filter`): False for a file the
            instructions may not be read from.
    """
    from aimon_core.filesystem import find_repository, read_branch

    cwd = cwd or project_root
    repository = find_repository(cwd)
    branch = read_branch(repository) if repository is not None else None
    status = (_git_status(cwd) if repository is not None and repository.worktree is not None
              else None)
    return Environment(
        cwd=cwd,
        platform=f"{platform.system().lower()} ({platform.release()})",
        date=dt.date.today().isoformat(),
        git_branch=branch,
        git_status=_status_summary(status) if status is not None else None,
        instructions=find_instructions(project_root, path_filter),
    )


async def gather_environment(project_root: Path, cwd: Path | None = None, *,
                             path_filter: Callable[[Path], bool] | None = None) -> Environment:
    """Collect the environment facts off the event loop."""
    return await asyncio.to_thread(gather_environment_sync, project_root, cwd,
                                   path_filter=path_filter)


def assemble_system_prompt(
    agent: AgentDefinition, env: Environment, variables: dict[str, str] | None = None
) -> str:
    """Return the whole system prompt: agent prompt, environment, project instructions."""
    parts = [agent.render_prompt(variables)]
    facts = [
        f"Working directory: {env.cwd}",
        f"Platform: {env.platform}",
        f"Today's date: {env.date}",
        f"Git repository: {'yes' if env.git_branch is not None else 'no'}",
    ]
    if env.git_branch is not None:
        facts.append(f"Git branch: {env.git_branch}")
        facts.append("Git status at session start: " + (
            env.git_status or "unknown (git runs only where the repository's configuration "
            "runs nothing)"))
    parts.append("# Environment\n<env>\n" + "\n".join(facts) + "\n</env>")
    if env.instructions is not None:
        parts.append(
            f"# Project instructions ({env.instructions.path.name})\n"
            "The user keeps these instructions in the project; follow them.\n"
            f"<project-instructions>\n{env.instructions.text.strip()}\n</project-instructions>"
        )
    return "\n\n".join(parts) + "\n"
