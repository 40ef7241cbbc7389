"""Agent layers: built-in < user agents/ < .claude/agents/ < .aimon/agents/."""

from __future__ import annotations

from pathlib import Path

import pytest

from aimon_core.agent import load_builtin_agent
from aimon_core.skill import Layer
from aimon_core.subagent import AgentRoots, builtin_agent_names, default_agent_roots, load_agents


def write_agent(folder: Path, file_name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / file_name
    path.write_text(text, encoding="utf-8")
    return path


def roots(tmp_path: Path) -> AgentRoots:
    return AgentRoots(project_root=tmp_path / "repo", user_dir=tmp_path / "user" / "agents")


def test_builtin_agents() -> None:
    assert builtin_agent_names() == ("code-reviewer", "explore", "general-purpose")
    explore = load_builtin_agent("explore")
    assert explore.tools is not None and "Write" not in explore.tools
    assert all(t in ("Read", "Grep", "Glob") or t.startswith("Bash(git ") for t in explore.tools)
    assert load_builtin_agent("general-purpose").tools is None
    reviewer = load_builtin_agent("code-reviewer")
    assert reviewer.tools is not None and "Edit" not in reviewer.tools
    for name in builtin_agent_names():
        agent = load_builtin_agent(name)
        assert agent.warnings == () and "{{" not in agent.render_prompt()


def test_layers_compose_by_name(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write_agent(tmp_path / "user" / "agents", "explore.md",
                "---\nname: explore\ndescription: user explore\n---\nx\n")
    write_agent(repo / ".claude" / "agents", "a.md",
                "---\nname: api-backend-architect\ndescription: claude\n---\nx\n")
    project = write_agent(repo / ".aimon" / "agents", "b.md",
                          "---\nname: api-backend-architect\ndescription: ours\n---\nx\n")
    write_agent(repo / ".aimon" / "agents", "README.md", "# not an agent\n")
    registry = load_agents(roots(tmp_path))
    entries = {e.name: e for e in registry.listing()}
    assert entries["explore"].layer == Layer.USER and entries["explore"].description == (
        "user explore")
    assert entries["api-backend-architect"].path == project
    assert entries["api-backend-architect"].layer == Layer.PROJECT
    agent = registry.get("api-backend-architect")
    assert agent is not None and agent.description == "ours"
    assert registry.failures == ()


def test_empty_body_disables_and_bad_files_fail(tmp_path: Path) -> None:
    folder = tmp_path / "repo" / ".aimon" / "agents"
    write_agent(folder, "explore.md", "---\nname: explore\n---\n")
    bad = write_agent(folder, "bad.md", "just text, no frontmatter\n")
    registry = load_agents(roots(tmp_path))
    assert registry.get("explore") is None
    assert {e.name: e.disabled for e in registry.listing()}["explore"]
    assert [(f.path, f.layer) for f in registry.failures] == [(bad, Layer.PROJECT)]
    assert "no YAML frontmatter" in registry.failures[0].message


def test_same_name_twice_in_one_layer_warns(tmp_path: Path) -> None:
    folder = tmp_path / "repo" / ".aimon" / "agents"
    first = write_agent(folder, "a.md", "---\nname: twin\ndescription: a\n---\nx\n")
    write_agent(folder, "b.md", "---\nname: twin\ndescription: b\n---\nx\n")
    entry = {e.name: e for e in load_agents(roots(tmp_path)).listing()}["twin"]
    assert entry.path == first and "also defined by" in entry.warnings[0]


def test_user_layer_follows_aimon_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIMON_HOME", str(tmp_path / "home"))
    write_agent(tmp_path / "home" / "config" / "agents", "mine.md",
                "---\ndescription: d\n---\nx\n")
    registry = load_agents(default_agent_roots(tmp_path / "repo"))
    assert {e.name: e.layer for e in registry.listing()}["mine"] == Layer.USER


def test_sub_folders_sort_agents_as_in_claude_code(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    agents = repo / ".claude" / "agents"
    write_agent(agents / "team", "builder.md", "---\nname: builder\ndescription: b\n---\nx\n")
    write_agent(agents / "crypto" / "deep", "scanner.md", "---\ndescription: s\n---\nx\n")
    write_agent(agents / ".hidden", "secret.md", "---\nname: secret\ndescription: h\n---\nx\n")
    write_agent(agents / "team", "README.md", "# the team\n")
    elsewhere = tmp_path / "elsewhere"
    write_agent(elsewhere, "outside.md", "---\nname: outside\ndescription: o\n---\nx\n")
    (agents / "linked").symlink_to(elsewhere)
    registry = load_agents(roots(tmp_path))
    layer = {e.name: e.path for e in registry.listing() if e.layer == Layer.CLAUDE_PROJECT}
    assert layer == {"builder": agents / "team" / "builder.md",
                     "scanner": agents / "crypto" / "deep" / "scanner.md"}
    assert registry.failures == ()


@pytest.mark.parametrize(("written", "loaded"), [
    ("Code Reviewer", "reviewer-file"), ("CodeReviewer", "reviewer-file"),
    ("code-reviewer", "code-reviewer"), ("plugin:reviewer", "plugin:reviewer")])
def test_a_name_that_cannot_be_typed_loads_under_the_files(tmp_path: Path, written: str,
                                                           loaded: str) -> None:
    write_agent(tmp_path / "repo" / ".aimon" / "agents", "Reviewer File.md",
                f"---\nname: {written}\ndescription: d\n---\nx\n")
    registry = load_agents(roots(tmp_path))
    agent = registry.get(loaded)
    assert agent is not None
    notes = [w for w in agent.warnings if "cannot be typed" in w]
    assert len(notes) == (written != loaded)
    assert all(repr(written) in note for note in notes)


def test_an_agents_malformed_hooks_stop_it_loading(tmp_path: Path) -> None:
    folder = tmp_path / "repo" / ".aimon" / "agents"
    write_agent(folder, "bad.md", "---\nname: bad\ndescription: d\nhooks:\n  PreToolUse:\n"
                "    - matcher: 'Notebook.*'\n      hooks: [{command: x}]\n---\nx\n")
    write_agent(folder, "odd.md", "---\nname: odd\ndescription: d\nhooks:\n  Notification:\n"
                "    - hooks: [{command: x}]\n---\nx\n")
    registry = load_agents(roots(tmp_path))
    assert [(f.path.name, "must be tool names joined by |" in f.message)
            for f in registry.failures] == [("bad.md", True)]
    odd = registry.get("odd")
    assert odd is not None and any("hooks.Notification: never happens" in w
                                   for w in odd.warnings)
