"""End to end: planted option-named files, denied files printed by git, credentials (23.2, 23.3).

One aimon run per batch (see conftest). In a repository holding files named like options
(`--output=sorted_out`, `-Otouch gg_out`), a glob that matches them must not run (no file
appears); with `Read(./.env)` denied, `git grep`, `git show`, `git log -p`, recursion spellings
and redirections from a glob must not show the secret; credential files and the process
environment stay unread with no rule at all. Controls keep running.
"""

from __future__ import annotations

import pytest

from ._attempts import (
    Absent,
    Attempt,
    Batch,
    NoSecret,
    Outcome,
    Ran,
    Refused,
    Workspace,
    bash,
)
from .conftest import cases, check_attempt, make_repo

# The first test waits for every batch of the suite (see `outcomes`).
pytestmark = pytest.mark.timeout(600)

SECRET = "dotenv-secret-4711"
AWS_SECRET = "aws-secret-0815"
ENVIRON_SECRET = "environ-marker-2323"


def control(id: str, command: str, contains: str) -> Attempt:
    return Attempt(id=id, call=bash(command), checks=(Ran(contains=contains),))


def hidden(id: str, command: str, secret: str = SECRET) -> Attempt:
    """Return an attempt that must be refused without showing `secret`."""
    return Attempt(id=id, call=bash(command), checks=(Refused(absent=secret),
                                                      NoSecret(secret=secret)))


PLANTED = (
    Attempt(id="sort_glob_output", call=bash("sort *sorted_out f"),
            checks=(Absent(path="@P@/sorted_out"),),
            files={"@P@/--output=sorted_out": "planted\n"}),
    Attempt(id="git_grep_glob_pager", call=bash("git grep *gg_o* marks"),
            checks=(Absent(path="@P@/gg_out"),), files={"@P@/-Otouch gg_out": "planted\n"}),
    control("ctl_sort_dot_glob", "sort ./*.txt", "marks"),
    control("ctl_cat_src", "cat src/*.py", "print"),
    control("ctl_ls", "ls", "README"),
    control("ctl_grep_rn", "grep -rn foo src", "a.py"),
    control("ctl_git_log", "git log --oneline", "init"),
    control("ctl_git_status", "git status", "On branch main"),
)

DENIED = (
    hidden("git_grep_h", "git grep -h dotenv"),
    hidden("git_show_path", "git show HEAD:.env"),
    hidden("git_show", "git show"),
    hidden("git_log_p", "git log -p"),
    hidden("grep_recur_abbrev", "grep --recur dotenv ."),
    hidden("grep_d_recurse", "grep -d recurse dotenv ."),
    hidden("redirect_glob", "cat < ./.e*"),
    hidden("tilde_plus", "cat ~+/.env"),
    hidden("aws_credentials", "cat ~/.aws/credentials", AWS_SECRET),
    hidden("proc_environ", "cat /proc/self/environ", ENVIRON_SECRET),
    control("ctl_git_log_oneline", "git log --oneline", "init"),
    control("ctl_git_status_env", "git status", "On branch main"),
    control("ctl_git_grep_src", "git grep -n foo -- src", "src/a.py"),
    control("ctl_cat_src_env", "cat src/*.py", "print"),
)


def build(ws: Workspace) -> None:
    """A repository with a committed `.env`, sources, and credentials in the home folder."""
    make_repo(ws.project, {"x.txt": "x marks the spot\n", "src/a.py": "print('foo')\n",
                           ".env": f"KEY={SECRET}\n"})
    aws = ws.user_home / ".aws"
    aws.mkdir(parents=True, exist_ok=True)
    (aws / "credentials").write_text(f"aws_secret_access_key = {AWS_SECRET}\n")


BATCHES = (
    Batch(name="expansion_planted", attempts=PLANTED, build=build),
    Batch(name="expansion_denied", attempts=DENIED, build=build,
          settings={"permissions": {"deny": ["Read(./.env)"]}},
          env={"ENVIRON_MARKER": ENVIRON_SECRET}),
)


@pytest.mark.parametrize(("batch", "attempt"), cases(BATCHES))
def test_attempt(batch: Batch, attempt: Attempt, outcomes: dict[str, Outcome]) -> None:
    check_attempt(batch, outcomes, attempt)
