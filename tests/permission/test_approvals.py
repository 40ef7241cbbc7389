"""What an answer remembers, and the turn, session and agent approval stores."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from aimon_core.permission import (
    AgentApprovalStore,
    PermissionRules,
    RuleError,
    SessionApprovals,
    TurnApprovals,
    agent_approvals_path,
    approval_rule,
)
from aimon_core.tools import builtin_tools

TOOLS = {tool.name: tool for tool in builtin_tools()}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (tmp_path / "outside.py").write_text("y = 2\n")
    (root / "src" / "link.py").symlink_to(tmp_path / "outside.py")
    return root


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("npm install left-pad", "Bash(npm install left-pad)"),
        ("  npm test  ", "Bash(npm test)"),
        ("git commit -m 'fix it'", "Bash(git commit -m 'fix it')"),
        # Compound or unusual commands: the exact text, nothing broader.
        ("npm test && npm run build", "Bash(exact:npm test && npm run build)"),
        ("npm test | tee log", "Bash(exact:npm test | tee log)"),
        ("npm test > out.txt", "Bash(exact:npm test > out.txt)"),
        ("FOO=1 make", "Bash(exact:FOO=1 make)"),
        ("echo $(date)", "Bash(exact:echo $(date))"),
        # A pattern would read these words as wildcards.
        ("rm *.o", "Bash(exact:rm *.o)"),
        ("ls foo*", "Bash(exact:ls foo*)"),
        ("echo a:*", "Bash(exact:echo a:*)"),
    ],
)
def test_command_rule(command: str, rule: str, project: Path) -> None:
    assert approval_rule(TOOLS["Bash"], {"command": command}, project_root=project) == rule


def test_path_rule(project: Path) -> None:
    def rule(tool: str, path: str, *, absolute: bool = False) -> str:
        return approval_rule(TOOLS[tool], {"file_path": path}, project_root=project,
                             absolute=absolute)

    real = project.resolve()
    assert rule("Edit", "src/a.py") == "Edit(src/a.py)"
    assert rule("Write", str(project / "src" / "a.py")) == "Edit(src/a.py)"
    assert rule("Edit", "src/a.py", absolute=True) == f"Edit(/{real}/src/a.py)"
    assert rule("Edit", "../outside.py") == f"Edit(/{real.parent}/outside.py)"
    assert rule("Edit", "src/link.py") == f"Edit(/{real.parent}/outside.py)"
    assert rule("Edit", "src/a[1]*.py") == "Edit(src/a[[]1][*].py)"
    assert rule("Edit", "~x/a.py") == "Edit(./~x/a.py)"
    assert rule("Edit", "src/a(.py") == ""
    assert rule("Read", "src/a.py") == "Read(src/a.py)"


def test_remembered_rules_match_only_what_was_approved(project: Path) -> None:
    turn = TurnApprovals()
    for command in ("npm test", "npm test && make"):
        turn.add(approval_rule(TOOLS["Bash"], {"command": command}, project_root=project))
    assert [r.text for r in turn.rules().allow] == ["Bash(npm test)"]
    assert turn.commands() == frozenset({("Bash", "npm test && make")})
    turn.add(approval_rule(TOOLS["Edit"], {"file_path": "src/a[1].py"}, project_root=project))
    assert [r.text for r in turn.rules().allow][-1] == "Edit(src/a[[]1].py)"


def test_turn_store_round_trip() -> None:
    turn = TurnApprovals()
    assert turn.rules() == PermissionRules()
    assert turn.add(" Bash(npm test) ")
    assert not turn.add("Bash(npm test)")
    assert turn.add("Bash(exact:a && b)")
    assert turn.entries() == ("Bash(npm test)", "Bash(exact:a && b)")
    with pytest.raises(RuleError):
        turn.add("Bash(")
    assert turn.clear() == ("Bash(npm test)", "Bash(exact:a && b)")
    assert turn.entries() == () and turn.commands() == frozenset()


def test_session_store_reports_changes() -> None:
    saved: list[tuple[str, ...]] = []
    session = SessionApprovals(("Bash(make)",), saved.append)
    assert [r.text for r in session.rules().allow] == ["Bash(make)"]
    assert session.add("Edit(src/a.py)")
    assert saved == [("Bash(make)", "Edit(src/a.py)")]
    assert not session.add("Edit(src/a.py)")
    assert len(saved) == 1
    session.clear()
    assert saved[-1] == ()
    session.clear()
    assert len(saved) == 2


def test_session_skips_bad_entries_from_the_record(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        session = SessionApprovals(("Bash(", "Bash(make)"))
    assert [r.text for r in session.rules().allow] == ["Bash(make)"]
    assert "Bash(" in caplog.text


def test_agent_path_is_filename_safe(tmp_path: Path) -> None:
    path = agent_approvals_path(tmp_path, "agent:default")
    assert path.parent == tmp_path / "approvals"
    assert path.name.startswith("agent-default-") and path.suffix == ".json"
    assert agent_approvals_path(tmp_path, "agent:a:b") != agent_approvals_path(tmp_path,
                                                                                "agent:a-b")
    assert "/" not in agent_approvals_path(tmp_path, "agent:../../x").name


def test_agent_store_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "approvals" / "agent.json"
    store = AgentApprovalStore(path)
    assert store.entries() == () and store.problem is None
    assert store.add("Bash(npm test)")
    assert store.add("Bash(exact:npm test && make)")
    assert not store.add("Bash(npm test)")
    assert json.loads(path.read_text()) == {
        "version": 1, "rules": ["Bash(npm test)", "Bash(exact:npm test && make)"],
    }
    other = AgentApprovalStore(path)
    assert [r.text for r in other.rules().allow] == ["Bash(npm test)"]
    assert other.commands() == frozenset({("Bash", "npm test && make")})
    # Another store (another aimon) adds: this one sees it without reopening.
    other.add("Edit(//tmp/x)")
    assert store.entries()[-1] == "Edit(//tmp/x)"
    assert store.clear() == ("Bash(npm test)", "Bash(exact:npm test && make)", "Edit(//tmp/x)")
    assert not path.exists()
    assert other.entries() == ()


@pytest.mark.parametrize(
    "content", ["{not json", '{"rules": "Bash(ls)"}', "[1, 2]", "\xff\xfe".encode("latin-1")],
)
def test_corrupt_agent_file_counts_as_empty(content: str | bytes, tmp_path: Path,
                                           caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "agent.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    store = AgentApprovalStore(path)
    with caplog.at_level(logging.WARNING):
        assert store.rules() == PermissionRules()
        assert store.problem is not None
    assert "approvals are ignored" in caplog.text
    assert store.add("Bash(make)")
    assert store.entries() == ("Bash(make)",) and store.problem is None
    assert (tmp_path / "agent.json.corrupt").read_bytes() == (
        content if isinstance(content, bytes) else content.encode()
    )


def test_agent_file_keeps_good_entries_next_to_bad_ones(tmp_path: Path) -> None:
    path = tmp_path / "agent.json"
    path.write_text(json.dumps({"version": 1, "rules": ["Bash(make)", 3, "Bash("]}))
    store = AgentApprovalStore(path)
    assert [r.text for r in store.rules().allow] == ["Bash(make)"]
    assert store.problem is not None


def test_agent_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "approvals" / "agent.json"
    store = AgentApprovalStore(path)
    for n in range(5):
        store.add(f"Bash(make t{n})")
    assert sorted(p.name for p in path.parent.iterdir()) == ["agent.json"]
    before = path.read_text()

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch, pytest.raises(OSError, match="No space"):
        patch.setattr(os, "fsync", broken_fsync)
        store.add("Bash(make more)")
    assert path.read_text() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["agent.json"]
    assert len(store.entries()) == 5
