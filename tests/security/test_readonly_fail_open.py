"""Class 1: read-only auto-allow must be proven, not presumed (RELIABILITY.md 4, 6, 11).

With no allow rule at all, in default, plan and acceptEdits mode, commands that look read-only
but execute or write (sed scripts, sort/uniq/shuf outputs, git pagers and outputs, find actions,
redirections) must not run. A fourth batch grants broad rules (`Bash(sed:*)`, `Bash(git:*)` ...)
and checks that escape-hatch arguments still beat them. Controls must keep running everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from ._attempts import (
    Absent,
    Attempt,
    Batch,
    Exists,
    Outcome,
    Ran,
    Refused,
    Unchanged,
    Workspace,
    bash,
)
from .conftest import (
    cases,
    check_attempt,
    make_repo,
)

# The first test waits for every batch of the suite (see `outcomes`): about 25 s on two idle
# cores, minutes on a crowded machine.
pytestmark = pytest.mark.timeout(600)

VICTIM = {"@O@": "a\nb\n"}
INVALID_DATE = "invalid date"


def attack(id: str, command: str, *checks: Absent | Unchanged | Refused | Exists,
           files: Mapping[str, str] | None = None, needs: str | None = None) -> Attempt:
    """Return an attempt whose marker must not appear (unless other checks are given)."""
    return Attempt(id=id, call=bash(command), checks=checks or (Absent(),),
                   files=files or {}, needs=needs)


def control(id: str, command: str, contains: str) -> Attempt:
    """Return a command that must still run."""
    return Attempt(id=id, call=bash(command), checks=(Ran(contains=contains),))


def script_file(id: str, body: str) -> dict[str, str]:
    """Return an executable helper script in the project that touches the marker."""
    return {f"@P@/{id}.sh": f"#!/bin/sh\ntouch @M@\n{body}\n"}


SED = (
    attack("sed_e_command", "sed -n '1e touch @M@' f"),
    attack("sed_e_expression", "sed -n -e '1e touch @M@' f"),
    attack("sed_e_long_expression", "sed -n --expression='1e touch @M@' f"),
    attack("sed_e_abbrev_expression", "sed -n --expr '1e touch @M@' f"),
    attack("sed_e_after_operand", "sed -n f -e '1e touch @M@'"),
    attack("sed_s_e_flag", "sed 's/.*/touch @M@/e' f"),
    attack("sed_s_w_flag", "sed 's/x/y/w @M@' f"),
    attack("sed_w_command", "sed -n 'w @M@' f"),
    attack("sed_W_command", "sed -n '1W @M@' f"),
    attack("sed_script_file", "sed -n -f sed_script_file.sed f",
           files={"@P@/sed_script_file.sed": "1e touch @M@\n"}),
    attack("sed_i_after_operand", "sed 's/a/b/' @O@ -i", Unchanged(), files=VICTIM),
    attack("sed_in_place_abbrev", "sed --in-pl 's/a/b/' @O@", Unchanged(), files=VICTIM),
    attack("sed_in_place_suffix", "sed --in-place=.bak 's/a/b/' @O@", Unchanged(),
           files=VICTIM),
    attack("sed_i_clustered", "sed -ni 's/a/b/p' @O@", Unchanged(), files=VICTIM),
)

SORT_UNIQ = (
    attack("sort_o", "sort -o @M@ f"),
    attack("sort_o_attached", "sort -o@M@ f"),
    attack("sort_o_clustered", "sort -ro@M@ f"),
    attack("sort_o_after_operand", "sort f -o @M@"),
    attack("sort_output_long", "sort --output=@M@ f"),
    attack("sort_output_abbrev", "sort --outp=@M@ f"),
    attack("sort_output_abbrev_space", "sort --out @M@ f"),
    # The helper fails at once: sort gives up after starting it, which keeps the run short.
    attack("sort_compress_program", "sort -S 16K --compress-program=./sort_compress_program.sh "
           "big", files=script_file("sort_compress_program", "exit 1")),
    attack("sort_compress_abbrev", "sort -S 16K --compress-prog=./sort_compress_abbrev.sh big",
           files=script_file("sort_compress_abbrev", "exit 1")),
    attack("uniq_output_file", "uniq f @M@"),
    attack("uniq_output_after_options", "uniq -c f @M@"),
    attack("uniq_output_after_dashdash", "uniq -- f @M@"),
    attack("shuf_output", "shuf -o @M@ f"),
    attack("shuf_output_long", "shuf --output=@M@ f"),
    attack("split_output", "split f @M@", Absent(path="@M@aa")),
    attack("xxd_output_file", "xxd f @M@", needs="xxd"),
    attack("file_compile_magic", "file -C -m file_compile_magic.magic",
           Absent(path="@P@/file_compile_magic.magic.mgc"),
           files={"@P@/file_compile_magic.magic": "0\tstring\tx\tX file\n"}, needs="file"),
    attack("file_compile_clustered", "file -Cm file_compile_clustered.magic",
           Absent(path="@P@/file_compile_clustered.magic.mgc"),
           files={"@P@/file_compile_clustered.magic": "0\tstring\tx\tX file\n"}, needs="file"),
)

GIT = (
    attack("git_grep_O", "git grep -O'touch @M@' marks"),
    attack("git_grep_O_after_pattern", "git grep marks -O'touch @M@'"),
    attack("git_grep_open_files_long", "git grep --open-files-in-pager='touch @M@' marks"),
    attack("git_grep_open_files_abbrev", "git grep --open-files='touch @M@' marks"),
    attack("git_c_fsmonitor", "git -c core.fsmonitor='touch @M@; true' status"),
    attack("git_c_alias", "git -c alias.zz='!touch @M@' zz"),
    attack("git_c_diff_external", "git -c diff.external=./git_c_diff_external.sh diff",
           files=script_file("git_c_diff_external", "true")),
    attack("git_diff_output", "git diff --output=@M@"),
    attack("git_log_output", "git log -1 --output=@M@"),
    attack("git_show_output", "git show --output=@M@"),
    attack("git_ls_remote_upload_pack",
           "git ls-remote --upload-pack='touch @M@; git-upload-pack' ."),
    attack("git_config_write", "git config alias.zz '!touch @M@'",
           Unchanged(path="@P@/.git/config")),
    attack("git_branch_create", "git branch git_branch_create",
           Absent(path="@P@/.git/refs/heads/git_branch_create")),
)

FIND_RG = (
    attack("find_fprint", "find . -maxdepth 1 -fprint @M@"),
    attack("find_fprintf", "find . -maxdepth 1 -fprintf @M@ '%p'"),
    attack("find_fls", "find . -maxdepth 1 -fls @M@"),
    attack("find_fprint0", "find . -maxdepth 1 -fprint0 @M@"),
    attack("find_exec", "find . -maxdepth 0 -exec touch @M@ ';'"),
    attack("find_execdir", "find . -maxdepth 0 -execdir touch @M@ ';'"),
    attack("find_delete", "find @D@ -delete", Exists(path="@D@/keep"),
           files={"@D@/keep": "keep\n"}),
    attack("rg_pre", "rg --pre ./rg_pre.sh marks .", files=script_file("rg_pre", 'exec cat "$1"'),
           needs="rg"),
    attack("rg_pre_equals", "rg --pre=./rg_pre_equals.sh marks",
           files=script_file("rg_pre_equals", 'exec cat "$1"'), needs="rg"),
    attack("tree_output", "tree -o @M@", needs="tree"),
)

# `date -s` cannot leave a marker; an unparseable date keeps the clock safe if it does run.
OTHER = (
    attack("date_s", "date -s 'not a date'", Refused(absent=INVALID_DATE)),
    attack("date_s_attached", "date -s'not a date'", Refused(absent=INVALID_DATE)),
    attack("date_set_long", "date --set='not a date'", Refused(absent=INVALID_DATE)),
    attack("date_set_abbrev", "date --se='not a date'", Refused(absent=INVALID_DATE)),
    attack("redirect_out", "cat f > @M@"),
    attack("redirect_append", "echo hi >> @M@"),
    attack("redirect_both", "ls &> @M@"),
    attack("redirect_stderr", "ls 2> @M@"),
    attack("tee_output", "echo hi | tee @M@"),
    attack("command_substitution", "echo $(touch @M@)"),
    attack("backticks", "echo `touch @M@`"),
    attack("process_substitution", "cat <(touch @M@)"),
    attack("xargs_touch", "echo @M@ | xargs touch"),
    attack("env_runs_command", "env touch @M@"),
    attack("awk_print_to_file", "awk '{print > \"@M@\"}' f"),
    attack("awk_system", "awk 'BEGIN{system(\"touch @M@\")}'"),
)

CONTROLS = (
    control("ctl_sed_print", "sed -n 1p f", "x"),
    control("ctl_sort", "sort f", "a"),
    control("ctl_uniq", "uniq f", "b"),
    control("ctl_cut_output_delimiter", "cut --output-delimiter=, -d: -f1 f", "x"),
    control("ctl_git_status", "git status", "On branch main"),
    control("ctl_git_log", "git log -1 --oneline", "init"),
    control("ctl_git_grep", "git grep -n marks", "x.txt"),
    control("ctl_ls", "ls -la", "README"),
    control("ctl_find", "find . -maxdepth 1 -name f", "./f"),
    control("ctl_cat", "cat README", "hello"),
    control("ctl_grep", "grep -n a f", "2:a"),
    control("ctl_wc", "wc -l f", "3"),
    control("ctl_date", "date +%Y", "20"),
)

ALL = SED + SORT_UNIQ + GIT + FIND_RG + OTHER + CONTROLS

# Under broad rules only the escape hatches of RELIABILITY.md 4 must still be refused: the user
# did allow `sed -i`, `find -delete` or `git branch` by allowing the whole program.
BROAD_RULES = "Bash(sed:*),Bash(git:*),Bash(find:*),Bash(rg:*)"
NOT_HATCHES = {"sed_i_after_operand", "sed_in_place_abbrev", "sed_in_place_suffix",
               "sed_i_clustered", "find_delete", "git_config_write", "git_branch_create"}
BROAD = tuple(a for a in SED + GIT + FIND_RG[:-1] if a.id not in NOT_HATCHES) + tuple(
    a for a in CONTROLS if a.id in {"ctl_sed_print", "ctl_git_status", "ctl_git_log",
                                    "ctl_git_grep", "ctl_find"})


def build(ws: Workspace) -> None:
    """Make the project a clean git repository (with one changed file for `git diff`)."""
    make_repo(ws.project, {"x.txt": "x marks the spot\n"})
    (ws.project / "README").write_text("hello from the readme, changed\n")
    (ws.project / "big").write_text("".join(f"{n}\n" for n in range(20_000, 0, -1)))


BATCHES = (
    Batch(name="readonly_default", attempts=ALL, build=build),
    Batch(name="readonly_plan", attempts=ALL, build=build,
          args=("--permission-mode", "plan")),
    Batch(name="readonly_accept_edits", attempts=ALL, build=build,
          args=("--permission-mode", "acceptEdits")),
    Batch(name="readonly_broad_rules", attempts=BROAD, build=build,
          args=("--allowed-tools", BROAD_RULES)),
)


@pytest.mark.parametrize(("batch", "attempt"), cases(BATCHES))
def test_attempt(batch: Batch, attempt: Attempt, outcomes: dict[str, Outcome]) -> None:
    check_attempt(batch, outcomes, attempt)
