"""Subagent definitions by layer: built-in < user `agents/` < `.claude/agents/` < `.aimon/agents/`.

Each layer's folder is searched with its sub-folders, which only sort the files (Claude Code
reads `.claude/agents/team/builder.md` as the agent `builder`).

A subagent is an agent definition (aimon_core.agent); this module only finds and layers them,
and reads their files as aimon reads any file by itself (`aimon_core.filesystem.read_own`):
a project's definition must not lead out of the project, special files are never read, the
path deny rules apply, and the Mustache partials a template names (`{{> header}}`) are read
with it from its own folder only (`header.mustache` there, no link out of that folder). A file
refused is a load failure that names it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from aimon_core.agent import (
    AgentDefinition,
    AgentDefinitionError,
    parse_agent,
)
from aimon_core.skill import (
    Candidate,
    Layer,
    LayeredRegistry,
    LoadFailure,
    bundle_root,
    disabling_name,
    layer_folders,
    list_folder,
)

if TYPE_CHECKING:
    from aimon_core.filesystem import Readable
    from aimon_core.skill import DefinitionHooks

AgentRegistry = LayeredRegistry[AgentDefinition]
_NOT_AGENTS = frozenset({"readme.md", "index.md", "license.md", "changelog.md"})
_AGENT_LIMIT = 1024 * 1024
# How deep sub-folders of an agents folder are searched (Claude Code's plugins use one level).
_SUBFOLDER_DEPTH = 4
_PARTIAL_LIMIT = 256 * 1024
# `{{> name}}` with the default delimiters; a template that changes them gets no partials.
_PARTIAL_TAG = re.compile(r"\{\{>\s*([^}\s]+)\s*\}\}")
_PARTIAL_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
# A top-level `hooks:` key (in the frontmatter, or a body line that looks like one).
_HOOKS_KEY = re.compile(r"^hooks[ \t]*:", re.MULTILINE)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentRoots:
    """Where each layer's agent files live; None leaves the user layer out."""

    project_root: Path
    user_dir: Path | None
    bundle: str = "default"
    # The path deny rules (`ToolContext.path_filter`): a definition they cover is not read.
    readable: Readable | None = None


def default_agent_roots(project_root: Path, readable: Readable | None = None) -> AgentRoots:
    """Return the standard roots: the user's config folder (AIMON_HOME aware) and the project."""
    from aimon_core.session import user_config_dir

    return AgentRoots(project_root=project_root, user_dir=user_config_dir() / "agents",
                      readable=readable)


def builtin_agent_names(bundle: str = "default") -> tuple[str, ...]:
    """Return the names the bundle's `agents/index.json` lists."""
    index = bundle_root(bundle) / "agents" / "index.json"
    if not index.is_file():
        return ()
    return tuple(json.loads(index.read_text(encoding="utf-8"))["agents"])


def load_agents(roots: AgentRoots) -> AgentRegistry:
    """Load every layer's agent definitions and compose them by name."""
    return LayeredRegistry.of(_all_layers(roots))


def _all_layers(roots: AgentRoots) -> Iterator[Candidate[AgentDefinition] | LoadFailure]:
    folder = bundle_root(roots.bundle) / "agents"
    for name in builtin_agent_names(roots.bundle):
        entry = folder / f"{name}.md"
        yield _from_text(entry.read_text(encoding="utf-8"), Path(str(entry)), Layer.BUILTIN)
    project, readable = roots.project_root, roots.readable
    for root, layer, inside in layer_folders(project, roots.user_dir, "agents"):
        yield from scan_agent_folder(root, layer, inside=inside, readable=readable)


def scan_agent_folder(root: Path, layer: Layer, *, inside: Path | None = None,
                      readable: Readable | None = None
                      ) -> Iterator[Candidate[AgentDefinition] | LoadFailure]:
    """Yield a candidate or failure for each `<root>/*.md`, sub-folders included.

    Args:
        inside: the project the folder belongs to: nothing read may lead out of it.
        readable: the path deny rules.
    """
    listed = list_folder(root.absolute(), layer, inside)
    if isinstance(listed, LoadFailure):
        yield listed
        return
    for path in _agent_files(listed, _SUBFOLDER_DEPTH):
        try:
            text = _read_text(path, inside, readable)
        except (OSError, UnicodeDecodeError) as exc:
            yield LoadFailure(path=path, layer=layer, message=f"cannot be read ({exc})")
            continue
        yield _from_text(text, path, layer, inside=inside, readable=readable)


