"""The context providers of a coding session: date, repository, instructions, background jobs.

Each reads what it describes when asked, at every turn; the executor sends a block again only
when its text changed (`aimon_core.agent.context_update`). What they read obeys the rules of
aimon's own reads (README, "What aimon reads and runs by itself"): git runs only in a
repository whose configuration is proven inert, files are read with `read_own` (no link out
of the project, no special file, path deny rules apply).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from aimon_core.tools import ToolContext

log = logging.getLogger(__name__)

_GIT_TIMEOUT = 3.0
_RECENT_COMMITS = 5
_IMPORT_DEPTH = 5
_MAX_FILE = 40_000
# `@path` outside code: not an e-mail address (a word character before) nor in backticks.
_IMPORT = re.compile(r"(?<![\w`@])@((?:\.{1,2}/|[\w-])[\w./-]*)")


class ContextProvider(Protocol):
    """Describes one thing for the model's context, as it is now."""

    @property
    def name(self) -> str:
        """Return the block's name (`git`, `instructions` ...)."""
        ...

    def read(self, ctx: ToolContext) -> str | None:
        """Return the block's text now, or None when there is nothing to say (blocking)."""
        ...


@dataclass(frozen=True, slots=True)
class DateProvider:
    """Today's date (a session may cross midnight)."""

    today: Callable[[], dt.date] = dt.date.today
    name: str = "date"

    def read(self, ctx: ToolContext) -> str | None:
        """Return today's date."""
        return f"Today's date: {self.today().isoformat()}"


@dataclass(frozen=True, slots=True)
class GitProvider:
    """The branch, the status and the latest commits of the project's repository."""

    name: str = "git"

    def read(self, ctx: ToolContext) -> str | None:
        """Return the repository's state; git runs only where its configuration is inert."""
        from aimon_core.agent import status_summary
        from aimon_core.filesystem import find_repository, read_branch, repository_is_inert

        repository = find_repository(ctx.cwd)
        if repository is None:
            return "Git repository: no"
        lines = [f"Git branch: {read_branch(repository) or 'unknown'}"]
        if repository.worktree is None or not repository_is_inert(ctx.cwd):
            lines.append("Git status: unknown (git runs only where the repository's "
                         "configuration runs nothing)")
            return "\n".join(lines)
        status = _git(ctx.cwd, "status", "--porcelain")
        lines.append("Git status: " + (status_summary(status) if status is not None
                                       else "unknown"))
        log_text = _git(ctx.cwd, "log", f"-n{_RECENT_COMMITS}", "--format=%h %s",
                        "--no-color")
        if log_text and log_text.strip():
            lines.append("Recent commits:\n" + log_text.strip())
        return "\n".join(lines)


def _git(cwd: Path, *args: str) -> str | None:
    """Run a read-only git command in a proven-inert repository; None if it fails."""
    from aimon_core.shell import model_env

    env = {**model_env(os.environ), "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0",
           "GIT_PAGER": "cat"}
    try:
        done = subprocess.run(
            ["git", "--no-optional-locks", *args], cwd=cwd, env=env, capture_output=True,
            text=True, timeout=_GIT_TIMEOUT, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


@dataclass(slots=True)
class InstructionsProvider:
    """The project's instruction file (AIMON.md, else AGENTS.md, else CLAUDE.md) and the
    files it imports (`@path`, relative to the importing file, inside the project, five
    levels deep), read again when one of them changed on disk."""

    name: str = "instructions"
    _cache: tuple[tuple[tuple[str, int, int], ...], str | None] | None = field(
        default=None, repr=False)

    def read(self, ctx: ToolContext) -> str | None:
        """Return the instructions with their imports; cached while no file changed."""
        if self._cache is not None and all(
                _stamp(Path(p)) == (p, m, s) for p, m, s in self._cache[0]):
            return self._cache[1]
        from aimon_core.agent import INSTRUCTION_FILES

        stamps: list[tuple[str, int, int]] = []
        text: str | None = None
        for file_name in INSTRUCTION_FILES:
            path = ctx.project_root / file_name
            stamps.append(_stamp(path))
            body = _read(path, ctx, [])
            if body is not None:
                seen: set[Path] = {path}
                parts = [f"From {file_name} (kept by the user in the project; follow it):",
                         body.strip()]
                parts.extend(_imports(body, path, ctx, seen, stamps, depth=1))
                text = "\n\n".join(parts)
                break
        self._cache = (tuple(stamps), text)
        return text


def _stamp(path: Path) -> tuple[str, int, int]:
    try:
        info = path.stat()
    except OSError:
        return (str(path), -1, -1)
    return (str(path), info.st_mtime_ns, info.st_size)


def _read(path: Path, ctx: ToolContext, notes: list[str]) -> str | None:
    from aimon_core.filesystem import RefusedFileError, read_own

    if not os.path.lexists(path):
        return None
    try:
        data = read_own(path, inside=ctx.project_root, readable=ctx.path_filter,
                        limit=_MAX_FILE * 4)
    except RefusedFileError as exc:
        log.warning("%s: not read: %s", path, exc)
        notes.append(f"{path}: not read: {exc}")
        return None
    except OSError:
        return None
    return data.decode("utf-8", errors="replace")[:_MAX_FILE]


def _imports(body: str, source: Path, ctx: ToolContext, seen: set[Path],
             stamps: list[tuple[str, int, int]], *, depth: int) -> list[str]:
    """Return the files `body` imports, each once, depth first, as sections."""
    if depth > _IMPORT_DEPTH:
        return []
    sections: list[str] = []
    for target in _import_paths(body):
        path = Path(os.path.normpath(source.parent / target))
        if path in seen:
            continue
        seen.add(path)
        stamps.append(_stamp(path))
        notes: list[str] = []
        text = _read(path, ctx, notes)
        if text is None:
            if notes:
                sections.append(f"(@{target} not imported: {notes[0].split(': ', 2)[-1]})")
            continue
        name = os.path.relpath(path, ctx.project_root)
        sections.append(f"Imported from @{target} ({name}):\n{text.strip()}")
        sections.extend(_imports(text, path, ctx, seen, stamps, depth=depth + 1))
    return sections


def _import_paths(body: str) -> list[str]:
    """Return the `@path` imports of Markdown text, outside fenced code and code spans."""
    found: list[str] = []
    fenced = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            continue
        plain = re.sub(r"`[^`]*`", "", line)
        found.extend(m.group(1).rstrip(".") for m in _IMPORT.finditer(plain))
    return found


@runtime_checkable
class ListsJobs(Protocol):
    """A shell that can list its background jobs (`LocalShell`)."""

    def jobs(self) -> tuple[tuple[str, str, str], ...]:
        """Return (shell id, command, status) of every background job."""
        ...


@dataclass(frozen=True, slots=True)
class JobsProvider:
    """The background shells still running in this session."""

    name: str = "jobs"

    def read(self, ctx: ToolContext) -> str | None:
        """Return the running jobs, or None when none runs."""
        if not isinstance(ctx.shell, ListsJobs):
            return None
        running = [(i, c) for i, c, status in ctx.shell.jobs() if status == "running"]
        if not running:
            return None
        lines = [f"- {shell_id}: {command[:200]}" for shell_id, command in running]
        return ("Background shells still running (read them with BashOutput, stop them "
                "with KillShell):\n" + "\n".join(lines))


@dataclass(frozen=True, slots=True)
class CallableProvider:
    """A provider made of a name and a function (a runtime's background subagents)."""

    name: str
    function: Callable[[ToolContext], str | None]

    def read(self, ctx: ToolContext) -> str | None:
        """Return what the function says now."""
        return self.function(ctx)
