"""Subagent definitions by layer: built-in < user `agents/` < `.claude/agents/` < `.aimon/agents/`.

A subagent is an agent definition (aimon_core.agent); this module only finds and layers them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from aimon_core.agent._definition import (
    AgentDefinition,
    AgentDefinitionError,
    parse_agent,
)
from aimon_core.skill._layers import Candidate, LayeredRegistry, disabling_name
from aimon_core.skill._model import Layer, LoadFailure
from aimon_core.skill._registry import bundle_root

AgentRegistry = LayeredRegistry[AgentDefinition]
_NOT_AGENTS = frozenset({"readme.md", "index.md", "license.md", "changelog.md"})


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentRoots:
    """Where each layer's agent files live; None leaves the user layer out."""

    project_root: Path
    user_dir: Path | None
    bundle: str = "default"


def default_agent_roots(project_root: Path) -> AgentRoots:
    """Return the standard roots: the user's config folder (AIMON_HOME aware) and the project."""
    from aimon_core.session import user_config_dir

    return AgentRoots(project_root=project_root, user_dir=user_config_dir() / "agents")


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
    if roots.user_dir is not None:
        yield from scan_agent_folder(roots.user_dir, Layer.USER)
    yield from scan_agent_folder(roots.project_root / ".claude" / "agents", Layer.CLAUDE_PROJECT)
    yield from scan_agent_folder(roots.project_root / ".aimon" / "agents", Layer.PROJECT)


def scan_agent_folder(root: Path, layer: Layer
                      ) -> Iterator[Candidate[AgentDefinition] | LoadFailure]:
    """Yield a candidate or failure for each `<root>/*.md`."""
    root = root.absolute()
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as exc:
        yield LoadFailure(path=root, layer=layer, message=f"cannot list the folder ({exc})")
        return
    for entry in entries:
        lowered = entry.name.lower()
        if lowered.startswith(".") or not lowered.endswith(".md") or lowered in _NOT_AGENTS:
            continue
        if not entry.is_file():
            continue
        path = Path(entry.path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            yield LoadFailure(path=path, layer=layer, message=f"cannot be read ({exc})")
            continue
        yield _from_text(text, path, layer)


def _from_text(text: str, path: Path, layer: Layer
               ) -> Candidate[AgentDefinition] | LoadFailure:
    disabled = disabling_name(text, default=path.stem)
    if disabled is not None:
        return Candidate(name=disabled, description="(disabled)", layer=layer, path=path,
                         value=None)
    try:
        agent = parse_agent(text, source=str(path), default_name=path.stem)
    except AgentDefinitionError as exc:
        return LoadFailure(path=path, layer=layer, message=exc.reason)
    return Candidate(name=agent.name, description=agent.description, layer=layer, path=path,
                     value=agent, warnings=agent.warnings)