def _agent_files(entries: list[os.DirEntry[str]], depth: int) -> Iterator[Path]:
    """Yield the agent files of a folder's entries, then of its real sub-folders, by name.

    As in Claude Code, sub-folders only sort agents (`team/builder.md` is `builder`). A linked
    sub-folder is not entered (it could lead out of the project, or loop); a linked file is
    read through `read_own`, which checks where it leads.
    """
    folders: list[os.DirEntry[str]] = []
    for entry in entries:
        lowered = entry.name.lower()
        if lowered.startswith("."):
            continue
        if _real_folder(entry):
            folders.append(entry)
        elif lowered.endswith(".md") and lowered not in _NOT_AGENTS \
                and not Path(entry.path).is_dir():  # False for a loop, unlike DirEntry.is_dir
            yield Path(entry.path)
    for folder in folders if depth > 0 else ():
        try:
            inner = sorted(os.scandir(folder.path), key=lambda e: e.name)
        except OSError:
            continue
        yield from _agent_files(inner, depth - 1)


def _real_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def load_named_agent(name: str, project_root: Path, readable: Readable | None = None
                     ) -> AgentDefinition | None:
    """Return the agent `name` of `.aimon/agents`, `.claude/agents` or the user's folder.

    None when no such file exists; AgentDefinitionError when the first one found cannot be
    used, or may not be read (it leads out of the project, is a special file, is denied).
    """
    from aimon_core.session import user_config_dir

    folders = ((project_root / ".aimon" / "agents", project_root),
               (project_root / ".claude" / "agents", project_root),
               (user_config_dir() / "agents", None))
    for folder, inside in folders:
        path = folder / f"{name}.md"
        if not os.path.lexists(path):
            continue
        try:
            text = _read_text(path, inside, readable)
        except (OSError, UnicodeDecodeError) as exc:
            raise AgentDefinitionError(str(path), f"cannot be read ({exc})") from exc
        agent = checked(parse_agent(text, source=str(path), default_name=path.stem))
        return _with_partials(agent, path, inside, readable)
    return None


def _read_text(path: Path, inside: Path | None, readable: Readable | None) -> str:
    from aimon_core.filesystem import read_own

    return read_own(path, inside=inside, readable=readable, limit=_AGENT_LIMIT).decode()


def read_partials(template: str, folder: Path, readable: Readable | None = None
                  ) -> tuple[dict[str, str], tuple[str, ...]]:
    """Return the partials `template` names, read from `folder` (and warnings for the rest).

    A partial is `folder/NAME.mustache`; a name with a path in it, or a file that leads out
    of `folder`, is a special file or is denied, is left out with a warning (it renders as
    nothing).
    """
    from aimon_core.filesystem import read_own

    found: dict[str, str] = {}
    warnings: list[str] = []
    for name in dict.fromkeys(_PARTIAL_TAG.findall(template)):
        path = folder / f"{name}.mustache"
        if not _PARTIAL_NAME.fullmatch(name) or ".." in name:
            warnings.append(f"{folder}: partial {name!r} is not a plain file name; left out")
            continue
        try:
            data = read_own(path, inside=folder, readable=readable, limit=_PARTIAL_LIMIT)
            found[name] = data.decode("utf-8", "replace")
        except FileNotFoundError:
            warnings.append(f"{path}: no such partial; {{{{> {name}}}}} renders as nothing")
        except OSError as exc:
            warnings.append(f"{path}: partial not read: {exc}")
    return found, tuple(warnings)


