"""Recursion in every spelling reads the whole tree, and the tree holds a denied file (23.2).

`grep -r` is `-R`, `--recursive`, `--recur` (GNU takes any unambiguous prefix),
`--dereference-r`, `-d recurse`, `-drecurse`, `--directories=rec`, `--dir recurse`, and any of
them in a cluster (`-nd recurse`, `-Rl`); `diff -r`, `cp --arch` and the always-recursive
programs likewise. A recursive read of a folder holding a path a `Read(...)` rule covers asks,
under the read-only tables, a program rule (`Bash(grep:*)`) and the whole `Bash` tool alike.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ._project import ALLOW, ASK, decide_in, make_project, rules

GREP_RECURSION = [
    "-r", "-R", "--recursive", "--recur", "--rec", "--recursiv", "--dereference-recursive",
    "--dereference-r", "--deref", "-d recurse", "-drecurse", "-d rec", "-d recu",
    "--directories=recurse", "--directories recurse", "--dir=recurse", "--dir=rec",
    "--direc recurse", "-nd recurse", "-ndrecurse", "-rn", "-nr", "-Rl", "-lR", "-inr",
    "-Hnr", "-cr",
]
READS = (
    [f"grep {spelling} KEY ." for spelling in GREP_RECURSION]
    + [f"grep {spelling} KEY" for spelling in ("-r", "--recur", "-d recurse", "-Rn")]
    + [f"{g} -r KEY ." for g in ("egrep", "fgrep")]
    + ["rg KEY", "rg KEY .", "rg -uu KEY", "diff -r . other", "diff --recursive . other",
       "diff --recur . other", "diff -qr . other", "grep -r KEY src .", "grep -r KEY ./"]
)
PROGRAM_RULES = {"grep": "Bash(grep:*)", "egrep": "Bash(egrep:*)", "fgrep": "Bash(fgrep:*)",
                 "rg": "Bash(rg:*)", "diff": "Bash(diff:*)"}
COPIES = ["cp -r . ../x", "cp -R . ../x", "cp --rec . ../x", "cp --arch . ../x", "cp -a . ../x",
          "cp -av . ../x", "rsync -a . ../x", "zip -r ../x.zip .", "scp -r . host:x",
          "tar czf ../x.tgz ."]
DENY_RULES = ["Read(./.env)", "Read(**/.env)", "Read(.env)", "Read(./*.env)", "Read(/.env)"]


def _allows(command: str) -> list[tuple[str, ...]]:
    rule = PROGRAM_RULES.get(command.split()[0])
    return [(), (rule,), ("Bash",)] if rule else [("Bash",)]


def _cases() -> list[object]:
    cases: list[object] = []
    for index, command in enumerate(READS + COPIES):
        for allow in _allows(command):
            for deny in DENY_RULES:
                label = allow[0] if allow else "read-only"
                cases.append(pytest.param(command, allow, deny,
                                          id=f"{index}-{command.split()[0]}-{label}-{deny}"))
    return cases


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("recursion") / "proj")


@pytest.mark.parametrize(("command", "allow", "deny"), _cases())
def test_a_recursive_read_of_a_denied_tree_asks(
    project: Path, command: str, allow: tuple[str, ...], deny: str
) -> None:
    decision = decide_in(project, command, rules(allow=allow, deny=(deny,)))
    assert decision.verdict is ASK, decision.reason


@pytest.mark.parametrize("command", ["grep -r KEY ..", "grep --recur KEY ..",
                                     "grep -d recurse KEY ..", "rg KEY .."])
def test_from_a_sub_folder_the_parent_counts(project: Path, command: str) -> None:
    decision = decide_in(project, command, rules(deny=("Read(./.env)",)), cwd=project / "src")
    assert decision.verdict is ASK, decision.reason


CONTROLS = [
    "grep -rn foo src", "grep -r foo src other", "grep -d skip foo .", "grep -d read foo a.txt",
    "grep -n foo a.txt b.txt", "grep --directories=skip foo .", "ls -R .", "ls -R", "du -a .",
    "find . -name '*.py'", "tree .", "rg foo src", "diff -r src other", "grep -c foo ./*.txt",
    "cat a.txt", "grep -e -r a.txt", "grep -nr foo src/a.py",
]


@pytest.mark.parametrize("command", CONTROLS)
def test_controls_stay_allowed(project: Path, command: str) -> None:
    decision = decide_in(project, command, rules(deny=("Read(./.env)",)))
    assert decision.verdict is ALLOW, decision.reason
