"""Turn a skill into the prompt the model reads, and narrow a fork's tools."""

from __future__ import annotations

import logging
import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from aimon_core.skill._model import Skill

# Folders never listed as supporting files; the walk also stops at these many entries.
_SKIP_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", ".mypy_cache"})
_MAX_FILES = 200
# The Agent Skills layout's folders: their files are listed first, as "Available Files".
_STANDARD_DIRS = frozenset({"scripts", "references", "assets"})
log = logging.getLogger(__name__)


class ToolIntersectionError(ValueError):
    """A forked skill's tools and its agent's tools have nothing in common."""

    def __init__(self, skill_tools: Sequence[str], agent_tools: Sequence[str]) -> None:
        super().__init__(
            f"the skill's allowed-tools {list(skill_tools)!r} and the agent's tools "
            f"{list(agent_tools)!r} have no tool in common")
        self.skill_tools = tuple(skill_tools)
        self.agent_tools = tuple(agent_tools)


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderContext:
    """Values a skill body may name; exactly one of session_id and execution_id is set."""

    agent_runtime_id: str
    user: str
    session_id: str | None = None
    execution_id: str | None = None
    # Where ${AIMON_SKILL_DIR} points when not the skill's own folder (a materialized copy).
    skill_dir: Path | None = None

    def __post_init__(self) -> None:
        if (self.session_id is None) == (self.execution_id is None):
            raise ValueError("RenderContext needs exactly one of session_id and execution_id")


def split_arguments(args: str) -> list[str]:
    """Split arguments like a shell (quotes respected); unbalanced quotes split on spaces."""
    try:
        return shlex.split(args)
    except ValueError:
        return args.split()


def supporting_files(directory: Path) -> tuple[Path, ...]:
    """List the files beside SKILL.md (scripts/, references/, assets/, any other), full paths."""
    found: list[Path] = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(files):
            path = Path(root) / name
            if path.parent == directory and name.lower() == "skill.md":
                continue
            if name.startswith(".") or len(found) >= _MAX_FILES:
                continue
            found.append(path)
    return tuple(found)


def _placeholder(arguments: Sequence[str]) -> re.Pattern[str]:
    names = sorted(arguments, key=len, reverse=True)
    named = "|".join(re.escape(n) for n in names)
    bare_named = rf"|\$(?P<bare>{named})(?![A-Za-z0-9_])" if names else ""
    return re.compile(
        r"\$(?P<all>ARGUMENTS)(?![A-Za-z0-9_])|\$\{ARGUMENTS\}"
        r"|\$(?P<pos>[1-9][0-9]*)|\$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)\}" + bare_named)


