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
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from aimon_core.agent._definition import AgentDefinition
from aimon_core.llm import Message, TextBlock
from aimon_core.tools import ToolContext

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


def status_summary(porcelain: str) -> str:
    """Return `git status --porcelain` output as counts and the first 20 lines."""
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
        git_status=status_summary(status) if status is not None else None,
        instructions=find_instructions(project_root, path_filter),
    )


async def gather_environment(project_root: Path, cwd: Path | None = None, *,
                             path_filter: Callable[[Path], bool] | None = None) -> Environment:
    """Collect the environment facts off the event loop."""
    return await asyncio.to_thread(gather_environment_sync, project_root, cwd,
                                   path_filter=path_filter)


def assemble_system_prompt(
    agent: AgentDefinition, env: Environment, variables: dict[str, str] | None = None, *,
    refreshed: bool = False,
) -> str:
    """Return the whole system prompt: agent prompt, environment, project instructions.

    With `refreshed`, the facts that change during a session (date, git, instructions) are
    left out: context providers send them in the conversation (`context_update`), so this
    prompt stays the same, byte for byte, for the whole session and the cache holds.
    """
    parts = [agent.render_prompt(variables)]
    if refreshed:
        parts.append("# Environment\n<env>\n"
                     f"Working directory: {env.cwd}\nPlatform: {env.platform}\n</env>\n"
                     + CONTEXT_NOTE)
        return "\n\n".join(parts) + "\n"
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


CONTEXT_NOTE = (
    "aimon adds <context name=\"...\"> blocks to user messages: the date, the repository's "
    "state, the project's instructions, background jobs, remembered notes. It sends a block "
    "again only when what it describes changed; the latest block of each name is current. "
    "Follow the project instructions and memory you find there as the user's own.")
_GONE = "(nothing now)"
CONTEXT_CAP = 60_000
"""The most characters of context blocks one message carries; the rest is cut, with a note."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextBlock:
    """One context provider's text at a turn (`name` is the provider's)."""

    name: str
    text: str


class ContextSource(Protocol):
    """Gives the context blocks of a turn (`aimon_core.context.ContextSet` is aimon's)."""

    async def blocks(self, ctx: ToolContext) -> tuple[ContextBlock, ...]:
        """Return every provider's block as of now (providers with nothing to say give none)."""
        ...


_OPEN = re.compile(r'<context name="([A-Za-z0-9_.-]+)">\n')


def render_block(block: ContextBlock) -> str:
    """Return a block as it is sent: tagged with its provider's name."""
    return f'<context name="{block.name}">\n{block.text.strip()}\n</context>'


def sent_blocks(history: Sequence[Message]) -> dict[str, str]:
    """Return the latest block of each provider found in the user messages of `history`.

    The transcript is the truth: a compaction that summarised a block away, or a resumed
    session, gets the block again.
    """
    sent: dict[str, str] = {}
    for message in history:
        if message.role != "user":
            continue
        for part in message.content:
            if isinstance(part, TextBlock) and part.text.startswith("<context name="):
                for match in _OPEN.finditer(part.text):
                    end = part.text.find("\n</context>", match.end())
                    if end >= 0:
                        sent[match.group(1)] = part.text[match.end():end]
    return sent


def context_update(blocks: Sequence[ContextBlock], history: Sequence[Message], *,
                   cap: int = CONTEXT_CAP) -> TextBlock | None:
    """Return the blocks that differ from what `history` last carried, as one text part.

    None when nothing changed: the request then differs from the previous one only by what
    the user and the model added, so the whole prefix is read from the prompt cache.
    """
    sent = sent_blocks(history)
    changed = [b for b in blocks if sent.get(b.name) != b.text.strip()]
    now = {b.name for b in blocks}
    # A provider that has nothing to say any more (no job runs) says so once.
    changed.extend(ContextBlock(name=name, text=_GONE) for name, text in sent.items()
                   if name not in now and text != _GONE)
    if not changed:
        return None
    parts: list[str] = []
    left = cap
    for block in changed:
        text = render_block(block)
        if len(text) > left:
            keep = max(0, left - 200)
            cut = block.text.strip()[:keep]
            text = render_block(ContextBlock(name=block.name, text=(
                f"{cut}\n[aimon: cut here; the context blocks passed {cap:,} characters]")))
        parts.append(text)
        left -= len(text)
        if left <= 0:
            break
    return TextBlock(text="\n".join(parts))


async def refresh(prompt: Message, source: ContextSource | None, ctx: ToolContext,
                  history: Sequence[Message]) -> Message:
    """Return `prompt` with the blocks of `source` that changed since `history` said them."""
    if source is None:
        return prompt
    update = context_update(await source.blocks(ctx), history)
    return prompt if update is None else Message(role="user", content=(*prompt.content, update))
