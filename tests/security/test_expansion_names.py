"""File names the command line never shows: read from stdin or from files (issue 23.2).

`wc --files0-from=list`, `file -f list`, `tar -T list`, `xargs cat`, `find -files0-from`,
`git ... --pathspec-from-file`: the files read are named in data aimon never sees, so no path
rule (nor the credential table) can be checked against them; such a command asks unless the
names are shown to be harmless (the program only prints names). Option values that are files
read by the program (`grep -f FILE`, `rg --ignore-file FILE`, `date -f FILE`, ...) are paths
like operands, in every spelling: attached (`-f.env`), clustered (`-rf.env`), abbreviated
(`--fil=.env`), separate or after `=`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ._project import ALLOW, ASK, decide_in, make_project, rules

ENV_DENIED = ("Read(./.env)",)

# Commands reading a list of names from a file or stdin, with the rule that would allow each.
FROM_INPUT = [
    ("wc -l --files0-from=list", ()), ("wc --files0-from list", ()), ("wc --files0=list", ()),
    ("wc --files0-from=-", ()), ("sort --files0-from=list", ()), ("du --files0-from=list", ()),
    ("file -f list", ()), ("file --files-from=list", ()), ("file -bf list", ()),
    ("xargs cat < list", ("Bash(xargs:*)",)), ("ls -a | xargs cat", ("Bash(xargs:*)",)),
    ("ls -a | xargs -0 grep KEY", ("Bash(xargs:*)",)), ("xargs -a list cat", ("Bash(xargs:*)",)),
    ("ls -a | xargs -I{} cat {}", ("Bash(xargs:*)",)), ("tar cf - -T list", ("Bash(tar:*)",)),
    ("tar -cf - --files-from=list", ("Bash(tar:*)",)), ("tar cTf list -", ("Bash(tar:*)",)),
    ("find . -files0-from list", ("Bash(find:*)",)),
    ("git add --pathspec-from-file=list", ("Bash(git:*)",)),
    ("rsync --files-from=list . ../x", ("Bash(rsync:*)",)),
    ("cpio -o < list", ("Bash(cpio:*)",)), ("zip -@ out.zip < list", ("Bash(zip:*)",)),
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_project(tmp_path_factory.mktemp("names") / "proj")


@pytest.mark.parametrize(("command", "allow"), FROM_INPUT)
@pytest.mark.parametrize("deny", [ENV_DENIED, ()], ids=["deny-env", "no-rule"])
def test_names_read_from_input_ask(project: Path, command: str, allow: tuple[str, ...],
                                   deny: tuple[str, ...]) -> None:
    decision = decide_in(project, command, rules(allow=allow, deny=deny))
    assert decision.verdict is ASK, decision.reason


# Options whose value is a file the program reads, in every spelling, naming the denied file.
VALUE_SPELLINGS = [
    "grep -f .env a.txt", "grep -f.env a.txt", "grep -nf.env a.txt", "grep -nf .env a.txt",
    "grep --file=.env a.txt", "grep --file .env a.txt", "grep --fil=.env a.txt",
    "grep --exclude-from=.env -r foo src", "grep --exclude-f=.env -r foo src",
    "rg -f .env a.txt", "rg -f.env a.txt", "rg --file=.env a.txt", "rg --ignore-file .env foo",
    "rg --ignore-file=.env foo src", "date -f .env", "date -f.env", "date --file=.env",
    "date -r .env", "sort --random-source=.env a.txt", "sort --random-s=.env a.txt",
    "diff --from-file=.env a.txt", "diff --to-file .env a.txt", "file -m .env a.txt",
    "file -m.env a.txt", "git blame --contents=.env a.txt", "git blame --contents .env a.txt",
    "git blame --ignore-revs-file=.env a.txt", "git ls-files --exclude-from=.env",
    "git ls-files -X.env", "du --exclude-from=.env src",
    "du -X.env src", "wc --files0-from=.env", "cat < .env", "cat < ./.e*", "cat 0<.env",
    "grep foo < .env", "cat ./.e?v", "cat .[e]nv",
]


@pytest.mark.parametrize("command", VALUE_SPELLINGS)
@pytest.mark.parametrize("allow", [(), ("Bash",)], ids=["read-only", "bash-allowed"])
def test_an_option_value_naming_a_denied_file_asks(
    project: Path, command: str, allow: tuple[str, ...]
) -> None:
    decision = decide_in(project, command, rules(allow=allow, deny=ENV_DENIED))
    assert decision.verdict is ASK, decision.reason


# Controls: names the command shows, or names only printed.
CONTROLS = [
    ("grep -f patterns.txt a.txt", ()), ("grep -nf patterns.txt a.txt", ()),
    ("rg --ignore-file=patterns.txt foo src", ()), ("wc -l a.txt b.txt", ()),
    ("ls | xargs echo", ("Bash(xargs:*)",)), ("ls | xargs ls -l", ("Bash(xargs:*)",)),
    ("find . -name '*.py' | xargs -0 stat", ("Bash(xargs:*)",)),
    ("date -r a.txt", ()), ("cat < a.txt", ()), ("sort -n a.txt", ()),
    ("git ls-files", ()), ("tar czf out.tgz src", ("Bash(tar:*)",)),
]


@pytest.mark.parametrize(("command", "allow"), CONTROLS)
def test_controls_stay_allowed(project: Path, command: str, allow: tuple[str, ...]) -> None:
    decision = decide_in(project, command, rules(allow=allow, deny=ENV_DENIED))
    assert decision.verdict is ALLOW, decision.reason
