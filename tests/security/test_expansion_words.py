"""Read-only for every expansion: globs, braces, tilde forms, unknown expansions (issue 23.2).

A command is auto-allowed only if it is read-only (or within its allow rule) for every word
bash could make of it. A planted file named like an option (`--output=x`, `-Otouch x`,
`--pre=sh`, `-delete`) is an option once an unquoted glob matches it, and a file can be
created between the check and the run: a glob that could match such a name asks unless its
place makes options impossible (a literal first character that is not `-`, or after the `--`
that ends the program's options). Brace expansion, `~+`/`~-`/`~N`, `$'...'` with escapes,
arithmetic and parameter expansions ask.

Generated tables: every expansion in every auto-allowed program (no rule: the read-only
tables; and under broad allow rules), the same with deny rules (a glob may spell what a deny
rule names), and controls that must stay allowed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aimon_core.permission import is_read_only_command

from ._project import ALLOW, ASK, DENY, decide_in, make_project, rules

# Words whose expansion bash decides at run time; each may become an option.
GLOBS = ["*", "*.txt", "?.txt", "[ab].txt", "[!x]*", "[-]*", "-*", "--o*"]
BRACES = ["{a,b}.txt", "-{e,x}ec", "{1..3}", "a{,.txt}", "--{pre,output}=x"]
TILDES = ["~+/a.txt", "~-/a.txt", "~+", "~-", "~+1/a.txt", "~-2", "~0/a.txt", "x=~-/a.txt"]
UNKNOWN = ["$'\\x2d-output=x'", "$'a\\x2etxt'", "$'a.txt\\0b'", "$((1))", "$X", "${X}",
           "${X:-a.txt}", "${#X}", "$1", "\"$@\"", "a.$X"]
EXPANSIONS = {"glob": GLOBS, "brace": BRACES, "tilde": TILDES, "unknown": UNKNOWN}

# Auto-allowed programs in forms the read-only tables allow; `{w}` is an operand there.
READ_ONLY = [
    "ls {w}", "ls -l {w}", "cat {w}", "head -n 3 {w}", "tail {w}", "wc -l {w}",
    "grep -n foo {w}", "grep -rn foo {w}", "rg foo {w}", "sort {w}", "uniq {w}", "cut -f1 {w}",
    "nl {w}", "file {w}", "stat {w}", "du -s {w}", "diff a.txt {w}", "cmp a.txt {w}",
    "tree {w}", "find {w} -name x", "find . -name {w}", "sed -n 1p {w}", "readlink {w}",
    "realpath {w}", "basename {w}", "tr a b {w}", "date -d {w}", "git grep foo {w}",
    "git log {w}", "git diff {w}", "git show {w}", "git ls-files {w}", "git blame {w}",
    "git status {w}", "git {w}", "git branch --list {w}",
]
# Broad allow rules and a use each covers; a glob must not bring in an escape hatch.
BROAD = [
    ("Bash(git grep:*)", "git grep foo {w}"), ("Bash(git:*)", "git log {w}"),
    ("Bash(git:*)", "git {w}"), ("Bash(rg:*)", "rg foo {w}"), ("Bash(sort:*)", "sort {w}"),
    ("Bash(tar:*)", "tar czf out.tgz {w}"), ("Bash(find:*)", "find {w} -name x"),
    ("Bash(uniq:*)", "uniq {w}"), ("Bash(sed:*)", "sed -n 1p {w}"),
    ("Bash(file:*)", "file {w}"), ("Bash(tree:*)", "tree {w}"),
]


def _expanded(templates: list[str]) -> list[object]:
    cases: list[object] = []
    for template in templates:
        program = template.split(" {")[0].replace(" ", "-")
        for kind, words in EXPANSIONS.items():
            for index, word in enumerate(words):
                cases.append(pytest.param(template.format(w=word),
                                          id=f"{program}-{kind}{index}"))
    return cases


def _broad() -> list[object]:
    cases: list[object] = []
    for rule, template in BROAD:
        for kind, words in EXPANSIONS.items():
            for index, word in enumerate(words):
                cases.append(pytest.param(rule, template.format(w=word),
                                          id=f"{rule}-{kind}{index}"))
    return cases


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("words") / "proj")


@pytest.mark.parametrize("command", _expanded(READ_ONLY))
def test_an_expansion_makes_a_read_only_program_ask(project: Path, command: str) -> None:
    decision = decide_in(project, command, rules())
    assert decision.verdict is ASK, decision.reason
    assert not is_read_only_command(command, cwd=project)


@pytest.mark.parametrize(("rule", "command"), _broad())
def test_an_expansion_is_not_within_a_broad_rule(project: Path, rule: str, command: str) -> None:
    decision = decide_in(project, command, rules(allow=(rule,)))
    assert decision.verdict is ASK, decision.reason


# A glob whose matches may be options or extra operands where the count matters.
PLACES = [
    ("uniq ./*", ()), ("uniq src/*", ("Bash(uniq:*)",)), ("date -d ./*", ()),
    ("grep -e ./* a.txt", ()), ("head -n ./* a.txt", ()), ("sort -t -- *", ()),
    ("ls -I *.pyc", ()), ("git config --get ./*", ()), ("git remote ./*", ()),
    ("tar cf out.tar -- *", ("Bash(tar:*)",)), ("sort -k1 *.txt", ("Bash(sort:*)",)),
    ("find . -newer ./a.txt -name *.py", ()), ("printf *", ()),
]


@pytest.mark.parametrize(("command", "allow"), PLACES)
def test_a_glob_whose_place_can_change_the_command_asks(
    project: Path, command: str, allow: tuple[str, ...]
) -> None:
    decision = decide_in(project, command, rules(allow=allow))
    assert decision.verdict is ASK, decision.reason


# With `Bash` allowed and deny rules, a glob that may spell a denied command asks.
DENY_RULES = ("Bash(rm -rf:*)", "Bash(git push:*)")
NOT_ALLOWED = (ASK, DENY)
AROUND_DENY = [
    ("rm *", NOT_ALLOWED), ("rm *.tmp", NOT_ALLOWED), ("rm -- *", NOT_ALLOWED),
    ("rm -r[f] x", NOT_ALLOWED), ("git *", NOT_ALLOWED), ("git pu?h", NOT_ALLOWED),
    ("git [p]ush origin", NOT_ALLOWED), ("git [^x]ush origin", NOT_ALLOWED),
    ("rm ./*", (ALLOW,)), ("rm src/*.py", (ALLOW,)), ("git log -- *.txt", (ALLOW,)),
    ("ls *", (ALLOW,)), ("git status", (ALLOW,)),
]


@pytest.mark.parametrize(("command", "expected"), AROUND_DENY)
def test_a_glob_that_may_spell_a_denied_command_asks(project: Path, command: str,
                                                     expected: tuple[object, ...]) -> None:
    decision = decide_in(project, command, rules(allow=("Bash",), deny=DENY_RULES))
    assert decision.verdict in expected, decision.reason


# Controls: ordinary commands stay auto-allowed.
CONTROLS = [
    "ls", "ls -la", "ls src", "cat src/*.py", "cat ./*.txt", "wc -l src/*.py",
    "head -n 1 ./*.txt", "grep -rn foo src", "grep -n foo -- *.txt", "ls -- *", "cat -- *",
    "git log --oneline", "git status", "git grep foo -- '*.py'", "git grep foo -- *.txt",
    "git log --oneline -- *.txt", "find . -name '*.py'", "find ./src -name '*.py'",
    "grep -rn --include=*.py foo src", "echo *", "sed -n 1p src/*.py",
    "diff ./a.txt ./b.txt", "rg foo ./src", "ls ~", "cat a.txt | grep -c 'a*'",
    "grep -n 'fo[o]' a.txt", "cat \"*\"", "cat \\*", "cat '~+/a.txt'", "find . -name \\*.py",
    "cat $'a.txt'", "tail -n 2 src/a.py", "git diff HEAD -- src/*.py", "stat src/?.py",
]


@pytest.mark.parametrize("command", CONTROLS)
def test_controls_stay_read_only(project: Path, command: str) -> None:
    decision = decide_in(project, command, rules())
    assert decision.verdict is ALLOW, decision.reason
    assert is_read_only_command(command, cwd=project)


@pytest.mark.parametrize(("rule", "command"), [
    ("Bash(ls:*)", "ls *"), ("Bash(git grep:*)", "git grep foo -- src"),
    ("Bash(rg:*)", "rg foo ./*"), ("Bash(sort:*)", "sort ./*.txt"),
    ("Bash(tar:*)", "tar czf out.tgz src/*"), ("Bash(find:*)", "find ./* -name x"),
])
def test_controls_stay_within_their_rule(project: Path, rule: str, command: str) -> None:
    decision = decide_in(project, command, rules(allow=(rule,)))
    assert decision.verdict is ALLOW, decision.reason
