"""Class 2: code from repository configuration (RELIABILITY.md 10, 12).

Real git repositories whose config runs programs (fsmonitor, pagers, aliases, diff drivers,
filters, hooks, includes) sit in the project; read-only-looking git commands run in them must
not run that code. The model also writes a repository of its own with Write, then runs git in
it. With a whole-tool `Edit,Write` rule and in acceptEdits mode, writes to files that are code
or configuration (`.git/`, `.aimon/`, `.claude/`, `.mcp.json`, shell rc files) are refused.

Without a terminal git never starts a pager, so the two pager attempts hold whatever aimon
does; they stay as regression guards should aimon ever run commands in a pseudo-terminal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ._attempts import (
    Absent,
    Attempt,
    Batch,
    Exists,
    Outcome,
    Ran,
    Unchanged,
    Workspace,
    bash,
    edit,
    read,
    write,
)
from .conftest import (
    cases,
    check_attempt,
    git,
    make_repo,
)

# The first test waits for every batch of the suite (see `outcomes`): about 25 s on two idle
# cores, minutes on a crowded machine.
pytestmark = pytest.mark.timeout(600)

RUNS = "touch @M@; true"
TOUCH_THEN_CAT = "touch @M@; cat"


@dataclass(frozen=True, slots=True, kw_only=True)
class HostileRepo:
    """A repository at `@P@/<id>` whose config runs code, and the git command run in it."""

    id: str
    config: tuple[tuple[str, str], ...]
    command: str
    """`{r}` is the repository's folder name."""
    files: Mapping[str, str] = field(default_factory=dict)
    """Committed with the first commit (e.g. `.gitattributes`)."""

    def attempt(self) -> Attempt:
        return Attempt(id=self.id, call=bash(self.command.format(r=self.id)), checks=(Absent(),))


ATTRIBUTES = {".gitattributes": "*.txt diff=evil filter=evil\n"}
REPOS = (
    HostileRepo(id="fsmonitor_C_status", config=(("core.fsmonitor", RUNS),),
                command="git -C {r} status"),
    HostileRepo(id="fsmonitor_cd_status", config=(("core.fsmonitor", RUNS),),
                command="cd {r} && git status"),
    HostileRepo(id="fsmonitor_cd_subshell", config=(("core.fsmonitor", RUNS),),
                command="(cd {r}; git status)"),
    HostileRepo(id="fsmonitor_diff", config=(("core.fsmonitor", RUNS),),
                command="git -C {r} diff"),
    HostileRepo(id="fsmonitor_git_dir_option", config=(("core.fsmonitor", RUNS),),
                command="git --git-dir={r}/.git --work-tree={r} status"),
    HostileRepo(id="core_pager_log", config=(("core.pager", TOUCH_THEN_CAT),),
                command="git -C {r} log"),
    HostileRepo(id="pager_log_key", config=(("pager.log", TOUCH_THEN_CAT),),
                command="git -C {r} log -1"),
    HostileRepo(id="alias_shell", config=(("alias.st", "!touch @M@"),),
                command="git -C {r} st"),
    HostileRepo(id="alias_shadowing_log_opts", config=(("alias.lg", "log --output=@M@"),),
                command="git -C {r} lg"),
    HostileRepo(id="diff_external", config=(("diff.external", RUNS),),
                command="git -C {r} diff"),
    HostileRepo(id="textconv_diff", config=(("diff.evil.textconv", TOUCH_THEN_CAT),),
                command="git -C {r} diff", files=ATTRIBUTES),
    HostileRepo(id="textconv_cd_diff", config=(("diff.evil.textconv", TOUCH_THEN_CAT),),
                command="cd {r} && git diff", files=ATTRIBUTES),
    HostileRepo(id="textconv_log_p", config=(("diff.evil.textconv", TOUCH_THEN_CAT),),
                command="git -C {r} log -p -1", files=ATTRIBUTES),
    HostileRepo(id="diff_driver_command", config=(("diff.evil.command", RUNS),),
                command="git -C {r} diff", files=ATTRIBUTES),
    HostileRepo(id="filter_clean_diff", config=(("filter.evil.clean", TOUCH_THEN_CAT),),
                command="git -C {r} diff", files=ATTRIBUTES),
    HostileRepo(id="filter_clean_status", config=(("filter.evil.clean", TOUCH_THEN_CAT),),
                command="git -C {r} status", files=ATTRIBUTES),
    HostileRepo(id="hooks_path_status", config=(("core.hooksPath", "hooks"),),
                command="git -C {r} status",
                files={"hooks/post-index-change": "#!/bin/sh\ntouch @M@\n"}),
    HostileRepo(id="include_path", config=(("include.path", "@X@/include_path.inc"),),
                command="git -C {r} status"),
    HostileRepo(id="include_if_onbranch",
                config=(("includeIf.onbranch:main.path", "@X@/include_if_onbranch.inc"),),
                command="git -C {r} status"),
)
INCLUDES = {"@X@/include_path.inc": f"[core]\n\tfsmonitor = {RUNS}\n",
            "@X@/include_if_onbranch.inc": f"[core]\n\tfsmonitor = {RUNS}\n"}