def checked(agent: AgentDefinition) -> AgentDefinition:
    """Return the agent with its tool list and hooks checked (AgentDefinitionError if bad)."""
    from aimon_core.skill import SkillError

    warnings: list[str] = []
    try:
        agent_hooks(agent, warnings)
    except SkillError as exc:
        raise AgentDefinitionError(agent.source, exc.reason) from None
    if warnings:
        agent = dataclasses.replace(
            agent, warnings=(*agent.warnings, *(f"{agent.source}: {w}" for w in warnings)))
    return checked_tools(agent)


def agent_hooks(agent: AgentDefinition, warnings: list[str] | None = None
                ) -> DefinitionHooks | None:
    """Return the agent's own hooks (its `hooks:`, Claude Code's shape or aimon's), or None.

    They run in the agent's forks (`aimon_core.runtime`), once trusted where the agent is
    repository code. Raises SkillError for a malformed block.
    """
    from aimon_core.skill import DefinitionHooks, parse_hooks

    raw = agent.extra.get("hooks")
    if raw is None:
        return None
    hooks = parse_hooks(raw, Path(agent.source), warnings)
    if hooks.is_empty:
        return None
    return DefinitionHooks(name=agent.name, path=Path(agent.source), hooks=hooks)


def hooked_agents(root: Path, *, inside: Path | None = None,
                  where: Callable[[Path], bool] | None = None) -> tuple[DefinitionHooks, ...]:
    """Return the hooks of the agents of a folder (sub-folders too) that declare any.

    A file that never says `hooks` is not parsed; `where` picks files by path. Files that
    cannot be read or parsed are left out (loading the agents reports them).
    """
    listed = list_folder(root.absolute(), Layer.PROJECT, inside)
    found: list[DefinitionHooks] = []
    for path in _agent_files(listed, _SUBFOLDER_DEPTH) if isinstance(listed, list) else ():
        if where is not None and not where(path):
            continue
        try:
            text = _read_text(path, inside, None)
        except (OSError, UnicodeDecodeError):
            continue
        if _HOOKS_KEY.search(text) is None:  # most agents: parsed once, by the registry
            continue
        with contextlib.suppress(ValueError):  # AgentDefinitionError, SkillError
            hooks = agent_hooks(parse_agent(text, source=str(path), default_name=path.stem))
            if hooks is not None:
                found.append(hooks)
    return tuple(found)


def checked_tools(agent: AgentDefinition) -> AgentDefinition:
    """Return the agent without tool-list entries that are no tool name or rule, with a warning.

    An entry aimon cannot read is dropped, never guessed at: the agent gets fewer tools,
    never more (a list left with none gives none).
    """
    from aimon_core.permission import RuleError, parse_rule

    if not agent.tools:
        return agent
    kept: list[str] = []
    dropped: list[str] = []
    for entry in agent.tools:
        try:
            parse_rule(entry)
        except RuleError:
            dropped.append(entry)
        else:
            kept.append(entry)
    if not dropped:
        return agent
    note = (f"{agent.source}: tool list entr{'y' if len(dropped) == 1 else 'ies'} "
            f"{', '.join(map(repr, dropped))} not a tool name or rule; left out")
    return dataclasses.replace(agent, tools=tuple(kept), warnings=(*agent.warnings, note))


def _with_partials(agent: AgentDefinition, path: Path, inside: Path | None,
                   readable: Readable | None) -> AgentDefinition:
    if "{{>" not in agent.prompt_template:
        return agent
    partials, warnings = read_partials(agent.prompt_template, path.parent, readable)
    return dataclasses.replace(agent, partials=partials, warnings=agent.warnings + warnings)


def _from_text(text: str, path: Path, layer: Layer, *, inside: Path | None = None,
               readable: Readable | None = None
               ) -> Candidate[AgentDefinition] | LoadFailure:
    disabled = disabling_name(text, default=path.stem)
    if disabled is not None:
        return Candidate(name=disabled, description="(disabled)", layer=layer, path=path,
                         value=None)
    try:
        agent = checked(parse_agent(text, source=str(path), default_name=path.stem))
    except AgentDefinitionError as exc:
        return LoadFailure(path=path, layer=layer, message=exc.reason)
    agent = _with_partials(agent, path, inside, readable)
    return Candidate(name=agent.name, description=agent.description, layer=layer, path=path,
                     value=agent, warnings=agent.warnings)
