"""Bundles as values (the seeds' AgentBundle and AgentBundleRegistry).

A bundle is a folder: `agent.md` (an agent), `agents/*.md` (its subagents) and
`skills/NAME/SKILL.md` (its skills) — the shape of aimon's built-in `default` bundle. It is
installed from a folder (copied under the user's `bundles/`) or from a Python package that
ships one (recorded by the package's name), and an agent carries bundles: running a bundle's
agent (`--agent NAME`) or a user agent whose frontmatter says `bundles: [NAME]` adds their
subagents and skills to that runtime, below the user's and the project's own (theirs win by
name).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TypeVar

from aimon_core._atomic import private_dir, write_atomic
from aimon_core.agent import AgentDefinition, AgentDefinitionError, load_agent_file
from aimon_core.skill import Candidate, Layer, LayeredRegistry, Skill, scan_skill_folder

BUILTIN = "default"
_PACKAGES = "packages.json"
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
T = TypeVar("T")


class BundleError(Exception):
    """A bundle cannot be loaded, installed or found; `name` is the bundle's or its source's."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"bundle {name!r}: {reason}")
        self.name = name
        self.reason = reason


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentBundle:
    """An agent, its subagents and its skills, as one value."""

    name: str
    source: str  # "built-in", the folder it was installed to, or "package NAME"
    folder: Path
    agent: AgentDefinition | None
    subagents: tuple[AgentDefinition, ...]
    skills: tuple[Skill, ...]
    warnings: tuple[str, ...] = ()


def load_bundle(folder: Path, *, name: str, source: str) -> AgentBundle:
    """Read a bundle folder; raise BundleError when it holds no agent, subagent or skill."""
    if not folder.is_dir():
        raise BundleError(name, f"{folder} is not a folder")
    warnings: list[str] = []
    agent = None
    if (folder / "agent.md").is_file():
        try:
            agent = load_agent_file(folder / "agent.md")
        except AgentDefinitionError as exc:
            warnings.append(str(exc))
    subagents = []
    for path in sorted((folder / "agents").glob("*.md")):
        try:
            subagents.append(load_agent_file(path))
        except AgentDefinitionError as exc:
            warnings.append(str(exc))
    skills = [c.value for c in _skill_candidates(folder) if c.value is not None]
    if agent is None and not subagents and not skills:
        raise BundleError(name, f"{folder} has no agent.md, agents/*.md or skills/*/SKILL.md")
    return AgentBundle(name=name, source=source, folder=folder, agent=agent,
                       subagents=tuple(subagents), skills=tuple(skills),
                       warnings=tuple(warnings))


def _skill_candidates(folder: Path) -> Iterator[Candidate[Skill]]:
    if (folder / "skills").is_dir():
        for found in scan_skill_folder(folder / "skills", Layer.BUNDLED, inside=folder):
            if isinstance(found, Candidate):
                yield found


def package_folder(package: str) -> Path:
    """Return the folder a Python package ships its bundle in (the package's own folder)."""
    try:
        root = resources.files(package)
    except (ModuleNotFoundError, TypeError) as exc:
        raise BundleError(package, f"no Python package {package!r} is installed") from exc
    folder = Path(str(root))
    if not folder.is_dir():
        raise BundleError(package, "the package is not a folder on disk (a zip?)")
    return folder


