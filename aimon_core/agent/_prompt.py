"""System prompt assembly: the agent's prompt, the environment, the project's instructions."""

from __future__ import annotations

import asyncio
import datetime as dt
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

from aimon_core.agent._definition import AgentDefinition

INSTRUCTION_FILES = ("AIMON.md", "AGENTS.md", "CLAUDE.md")
_MAX_INSTRUCTIONS = 40_000


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


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=3, check=False,
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


def find_instructions(project_root: Path) -> ProjectInstructions | None:
    """Return the first of AIMON.md, AGENTS.md, CLAUDE.md in the project root."""
    for name in INSTRUCTION_FILES:
        path = project_root / name
        try:
            if path.is_file():
                text = path.read_text(encoding="utf-8", errors="replace")
                return ProjectInstructions(path=path, text=text[:_MAX_INSTRUCTIONS])
        except OSError:
            continue
    return None


def gather_environment_sync(project_root: Path, cwd: Path | None = None) -> Environment:
    """Collect the environment facts (runs git; blocking)."""
    cwd = cwd or project_root
    branch = _git(cwd, "rev-parse", "--abbrev-ref", "HEAD")
    status = _git(cwd, "status", "--porcelain") if branch is not None else None
    return Environment(
        cwd=cwd,
        platform=f"{platform.system().lower()} ({platform.release()})",
        date=dt.date.today().isoformat(),
        git_branch=branch.strip() if branch else None,
        git_status=_status_summary(status) if status is not None else None,
        instructions=find_instructions(project_root),
    )


async def gather_environment(project_root: Path, cwd: Path | None = None) -> Environment:
    """Collect the environment facts off the event loop."""
    return await asyncio.to_thread(gather_environment_sync, project_root, cwd)


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
        facts.append(f"Git status at session start: {env.git_status}")
    parts.append("# Environment\n<env>\n" + "\n".join(facts) + "\n</env>")
    if env.instructions is not None:
        parts.append(
            f"# Project instructions ({env.instructions.path.name})\n"
            "The user keeps these instructions in the project; follow them.\n"
            f"<project-instructions>\n{env.instructions.text.strip()}\n</project-instructions>"
        )
    return "\n\n".join(parts) + "\n"
