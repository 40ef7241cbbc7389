"""Skill layers: built-in < bundled < user < .claude < .aimon; disabling; materialization."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from aimon_core.skill import (
    Layer,
    SkillRoots,
    bundle_index,
    default_roots,
    load_skills,
    materialize_bundle,
    parse_skill,
)
from aimon_core.skill._parse import load_frontmatter


def write_skill(root: Path, folder: str, front: str, body: str = "Body.\n") -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}---\n{body}", encoding="utf-8")
    return path


def roots(tmp_path: Path, bundled: Path | None = None) -> SkillRoots:
    return SkillRoots(project_root=tmp_path / "repo", user_dir=tmp_path / "user" / "skills",
                      bundled_dir=bundled)


def test_builtins_load_from_the_index(tmp_path: Path) -> None:
    registry = load_skills(roots(tmp_path))
    assert registry.names() == ("commit", "init", "review")
    assert {e.layer for e in registry.listing()} == {Layer.BUILTIN}
    assert registry.failures == ()
    review = registry.get("review")
    assert review is not None and review.execution.mode == "fork"
    assert review.execution.agent == "code-reviewer"


def test_index_lists_exactly_the_bundle_files() -> None:
    skills_dir = Path(str(resources.files("builtin_bundles") / "default" / "skills"))
    on_disk = {
        p.parent.name: sorted(f.relative_to(p.parent).as_posix()
                              for f in p.parent.rglob("*") if f.is_file())
        for p in skills_dir.glob("*/SKILL.md")
    }
    assert {name: sorted(files) for name, files in bundle_index()} == on_disk
    for name in on_disk:
        skill = parse_skill((skills_dir / name / "SKILL.md").read_text(),
                            path=skills_dir / name / "SKILL.md")
        assert skill.name == name and skill.warnings == ()


def test_later_layers_win_by_name(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    user = write_skill(tmp_path / "user" / "skills", "commit", "name: commit\ndescription: u\n")
    claude = write_skill(repo / ".claude" / "skills", "commit", "name: commit\ndescription: c\n")
    write_skill(repo / ".claude" / "skills", "lint", "name: lint\ndescription: claude lint\n")
    project = write_skill(repo / ".aimon" / "skills", "lint", "name: lint\ndescription: ours\n")
    registry = load_skills(roots(tmp_path))
    by_name = {e.name: e for e in registry.listing()}
    assert by_name["commit"].layer == Layer.CLAUDE_PROJECT and by_name["commit"].path == claude
    assert by_name["commit"].description == "c"
    assert by_name["commit"].shadows[-1] == user and len(by_name["commit"].shadows) == 2
    assert by_name["lint"].layer == Layer.PROJECT and by_name["lint"].path == project
    skill = registry.get("lint")
    assert skill is not None and skill.description == "ours"
    assert [e.name for e in registry.listing()] == ["commit", "init", "lint", "review"]


def test_empty_body_disables_a_builtin(tmp_path: Path) -> None:
    write_skill(tmp_path / "repo" / ".aimon" / "skills", "commit", "name: commit\n", body="\n")
    (tmp_path / "repo" / ".aimon" / "skills" / "init").mkdir()
    (tmp_path / "repo" / ".aimon" / "skills" / "init" / "SKILL.md").write_text("")
    registry = load_skills(roots(tmp_path))
    assert registry.get("commit") is None and registry.get("init") is None
    assert registry.names() == ("review",)
    entries = {e.name: e for e in registry.listing()}
    assert entries["commit"].disabled and entries["commit"].layer == Layer.PROJECT
    assert entries["init"].disabled


def test_empty_body_with_nothing_to_disable_warns(tmp_path: Path) -> None:
    write_skill(tmp_path / "repo" / ".aimon" / "skills", "ghost", "name: ghost\n", body="")
    entry = {e.name: e for e in load_skills(roots(tmp_path)).listing()}["ghost"]
    assert entry.disabled and "no lower layer defines it" in entry.warnings[0]


def test_failures_are_reported_and_the_rest_load(tmp_path: Path) -> None:
    skills = tmp_path / "repo" / ".aimon" / "skills"
    bad = write_skill(skills, "bad", "name: bad\n")
    broken = write_skill(skills, "broken", "name: [oops\n")
    write_skill(skills, "good", "name: good\ndescription: fine\n")
    write_skill(skills, "Named", "name: named-other\ndescription: fine\n")
    (skills / "no-skill-md").mkdir()
    (skills / ".hidden").mkdir()
    registry = load_skills(roots(tmp_path))
    assert {(f.path, f.layer) for f in registry.failures} == {
        (bad, Layer.PROJECT), (broken, Layer.PROJECT)}
    messages = {f.path.parent.name: f.message for f in registry.failures}
    assert "description is missing" in messages["bad"]
    # `name: [oops` is read as the text it says, which is no name: the folder's is used.
    assert "description is missing" in messages["broken"]
    entries = {e.name: e for e in registry.listing()}
    assert "good" in entries and "differs from its folder" in entries["named-other"].warnings[0]


def test_lower_case_skill_md_is_found(tmp_path: Path) -> None:
    folder = tmp_path / "repo" / ".aimon" / "skills" / "low"
    folder.mkdir(parents=True)
    (folder / "skill.md").write_text("---\nname: low\ndescription: d\n---\nb\n")
    assert load_skills(roots(tmp_path)).get("low") is not None


def test_user_layer_follows_aimon_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIMON_HOME", str(tmp_path / "home"))
    write_skill(tmp_path / "home" / "config" / "skills", "mine", "name: mine\ndescription: d\n")
    registry = load_skills(default_roots(tmp_path / "repo"))
    assert {e.name: e.layer for e in registry.listing()}["mine"] == Layer.USER


def test_materialize_copies_and_recopies(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    target = materialize_bundle(repo)
    assert target == repo / ".aimon" / "bundled-skills"
    template = target / "init" / "references" / "template.md"
    assert template.is_file() and (target / "commit" / "SKILL.md").is_file()
    assert (target / ".gitignore").read_text().endswith("*\n")
    template.write_text("edited")
    (target / "stale").mkdir()
    (target / "stale" / "SKILL.md").write_text("---\nname: stale\ndescription: d\n---\nx\n")
    assert materialize_bundle(repo) == target
    assert template.read_text() != "edited" and not (target / "stale").exists()
    assert sorted(p.name for p in target.iterdir()) == [".gitignore", "commit", "init", "review"]
    assert [p.name for p in target.parent.iterdir() if p.name.startswith(".bundled")] == []


def test_materialize_replaces_a_symlink_without_following_it(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("keep")
    (tmp_path / "repo" / ".aimon").mkdir(parents=True)
    (tmp_path / "repo" / ".aimon" / "bundled-skills").symlink_to(elsewhere)
    target = materialize_bundle(tmp_path / "repo")
    assert not target.is_symlink() and (elsewhere / "keep.txt").read_text() == "keep"


def test_bundled_copy_is_the_bundled_layer(tmp_path: Path) -> None:
    target = materialize_bundle(tmp_path / "repo")
    registry = load_skills(roots(tmp_path, bundled=target))
    entries = {e.name: e for e in registry.listing()}
    assert entries["init"].layer == Layer.BUNDLED
    assert entries["init"].path == target / "init" / "SKILL.md"
    init = registry.get("init")
    assert init is not None and init.directory == target / "init"
    fields, _, _ = load_frontmatter(init.path.read_text(), init.path)
    assert fields["name"] == "init"


def test_listing_is_json_ready(tmp_path: Path) -> None:
    entry = load_skills(roots(tmp_path)).listing()[0]
    data = {"name": entry.name, "layer": str(entry.layer), "path": str(entry.path),
            "warnings": list(entry.warnings), "disabled": entry.disabled}
    assert json.loads(json.dumps(data))["layer"] == "builtin"
