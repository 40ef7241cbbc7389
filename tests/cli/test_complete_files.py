"""The files `@` offers: those .gitignore does not leave out, with ripgrep or with git."""

from __future__ import annotations

import subprocess
from pathlib import Path

from aimon_cli._complete import ProjectFiles, _git_listed, fuzzy_score


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "build").mkdir()
    (root / ".gitignore").write_text("build/\n*.log\n")
    for name in ("src/calc.py", "build/out.py", "run.log", "README.md"):
        (root / name).write_text("x\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "src/calc.py"], check=True)
    return root


def test_ignored_files_are_not_offered(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert sorted(_git_listed(root) or []) == [".gitignore", "README.md", "src/calc.py"]
    paths = ProjectFiles(root).paths()
    assert "src/calc.py" in paths and "src/" in paths and "README.md" in paths
    assert not any(p.startswith("build") or p.endswith(".log") for p in paths), paths


def test_git_lists_nothing_outside_a_repository(tmp_path: Path) -> None:
    assert _git_listed(tmp_path) is None


def test_a_subsequence_matches_and_the_file_name_counts_more() -> None:
    assert fuzzy_score("rcl", "src/calc.py") is not None
    assert fuzzy_score("xyz", "src/calc.py") is None
    assert (fuzzy_score("calc", "src/calc.py") or 0) > (fuzzy_score("calc", "calcs/a.py") or 0)