class AgentBundleRegistry:
    """The bundles one user has: the built-in one, and those installed under `folder`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def default(cls) -> AgentBundleRegistry:
        """Return the user's bundles (`$AIMON_HOME/config/bundles`)."""
        from aimon_core.session import user_config_dir

        return cls(user_config_dir() / "bundles")

    def all(self) -> tuple[AgentBundle, ...]:
        """Return every bundle: the built-in one, installed folders, then packages, by name."""
        found = [load_bundle(package_folder("builtin_bundles") / BUILTIN, name=BUILTIN,
                             source="built-in")]
        if self.folder.is_dir():
            found += [load_bundle(p, name=p.name, source=str(p))
                      for p in sorted(self.folder.iterdir()) if p.is_dir()]
        for name, package in sorted(self._packages().items()):
            found.append(load_bundle(package_folder(package), name=name,
                                     source=f"package {package}"))
        return tuple(found)

    def get(self, name: str) -> AgentBundle | None:
        """Return the bundle called `name`, or None."""
        return next((b for b in self.all() if b.name == name), None)

    def install_folder(self, source: Path, name: str | None = None) -> AgentBundle:
        """Copy a bundle folder in as `name` (default: the folder's name); return it."""
        name = _check(name or source.resolve().name)
        load_bundle(source, name=name, source=str(source))  # refuse what would not load
        target = private_dir(self.folder) / name
        if target.exists() or name in self._packages() or name == BUILTIN:
            raise BundleError(name, "a bundle of this name is installed; remove it first")
        shutil.copytree(source, target, symlinks=False)
        return load_bundle(target, name=name, source=str(target))

    def install_package(self, package: str, name: str | None = None) -> AgentBundle:
        """Record a Python package's bundle as `name` (default: the package's name)."""
        name = _check(name or package.rsplit(".", 1)[-1].replace("_", "-"))
        bundle = load_bundle(package_folder(package), name=name, source=f"package {package}")
        if (self.folder / name).exists() or name in self._packages() or name == BUILTIN:
            raise BundleError(name, "a bundle of this name is installed; remove it first")
        self._write_packages({**self._packages(), name: package})
        return bundle

    def remove(self, name: str) -> bool:
        """Remove an installed bundle; False if none of that name is installed."""
        packages = self._packages()
        if name in packages:
            del packages[name]
            self._write_packages(packages)
            return True
        target = self.folder / _check(name)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
            return True
        return False

    def _packages(self) -> dict[str, str]:
        try:
            data = json.loads((self.folder / _PACKAGES).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise BundleError(_PACKAGES, f"unreadable: {exc}") from exc
        return {k: v for k, v in data.items() if isinstance(v, str)}

    def _write_packages(self, packages: dict[str, str]) -> None:
        private_dir(self.folder)
        write_atomic(self.folder / _PACKAGES,
                     (json.dumps(packages, indent=2, sort_keys=True) + "\n").encode())


def _check(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise BundleError(name, "a bundle's name is lower-case letters, digits, '.', '_', '-'")
    return name


def carried_bundles(agent: AgentDefinition) -> tuple[str, ...]:
    """Return the bundles `agent` carries: its frontmatter's `bundles` (a name or a list)."""
    value = agent.extra.get("bundles")
    names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return tuple(n for n in names if isinstance(n, str) and n)


def with_bundles(skills: LayeredRegistry[Skill], agents: LayeredRegistry[AgentDefinition],
                 bundles: Iterable[AgentBundle]
                 ) -> tuple[LayeredRegistry[Skill], LayeredRegistry[AgentDefinition]]:
    """Return the registries with the bundles' skills and subagents in the bundled layer."""
    bundles = tuple(bundles)
    if not bundles:
        return skills, agents
    skill_candidates = [c for b in bundles for c in _skill_candidates(b.folder)]
    agent_candidates = [Candidate(name=a.name, description=a.description, layer=Layer.BUNDLED,
                                  path=Path(a.source), value=a)
                        for b in bundles for a in b.subagents]
    return _merged(skills, skill_candidates), _merged(agents, agent_candidates)


def _merged(registry: LayeredRegistry[T], extra: list[Candidate[T]]) -> LayeredRegistry[T]:
    existing = [Candidate(name=e.name, description=e.description, layer=e.layer, path=e.path,
                          value=None if e.disabled else registry.get(e.name))
                for e in registry.listing()]
    order = list(Layer)
    ranked = sorted([*extra, *existing], key=lambda c: order.index(c.layer))
    return LayeredRegistry(ranked, registry.failures)
