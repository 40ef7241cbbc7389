"""Programs that print file contents without naming the file honour path rules (issue 23.2).

`git grep`, `git log -p`, `git show`, `git diff`, `git cat-file`, `git archive` and the other
git commands that can print what the repository holds may print a file a `Read(...)` rule
covers (committed once, in the index, stashed) without naming it. Such a command asks when a
path rule covers something in the part of the repository it may print; a pathspec after `--`
narrows that part (but not for objects named by hash, which `show` and `diff` print whatever
the pathspec says). Names-only commands (`git status`, `git log --oneline`, `--stat`) stay
auto-allowed. Generated table: content printers by rule shapes by how they are allowed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ._project import ALLOW, ASK, decide_in, make_project, rules
from .conftest import git

# `{blob}` is the hash of the committed .env, `{tree}` of the root tree.
PRINTERS = [
    "git grep -h SECRET", "git grep SECRET", "git grep -h SECRET HEAD", "git grep -h SECRET v1",
    "git grep --cached SECRET", "git grep --untracked SECRET", "git grep --no-index SECRET",
    "git grep -h SECRET -- .", "git grep -h SECRET -- ':(top)'", "git grep -e SECRET -- '*'",
    "git log -p", "git log -p -1", "git log --patch", "git log -U1", "git log -u",
    "git log --stat -p", "git log --cc", "git log --word-diff", "git log -W", "git log -L1,1:.env",
    "git log --all -p", "git log -p v1", "git log -p -- .", "git log -1 -p -- ':(top)'",
    "git show", "git show HEAD", "git show v1", "git show HEAD:.env", "git show :.env",
    "git show HEAD:./.env", "git show {blob}", "git show {blob} -- src", "git show --stat {blob}",
    "git show -s {blob}", "git show HEAD^{{tree}}:.env", "git show main -- src",
    "git diff HEAD~0 {blob}", "git diff {blob} {blob}", "git diff {blob} {blob} -- src",
    "git diff --no-index . other", "git diff --cached --root", "git diff HEAD --stat -p",
    "git whatchanged -p", "git cat-file -p HEAD:.env", "git cat-file blob {blob}",
    "git cat-file -p {blob}", "git cat-file --batch < list", "git archive HEAD",
    "git archive --format=tar HEAD", "git format-patch --stdout --root", "git stash show -p",
    "git blame .env",
    "git -C src grep SECRET ..", "git -C src log -p", "git --no-pager show",
    "git -P log -p", "git show-branch --more=1 -p", "git range-diff HEAD~0 HEAD~0 HEAD~0",
    "git diff-tree -p HEAD", "git log --format=%H --patch", "git log --remerge-diff",
]
ALLOWS = {"read-only": (), "git-rule": ("Bash(git:*)",), "bash": ("Bash",)}
RULE_SHAPES = ["Read(./.env)", "Read(.env)", "Read(**/.env)", "Read(./*.env)",
               "Read(//{root}/.env)"]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("printers") / "proj")


@pytest.fixture(scope="module")
def objects(project: Path) -> dict[str, str]:
    return {"blob": git(project, "rev-parse", "HEAD:.env").strip(),
            "tree": git(project, "rev-parse", "HEAD^{tree}").strip(),
            "root": str(project).lstrip("/")}


def _cases() -> list[object]:
    return [pytest.param(command, allow, rule, id=f"{command}-{label}-{rule}")
            for command in PRINTERS for label, allow in ALLOWS.items() for rule in RULE_SHAPES]


@pytest.mark.parametrize(("command", "allow", "rule"), _cases())
@pytest.mark.parametrize("verdict", ["deny", "ask"])
def test_a_content_printer_honours_path_rules(
    project: Path, objects: dict[str, str], command: str, allow: tuple[str, ...], rule: str,
    verdict: str,
) -> None:
    path_rule = rule.format(**objects)
    given = rules(allow=allow, deny=(path_rule,)) if verdict == "deny" else rules(
        allow=allow, ask=(path_rule,))
    decision = decide_in(project, command.format(**objects), given)
    assert decision.verdict is ASK, decision.reason


@pytest.mark.parametrize("command", ["git grep SECRET", "git show HEAD:.env", "git log -p",
                                     "git show :../.env", "git grep SECRET -- ..",
                                     "git show HEAD:src/../.env"])
def test_from_a_sub_folder_the_repository_counts(project: Path, command: str) -> None:
    decision = decide_in(project, command, rules(deny=("Read(./.env)",)), cwd=project / "src")
    assert decision.verdict is ASK, decision.reason


def test_a_rule_in_another_folder_of_the_repository_counts(project: Path) -> None:
    # The rule covers a committed file below src/; the printer runs at the root.
    given = rules(deny=("Read(./src/a.py)",))
    for command in ("git grep foo", "git log -p", "git show", "git grep foo -- src"):
        assert decide_in(project, command, given).verdict is ASK, command


# Names-only git commands and printers narrowed away from the denied file stay allowed.
CONTROLS = [
    "git status", "git status --short", "git log --oneline", "git log --stat", "git log -3",
    "git log --name-only", "git diff --stat", "git diff --name-only HEAD", "git show --stat",
    "git show -s", "git show --name-only HEAD~0", "git ls-files",
    "git branch", "git tag -l", "git rev-parse HEAD", "git describe --always",
    "git grep foo -- src", "git grep -n foo -- src/a.py", "git log -p -- src",
    "git log -p -1 -- src/a.py", "git diff -- src", "git diff HEAD -- src",
    "git show HEAD -- src", "git show HEAD:src/a.py", "git show HEAD~0:a.txt",
    "git blame a.txt", "git log --format=%s", "git remote -v", "git config --get user.name",
]


@pytest.mark.parametrize("command", CONTROLS)
@pytest.mark.parametrize("allow", [(), ("Bash(git:*)",)], ids=["read-only", "git-rule"])
def test_controls_stay_allowed(project: Path, command: str, allow: tuple[str, ...]) -> None:
    decision = decide_in(project, command, rules(allow=allow, deny=("Read(./.env)",)))
    assert decision.verdict is ALLOW, decision.reason


@pytest.mark.parametrize("command", ["git grep SECRET", "git log -p", "git show HEAD:.env"])
def test_without_path_rules_printers_stay_read_only(project: Path, command: str) -> None:
    assert decide_in(project, command, rules()).verdict is ALLOW