def render_skill(skill: Skill, args: str, ctx: RenderContext, *,
                 extra: Mapping[str, str] | None = None,
                 warn: Callable[[str], None] | None = None) -> str:
    """Return the skill's body with arguments and variables filled, then its supporting files.

    `$ARGUMENTS` is the whole argument string, `$1..$N` the shell-split words, and each name in
    the skill's `arguments` (`$name` or `${name}`) its word by position. `${AIMON_SKILL_DIR}`,
    `${AIMON_AGENT_RUNTIME_ID}`, `${AIMON_SESSION_ID}`, `${AIMON_EXECUTION_ID}` and
    `${AIMON_USER}` come from `ctx`, as do Claude Code's `${CLAUDE_SKILL_DIR}` and
    `${CLAUDE_SESSION_ID}`; any other `${VAR}` stays as written.
    Arguments the body never mentions are appended as `ARGUMENTS: …`, as Claude Code does.

    `extra` adds variables of the caller's (`${NAME}`; the built-in names above win). A
    variable that fills in empty (no session: `${AIMON_SESSION_ID}`) is told to `warn` (the log
    by default). The files beside SKILL.md follow, by name: the standard folders' (scripts/,
    references/, assets/) as "Available Files", the rest as "Other Files".
    """
    words = split_arguments(args)
    directory = (ctx.skill_dir or skill.directory).absolute()
    variables = {
        "AIMON_SKILL_DIR": str(directory),
        "AIMON_AGENT_RUNTIME_ID": ctx.agent_runtime_id,
        "AIMON_SESSION_ID": ctx.session_id or "",
        "AIMON_EXECUTION_ID": ctx.execution_id or "",
        "AIMON_USER": ctx.user,
        # Claude Code's names for the same. ${CLAUDE_PLUGIN_ROOT} stays as written: aimon has
        # no plugins, and the skills that name it are mostly about writing plugins (their
        # examples must keep it).
        "CLAUDE_SKILL_DIR": str(directory),
        "CLAUDE_SESSION_ID": ctx.session_id or "",
    }
    variables = {**(extra or {}), **variables}
    warn = warn or (lambda text: log.warning("%s", text))
    position = {name: i for i, name in enumerate(skill.arguments)}
    mentioned = False

    def word(index: int) -> str:
        return words[index] if index < len(words) else ""

    def fill(match: re.Match[str]) -> str:
        nonlocal mentioned
        text = match.group(0)
        if match.group("all") or text == "${ARGUMENTS}":
            mentioned = True
            return args.strip()
        if match.group("pos"):
            mentioned = True
            return word(int(match.group("pos")) - 1)
        name = match.group("braced") or match.groupdict().get("bare")
        if name in position:
            mentioned = True
            return word(position[name])
        value = variables.get(name or "", text)
        if not value:
            warn(f"{skill.path}: ${{{name}}} is empty here")
        return value

    body = _placeholder(skill.arguments).sub(fill, skill.body)
    if args.strip() and not mentioned:
        body = f"{body.rstrip()}\n\nARGUMENTS: {args.strip()}"
    files = supporting_files(directory) if directory.is_dir() else ()
    return (body.rstrip() + _files_section(directory, files)).rstrip() + "\n"


def _files_section(directory: Path, files: Sequence[Path]) -> str:
    """Return the skill's files by name: the standard folders' first, then the others."""
    names = [path.relative_to(directory).as_posix() for path in files]
    available = [n for n in names if n.split("/", 1)[0] in _STANDARD_DIRS]
    other = [n for n in names if n not in available]
    parts = []
    if available:
        parts.append("Available Files:\n" + "\n".join(f"- {n}" for n in available))
    if other:
        parts.append("Other Files:\n" + "\n".join(f"- {n}" for n in other))
    if not parts:
        return ""
    return (f"\n\nThis skill's files, by name under its base directory {directory} (read or "
            "run them as the instructions say):\n" + "\n".join(parts))


def _split_rule(rule: str) -> tuple[str, str | None]:
    name, paren, rest = rule.strip().partition("(")
    return name.strip(), (rest[:-1].strip() if paren and rest.endswith(")") else None)


def intersect_tools(skill_tools: Sequence[str], agent_tools: Sequence[str] | None
                    ) -> tuple[str, ...]:
    """Return the tools a forked skill may use: what both its allowed-tools and its agent allow.

    An empty list (or None for the agent) means no restriction from that side. A bare tool on
    one side and a pattern for it on the other keeps the pattern; two different patterns for one
    tool are dropped. Lists that share nothing raise ToolIntersectionError: an empty result
    would otherwise read as "no restriction".
    """
    if not agent_tools:
        return tuple(skill_tools)
    if not skill_tools:
        return tuple(agent_tools)
    mine, theirs = _by_tool(skill_tools), _by_tool(agent_tools)
    result: list[str] = []
    for tool, patterns in mine.items():
        other = theirs.get(tool)
        if other is None:
            continue
        if None in patterns and None in other:
            result.append(tool)
            continue
        keep = (
            [p for p in other if p is not None] if None in patterns
            else [p for p in patterns if p is not None] if None in other
            else [p for p in patterns if p in other]
        )
        result.extend(f"{tool}({p})" for p in keep if p is not None)
    if not result:
        raise ToolIntersectionError(skill_tools, agent_tools)
    return tuple(dict.fromkeys(result))


def _by_tool(rules: Sequence[str]) -> dict[str, list[str | None]]:
    grouped: dict[str, list[str | None]] = {}
    for rule in rules:
        tool, pattern = _split_rule(rule)
        grouped.setdefault(tool, []).append(pattern)
    return grouped
