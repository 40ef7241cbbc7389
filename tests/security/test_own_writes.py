"""Class: files aimon writes by itself, through folders a cloned repository may have linked.

At every start aimon copies the built-in skills to `.aimon/bundled-skills/` of the project
(the one write it makes in the project on its own; sessions, checkpoints, caches and spilled
results live under its data folder). A repository may hold `.aimon` or the copy's folder as a
link to anywhere, and aimon may be started in the home folder. The table is every write by
every such layout: nothing may be written outside the project, nor into the home folder.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest


def _materialize(project: Path) -> None:
    from aimon_core.skill import materialize_bundle

    with contextlib.suppress(OSError):  # refusing is fine: the built-ins come from the package
        materialize_bundle(project)


def _extensions(project: Path) -> None:
    from aimon_core.runtime._extensions import load_extension_registries

    skills, _ = load_extension_registries(project)
    assert skills.get("commit") is not None  # the built-ins are still there


OWN_WRITES: tuple[tuple[str, Callable[[Path], None]], ...] = (
    ("materialize_bundle", _materialize),
    ("runtime_extensions", _extensions),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """Where the project is and what it links to `outside`."""

    id: str
    links: tuple[tuple[str, str], ...] = ()
    """(path in the project, target: `@X@` outside, `@H@` the home folder)."""
    home_is: str = "elsewhere"
    """`project`: the project is the home folder; `parent`: the project holds it."""


LAYOUTS = (
    Layout(id="aimon_dir_links_outside", links=((".aimon", "@X@"),)),
    Layout(id="bundle_dir_links_outside", links=((".aimon/bundled-skills", "@X@"),)),
    Layout(id="aimon_dir_links_home", links=((".aimon", "@H@"),)),
    Layout(id="aimon_dir_links_outside_file", links=((".aimon", "@X@/file"),)),
    Layout(id="project_is_home", home_is="project"),
    Layout(id="project_holds_home", home_is="parent"),
)


def _build(layout: Layout, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
           ) -> tuple[Path, Path, Path]:
    project, outside = tmp_path / "proj", tmp_path / "outside"
    home = {"project": project, "parent": project / "home"}.get(layout.home_is,
                                                                tmp_path / "home")
    for folder in (project, outside, home):
        folder.mkdir(parents=True, exist_ok=True)
    (outside / "file").write_text("keep\n")
    monkeypatch.setenv("HOME", str(home))
    for relative, target in layout.links:
        link = project / relative
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target.replace("@X@", str(outside)).replace("@H@", str(home)))
    return project, outside, home


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() if p.is_file() else "/"
            for p in sorted(folder.rglob("*"))}


CASES = [pytest.param(layout, call, id=f"{name}-{layout.id}")
         for layout in LAYOUTS for name, call in OWN_WRITES]


@pytest.mark.parametrize(("layout", "call"), CASES)
def test_own_writes_stay_in_the_project(layout: Layout, call: Callable[[Path], None],
                                        tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    project, outside, home = _build(layout, tmp_path, monkeypatch)
    before_outside = _tree(outside)
    before_home = {} if home in (project, project / "home") else _tree(home)
    call(project)
    assert _tree(outside) == before_outside, "aimon wrote outside the project"
    if layout.home_is == "elsewhere":
        assert _tree(home) == before_home, "aimon wrote into the home folder"
    else:  # the project is the home folder, or holds it (`/`, `/home`)
        assert not (project / ".aimon").exists(), "aimon wrote into the home folder"


def test_a_real_folder_still_gets_the_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    from aimon_core.skill import materialize_bundle

    target = materialize_bundle(tmp_path / "proj")
    assert (target / "commit" / "SKILL.md").is_file() and not target.is_symlink()
    assert not (tmp_path / "proj" / ".aimon").is_symlink()
