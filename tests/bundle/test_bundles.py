"""Bundles as values: loaded from a folder or a package, installed, listed, and carried by an
agent into its runtime."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from aimon_core.bundle import AgentBundleRegistry, BundleError, load_bundle
from aimon_core.llm import script
from aimon_core.runtime import RuntimeFlags, RuntimeParts, RuntimeSetupError, build_runtime
from aimon_core.session import user_config_dir
from tests.e2e.conftest import AIMON


def make_bundle(folder: Path, agent: str = "team-lead") -> Path:
    (folder / "agents").mkdir(parents=True)
    (folder / "skills" / "labels").mkdir(parents=True)
    (folder / "agent.md").write_text(f"---\nname: {agent}\ndescription: Leads.\n---\nLead.\n")
    (folder / "agents" / "triage.md").write_text(
        "---\nname: triage\ndescription: Sorts new issues.\n---\nSort them.\n")
    (folder / "skills" / "labels" / "SKILL.md").write_text(
        "---\nname: labels\ndescription: Label issues by area.\n---\nLabel them.\n")
    return folder


def test_a_folder_is_a_bundle_value(tmp_path: Path) -> None:
    bundle = load_bundle(make_bundle(tmp_path / "team"), name="team", source="here")
    assert bundle.agent is not None and bundle.agent.name == "team-lead"
    assert [a.name for a in bundle.subagents] == ["triage"]
    assert [s.name for s in bundle.skills] == ["labels"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(BundleError, match=r"has no agent\.md"):
        load_bundle(tmp_path / "empty", name="empty", source="here")


def test_install_from_a_folder_and_from_a_package(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    registry = AgentBundleRegistry(tmp_path / "bundles")
    registry.install_folder(make_bundle(tmp_path / "src" / "team"))
    package = make_bundle(tmp_path / "pkgs" / "ops_bundle", agent="ops-lead")
    (package / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    registry.install_package("ops_bundle")
    assert [(b.name, b.source.split()[0]) for b in registry.all()] == [
        ("default", "built-in"), ("team", str(tmp_path / "bundles" / "team")),
        ("ops-bundle", "package")]
    with pytest.raises(BundleError, match="is installed"):
        registry.install_folder(tmp_path / "src" / "team")
    with pytest.raises(BundleError, match="no Python package"):
        registry.install_package("no_such_package_here")
    assert registry.remove("team") and registry.remove("ops-bundle")
    assert not registry.remove("team")
    assert [b.name for b in registry.all()] == ["default"]


def _runtime(root: Path, agent: str) -> str:
    """Return the agent's prompt, then what its tools say (the Skill and Task tools list the
    skills and subagents it may start)."""
    assembly = build_runtime(root, flags=RuntimeFlags(agent=agent),
                             parts=RuntimeParts(client=script(), model="claude-x"))
    told = "\n".join(d.description for d in assembly.runtime.tools.definitions())
    return f"{assembly.runtime.agent.prompt_template}\n{told}"


def test_a_bundles_agent_runs_with_its_subagents_and_skills(tmp_path: Path) -> None:
    AgentBundleRegistry.default().install_folder(make_bundle(tmp_path / "team"))
    prompt = _runtime(tmp_path, "team")
    assert prompt.startswith("Lead.")
    assert "triage" in prompt and "labels" in prompt


def test_a_user_agent_carries_bundles(tmp_path: Path) -> None:
    AgentBundleRegistry.default().install_folder(make_bundle(tmp_path / "team"))
    agents = user_config_dir() / "agents"
    agents.mkdir(parents=True)
    (agents / "mine.md").write_text(
        "---\nname: mine\ndescription: Mine.\nbundles: [team]\n---\nMy agent.\n")
    (agents / "lost.md").write_text(
        "---\nname: lost\ndescription: Lost.\nbundles: nowhere\n---\nLost.\n")
    plain = _runtime(tmp_path, "default")
    assert "triage" not in plain and "labels" not in plain  # only the carrier gets them
    mine = _runtime(tmp_path, "mine")
    assert "triage" in mine and "labels" in mine
    with pytest.raises(RuntimeSetupError, match="no bundle named 'nowhere'"):
        _runtime(tmp_path, "lost")


def test_bundles_list_install_remove_on_the_command_line(tmp_path: Path) -> None:
    def aimon(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([AIMON, "bundles", *args], capture_output=True, text=True,
                              cwd=tmp_path, timeout=60)

    installed = aimon("install", str(make_bundle(tmp_path / "team")))
    assert installed.returncode == 0, installed.stderr
    listed = aimon("list").stdout
    assert "default  (built-in)  agent default" in listed
    assert "team  (" in listed and "agent team-lead" in listed
    assert "  subagents: triage" in listed and "  skills: labels" in listed
    assert aimon("remove", "team").returncode == 0
    assert "team  (" not in aimon("list").stdout
    assert aimon("remove", "team").returncode == 1
