"""Find skills in their layers and compose them: built-in < bundled < user < .claude < .aimon.

Start-up reads one index file for the built-in bundle and one SKILL.md per installed skill
(frontmatter and body in one read; parsing the body costs nothing, it stays text). Supporting
files are listed only when a skill is rendered.

SKILL.md files are read as aimon reads any file by itself (`aimon_core.filesystem.read_own`):
those of the project (and the project's copy of the bundle) must not lead out of it, a skills
folder that does is not listed, special files are never read, and the path deny rules apply.
A file refused is a load failure that names it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from aimon_core.skill._layers import (
    Candidate,
    LayeredRegistry,
    disabling_name,
    layer_folders,
    list_folder,
)
from aimon_core.skill._model import Layer, LoadFailure, Skill, SkillError
from aimon_core.skill._parse import parse_skill

if TYPE_CHECKING:
    from importlib.abc import Traversable

    from aimon_core.filesystem import Readable

SkillRegistry = LayeredRegistry[Skill]
BUNDLE_PACKAGE = "builtin_bundles"
_SKILL_LIMIT = 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillRoots:
    """Where each layer's skills live; None leaves a layer out."""

    project_root: Path
    user_dir: Path | None
    # The materialized copy of the built-in bundle (see materialize_bundle); None: read the
    # built-ins from the package.
    bundled_dir: Path | None = None
    bundle: str = "default"
    # The path deny rules (`ToolContext.path_filter`): a SKILL.md they cover is not read.
    readable: Readable | None = None


def bundle_root(bundle: str = "default") -> Traversable:
    """Return the package folder of a built-in bundle."""
    return resources.files(BUNDLE_PACKAGE) / bundle


def bundle_index(bundle: str = "default") -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Return (skill name, its files) for each skill the bundle's index lists."""
    index = bundle_root(bundle) / "skills" / "index.json"
    if not index.is_file():
        return ()
    data = json.loads(index.read_text(encoding="utf-8"))
    return tuple((entry["name"], tuple(entry["files"])) for entry in data["skills"])


def load_skills(roots: SkillRoots) -> SkillRegistry:
    """Load every layer's skills and compose them by name."""
    return LayeredRegistry.of(_all_layers(roots))


def default_roots(project_root: Path, bundled_dir: Path | None = None,
                  readable: Readable | None = None) -> SkillRoots:
    """Return the standard roots: the user's config folder (AIMON_HOME aware) and the project."""
    from aimon_core.session import user_config_dir

    return SkillRoots(project_root=project_root, user_dir=user_config_dir() / "skills",
                      bundled_dir=bundled_dir, readable=readable)


def _all_layers(roots: SkillRoots) -> Iterator[Candidate[Skill] | LoadFailure]:
    project, readable = roots.project_root, roots.readable
    for name, _files in bundle_index(roots.bundle):
        copy = None if roots.bundled_dir is None else roots.bundled_dir / name / "SKILL.md"
        if copy is not None and copy.is_file():
            yield _read(copy, Layer.BUNDLED, inside=project, readable=readable)
        else:
            entry = bundle_root(roots.bundle) / "skills" / name / "SKILL.md"
            path = Path(str(entry))
            yield _from_text(entry.read_text(encoding="utf-8"), path, Layer.BUILTIN)
    for folder, layer, inside in layer_folders(project, roots.user_dir, "skills"):
        yield from scan_skill_folder(folder, layer, inside=inside, readable=readable)


def scan_skill_folder(root: Path, layer: Layer, *, inside: Path | None = None,
                      readable: Readable | None = None
                      ) -> Iterator[Candidate[Skill] | LoadFailure]:
    """Yield a candidate or failure for each `<root>/<name>/SKILL.md` (or skill.md).

    Args:
        inside: the project the folder belongs to: nothing read may lead out of it.
        readable: the path deny rules.
    """
    listed = list_folder(root.absolute(), layer, inside)
    if isinstance(listed, LoadFailure):
        yield listed
        return
    for entry in listed:
        if entry.name.startswith(".") or not Path(entry.path).is_dir():  # False for a loop
            continue
        folder = Path(entry.path)
        for file_name in ("SKILL.md", "skill.md"):
            path = folder / file_name
            if os.path.lexists(path):
                yield _read(path, layer, inside=inside, readable=readable)
                break


def hooked_skills(root: Path, layer: Layer, *, inside: Path | None = None,
                  where: Callable[[Path], bool] | None = None) -> tuple[Skill, ...]:
    """Return the forked skills of a skills folder that declare hooks (their code runs).

    A SKILL.md that never says `hooks` is not parsed; `where` picks skill folders by path.
    Files that cannot be read or parsed are left out (loading the skills reports them).
    """
    from aimon_core.filesystem import read_own

    found: list[Skill] = []
    try:
        entries = sorted(os.scandir(root.absolute()), key=lambda e: e.name)
    except OSError:
        return ()
    for entry in entries:
        folder = Path(entry.path)
        if entry.name.startswith(".") or not _is_folder(entry) or (where and not where(folder)):
            continue
        name = next((n for n in ("SKILL.md", "skill.md")
                     if os.path.lexists(os.path.join(entry.path, n))), None)  # noqa: PTH118
        if name is None:
            continue
        path = folder / name
        try:
            data = read_own(path, inside=inside, limit=_SKILL_LIMIT)
        except OSError:
            continue
        if b"hooks" not in data:
            continue
        loaded = _from_text(data.decode("utf-8", "replace"), path, layer)
        skill = loaded.value if isinstance(loaded, Candidate) else None
        if skill is not None and not skill.hooks.is_empty and skill.execution.mode == "fork":
            found.append(skill)
    return tuple(found)


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()
    except OSError:  # a loop of links
        return False


def _read(path: Path, layer: Layer, *, inside: Path | None,
          readable: Readable | None) -> Candidate[Skill] | LoadFailure:
    from aimon_core.filesystem import read_own

    try:
        text = read_own(path, inside=inside, readable=readable, limit=_SKILL_LIMIT).decode()
    except (OSError, UnicodeDecodeError) as exc:
        return LoadFailure(path=path, layer=layer, message=f"cannot be read ({exc})")
    return _from_text(text, path, layer)


def _from_text(text: str, path: Path, layer: Layer) -> Candidate[Skill] | LoadFailure:
    disabled = disabling_name(text, default=path.parent.name)
    if disabled is not None:
        return Candidate(name=disabled, description="(disabled)", layer=layer, path=path,
                         value=None)
    try:
        skill = parse_skill(text, path=path)
    except SkillError as exc:
        return LoadFailure(path=path, layer=layer, message=exc.reason)
    return Candidate(name=skill.name, description=skill.description, layer=layer, path=path,
                     value=skill, warnings=skill.warnings)
