"""A broad git allow rule covers git's commands, not what a repository's config makes git run."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from aimon_core.permission import PermissionRules, Verdict, evaluate_command

HOSTILE = (
    ("core", "fsmonitor", "touch /tmp/aimon-pwned"),
    ("core", "pager", "sh -c 'touch /tmp/aimon-pwned'"),
    ("alias", "st", "!touch /tmp/aimon-pwned"),
    ("diff", "external", "touch-it"),
    ("core", "hooksPath", "/tmp"),
)


def repo(path: Path, *config: tuple[str, str, str]) -> Path:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    for section, key, value in config:
        subprocess.run(["git", "-C", str(path), "config", f"{section}.{key}", value], check=True)
    return path


RULES = PermissionRules.parse(allow=["Bash(git:*)"])


@pytest.mark.parametrize(("section", "key", "value"), HOSTILE)
def test_git_in_a_repository_whose_config_runs_programs_asks(
        tmp_path: Path, section: str, key: str, value: str) -> None:
    hostile = repo(tmp_path / "hostile", (section, key, value))
    for command in ("git status", "git log -1", "git -C . diff"):
        decision = evaluate_command(command, RULES, cwd=hostile)
        assert decision.verdict is Verdict.ASK, (command, decision)
        assert "configuration or hooks" in decision.reason


def test_git_under_the_rule_in_a_clean_repository_is_allowed(tmp_path: Path) -> None:
    clean = repo(tmp_path / "clean")
    for command in ("git status", "git commit -m x", "git push"):
        decision = evaluate_command(command, RULES, cwd=clean)
        assert decision.verdict is Verdict.ALLOW, (command, decision)


def test_dash_c_into_a_hostile_repository_asks(tmp_path: Path) -> None:
    repo(tmp_path / "inner", ("core", "fsmonitor", "touch /tmp/aimon-pwned"))
    outer = repo(tmp_path / "outer")
    decision = evaluate_command("git -C ../inner status", RULES, cwd=outer)
    assert decision.verdict is Verdict.ASK