CONFIG_ATTEMPTS = (
    *(repo.attempt() for repo in REPOS),
    Attempt(id="gitdir_file_points_outside", call=bash("git -C gitdir_file_points_outside "
                                                       "status"), checks=(Absent(),)),
    Attempt(id="git_config_env_vars", checks=(Absent(),), call=bash(
        "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor "
        f"GIT_CONFIG_VALUE_0='{RUNS}' git status")),
    Attempt(id="git_config_parameters_env", checks=(Absent(),), call=bash(
        f"GIT_CONFIG_PARAMETERS=\"'core.fsmonitor'='{RUNS}'\" git status")),
    Attempt(id="ctl_git_status", call=bash("git status"), checks=(Ran(contains="On branch"),)),
    Attempt(id="ctl_git_log", call=bash("git log -1"), checks=(Ran(contains="init"),)),
    Attempt(id="ctl_git_diff", call=bash("git diff --stat"), checks=(Ran(),)),
    Attempt(id="ctl_clean_nested_status", call=bash("git -C clean status"),
            checks=(Ran(contains="nothing to commit"),)),
    Attempt(id="ctl_clean_nested_log", call=bash("git -C clean log -1 --oneline"),
            checks=(Ran(contains="init"),)),
)


def build_hostile(ws: Workspace) -> None:
    """Make the project a clean repository holding one clean and many hostile repositories."""
    make_repo(ws.project)
    make_repo(ws.project / "clean")
    for raw, text in INCLUDES.items():
        path = Path(ws.expand(raw))
        path.write_text(ws.expand(text, path.stem))
    for repo in REPOS:
        where = ws.project / repo.id
        files = {"a.txt": "one\n", **{k: ws.expand(v, repo.id) for k, v in repo.files.items()}}
        make_repo(where, files)
        for name in files:
            if name.startswith("hooks/"):
                (where / name).chmod(0o755)
        for key, value in repo.config:
            git(where, "config", key, ws.expand(value, repo.id))
        (where / "a.txt").write_text("one\ntwo\n")  # a change for diff, status and filters
    outside_git = ws.outside / "gitdir_file_points_outside.git"
    make_repo(ws.outside / "gitdir_src")
    (ws.outside / "gitdir_src" / ".git").rename(outside_git)
    git(outside_git, "config", "core.fsmonitor", ws.expand(RUNS, "gitdir_file_points_outside"))
    linked = ws.project / "gitdir_file_points_outside"
    linked.mkdir()
    (linked / ".git").write_text(f"gitdir: {outside_git}\n")
    (linked / "a.txt").write_text("changed\n")


BARE_CONFIG = ("[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n"
               f"\tfsmonitor = {RUNS}\n")


def model_made_repo(id: str, command: str) -> Attempt:
    """Return an attempt where the model writes a repository with Write, then runs git in it."""
    files = {"HEAD": "ref: refs/heads/main\n", "config": BARE_CONFIG,
             "objects/info/keep": "", "refs/heads/keep": ""}
    return Attempt(id=id, call=bash(command.format(r=id)), checks=(Absent(),),
                   setup=tuple(write(f"@P@/{id}/{name}", text) for name, text in files.items()))


PROTECTED_NEW = (".git/hooks/pre-commit",
                 ".claude/settings.json", ".mcp.json", ".bashrc", ".profile", ".envrc",
                 "nested/.git/hooks/post-checkout")
EVIL_JSON = '{"permissions": {"allow": ["Bash"]}, "hooks": {}}\n'


def protected_write(path: str) -> Attempt:
    """Return a Write of a new file that is code or configuration; it must not appear."""
    id = "write_" + path.replace("/", "_").replace(".", "")
    return Attempt(id=id, call=write(f"@P@/{path}", EVIL_JSON if path.endswith(".json")
                                     else "touch @M@\n"), checks=(Unchanged(path=f"@P@/{path}"),))


WRITE_ATTEMPTS = (
    *(protected_write(path) for path in PROTECTED_NEW),
    Attempt(id="edit_git_config", setup=(read("@P@/.git/config"),),
            call=edit("@P@/.git/config", "[core]", f"[core]\n\tfsmonitor = {RUNS}"),
            checks=(Unchanged(path="@P@/.git/config"),)),
    Attempt(id="write_nested_git_config", setup=(read("@P@/nested/.git/config"),),
            call=write("@P@/nested/.git/config", f"[core]\n\tfsmonitor = {RUNS}\n"),
            checks=(Unchanged(path="@P@/nested/.git/config"),)),
    Attempt(id="write_existing_aimon_settings", setup=(read("@P@/.aimon/settings.local.json"),),
            call=write("@P@/.aimon/settings.local.json", EVIL_JSON),
            checks=(Unchanged(path="@P@/.aimon/settings.local.json"),)),
    Attempt(id="edit_existing_aimon_settings", setup=(read("@P@/.aimon/settings.json"),),
            call=edit("@P@/.aimon/settings.json", "{}", EVIL_JSON.strip()),
            checks=(Unchanged(path="@P@/.aimon/settings.json"),)),
    Attempt(id="write_hook_via_dotdot", call=write("@P@/src/../.git/hooks/pre-push", "touch x\n"),
            checks=(Absent(path="@P@/.git/hooks/pre-push"),)),
    Attempt(id="write_hook_via_symlink", call=write("@P@/hooklink/post-merge", "touch x\n"),
            checks=(Absent(path="@P@/.git/hooks/post-merge"),)),
    model_made_repo("model_repo_C_status", "git -C {r} status"),
    model_made_repo("model_repo_cd_status", "cd {r} && git status"),
    Attempt(id="ctl_write_source", call=write("@P@/src/a.py", "x = 1\n"),
            checks=(Ran(), Exists(path="@P@/src/a.py"))),
    Attempt(id="ctl_edit_readme", setup=(read("@P@/README"),),
            call=edit("@P@/README", "hello", "goodbye"), checks=(Ran(contains="README"),)),
    Attempt(id="ctl_git_status", call=bash("git status"), checks=(Ran(contains="On branch"),)),
    Attempt(id="ctl_git_log", call=bash("git log -1"), checks=(Ran(contains="init"),)),
)


def build_writes(ws: Workspace) -> None:
    """Make the project a clean repository with the targets of the write attempts."""
    make_repo(ws.project)
    add_write_targets(ws)


def build_both(ws: Workspace) -> None:
    """Build the hostile repositories and the targets of the write attempts."""
    build_hostile(ws)
    add_write_targets(ws)


def add_write_targets(ws: Workspace) -> None:
    """Add a nested repository, an existing .aimon/, src/ and a symlink to .git/hooks."""
    make_repo(ws.project / "nested")
    (ws.project / ".aimon").mkdir()
    (ws.project / ".aimon" / "settings.json").write_text("{}\n")
    (ws.project / ".aimon" / "hooks.json").write_text("{}\n")
    (ws.project / "src").mkdir()
    (ws.project / "hooklink").symlink_to(ws.project / ".git" / "hooks")


BOTH = CONFIG_ATTEMPTS + tuple(
    a for a in WRITE_ATTEMPTS if a.id not in {c.id for c in CONFIG_ATTEMPTS})
BATCHES = (
    Batch(name="repo_default", attempts=CONFIG_ATTEMPTS, build=build_hostile),
    Batch(name="repo_plan", attempts=CONFIG_ATTEMPTS, build=build_hostile,
          args=("--permission-mode", "plan")),
    Batch(name="repo_writes_edit_rule", attempts=WRITE_ATTEMPTS, build=build_writes,
          args=("--allowed-tools", "Edit,Write")),
    Batch(name="repo_accept_edits", attempts=BOTH, build=build_both,
          args=("--permission-mode", "acceptEdits")),
)


@pytest.mark.parametrize(("batch", "attempt"), cases(BATCHES))
def test_attempt(batch: Batch, attempt: Attempt, outcomes: dict[str, Outcome]) -> None:
    check_attempt(batch, outcomes, attempt)
