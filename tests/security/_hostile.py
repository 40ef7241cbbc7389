"""Hostile repository layouts: folders git would take for a repository whose config runs code.

Each layout builds itself under a project folder and names the folders aimon may start in
(the project, a sub-folder below the hostile part). Whatever git runs from the layout's
configuration touches `marker`; a test that starts aimon (or calls the code that describes the
repository) in one of the starts then checks that the marker does not exist.

Layouts are data: a new way to hand git a configuration is one more `Layout` row, and every
table built from `LAYOUTS` covers it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .conftest import git, make_repo


def runs(marker: Path) -> str:
    """Return a shell command that leaves `marker` behind and succeeds."""
    return f"touch {marker}; true"


def touch_then_cat(marker: Path) -> str:
    """Return a filter that leaves `marker` behind and passes its input through."""
    return f"touch {marker}; cat"


def bare_config(marker: Path, extra: str = "") -> str:
    """Return the config of a hand-made repository whose worktree is its parent folder."""
    return ("[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n"
            f"\tfsmonitor = {runs(marker)}\n{extra}")


def bare_looking(folder: Path, config: str) -> None:
    """Lay `folder` out like a bare repository (HEAD, objects/, refs/, config)."""
    (folder / "objects" / "info").mkdir(parents=True, exist_ok=True)
    (folder / "refs" / "heads").mkdir(parents=True, exist_ok=True)
    (folder / "HEAD").write_text("ref: refs/heads/main\n")
    (folder / "config").write_text(config)


def _bare_subfolder(project: Path, outside: Path, marker: Path) -> None:
    (project / "a.txt").write_text("one\n")
    bare_looking(project / "sub", bare_config(marker))
    (project / "sub" / "deeper").mkdir()


def _bare_subfolder_hooks(project: Path, outside: Path, marker: Path) -> None:
    # A real repository's .git moved to `sub/` and pointed back at the project: git takes
    # `sub` for a bare repository with a worktree, refreshes its index, and runs the hook.
    make_repo(project, {"a.txt": "one\n"})
    sub = project / "sub"
    (project / ".git").rename(sub)
    git(sub, "config", "core.worktree", "..")
    git(sub, "config", "core.hooksPath", "hooks")
    hook = project / "hooks" / "post-index-change"  # relative to the worktree
    hook.parent.mkdir()
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    os.utime(project / "a.txt", (1, 1))  # a stale index entry: git status rewrites the index


def _moved_gitdir(project: Path, outside: Path, marker: Path, name: str) -> Path:
    """Make `project` a repository whose .git folder lives at `outside/name`, hostile."""
    make_repo(project, {"a.txt": "one\n", "src/b.txt": "two\n"})
    gitdir = outside / name
    (project / ".git").rename(gitdir)
    git(gitdir, "config", "core.fsmonitor", runs(marker))
    (project / "a.txt").write_text("changed\n")
    return gitdir


def _gitfile_absolute(project: Path, outside: Path, marker: Path) -> None:
    gitdir = _moved_gitdir(project, outside, marker, "absolute.git")
    (project / ".git").write_text(f"gitdir: {gitdir}\n")


def _gitfile_relative(project: Path, outside: Path, marker: Path) -> None:
    gitdir = _moved_gitdir(project, outside, marker, "relative.git")
    (project / ".git").write_text(f"gitdir: ../{gitdir.relative_to(project.parent)}\n")


def _linked_worktree(project: Path, outside: Path, marker: Path) -> None:
    main = make_repo(outside / "main", {"a.txt": "one\n", "src/b.txt": "two\n"})
    git(main, "worktree", "add", "-q", "-b", "wt", str(project))
    git(main, "config", "core.fsmonitor", runs(marker))
    (project / "a.txt").write_text("changed\n")


def _dotgit_config(project: Path, outside: Path, marker: Path) -> None:
    make_repo(project, {"a.txt": "one\n", "src/b.txt": "two\n"})
    git(project, "config", "core.fsmonitor", runs(marker))
    (project / "a.txt").write_text("changed\n")


def _filter_clean(project: Path, outside: Path, marker: Path) -> None:
    make_repo(project, {"a.txt": "one\n", ".gitattributes": "*.txt filter=evil\n"})
    git(project, "config", "filter.evil.clean", touch_then_cat(marker))
    (project / "a.txt").write_text("two\n")  # the same size: git must read it to compare


def _hooks_path(project: Path, outside: Path, marker: Path) -> None:
    make_repo(project, {"a.txt": "one\n", "hooks/post-index-change": f"#!/bin/sh\ntouch "
                                                                      f"{marker}\n"})
    (project / "hooks" / "post-index-change").chmod(0o755)
    git(project, "config", "core.hooksPath", "hooks")
    (project / "a.txt").write_text("changed\n")


def _include_path(project: Path, outside: Path, marker: Path) -> None:
    make_repo(project, {"a.txt": "one\n"})
    included = outside / "evil.inc"
    included.write_text(f"[core]\n\tfsmonitor = {runs(marker)}\n")
    git(project, "config", "include.path", str(included))
    (project / "a.txt").write_text("changed\n")


def _submodule(project: Path, outside: Path, marker: Path) -> None:
    make_repo(project, {"a.txt": "one\n"})
    inner = make_repo(project / "inner", {"b.txt": "two\n"})
    git(project, "add", "inner")
    git(project, "commit", "-q", "-m", "gitlink")
    git(inner, "config", "core.fsmonitor", runs(marker))
    (inner / "b.txt").write_text("changed\n")


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """One way a folder hands git a configuration that runs code."""

    id: str
    build: Callable[[Path, Path, Path], None]
    """Build it from (project, outside folder, marker)."""
    starts: tuple[str, ...] = ("",)
    """The folders to start in, relative to the project."""
    env: tuple[tuple[str, str], ...] = ()
    """Variables in aimon's own environment (`@X@` is the outside folder)."""


def _git_dir_env(project: Path, outside: Path, marker: Path) -> None:
    _moved_gitdir(project, outside, marker, "env.git")


LAYOUTS = (
    Layout(id="bare_subfolder", build=_bare_subfolder, starts=("sub", "sub/deeper")),
    Layout(id="bare_subfolder_hooks", build=_bare_subfolder_hooks, starts=("sub",)),
    Layout(id="gitfile_absolute", build=_gitfile_absolute, starts=("", "src")),
    Layout(id="gitfile_relative", build=_gitfile_relative, starts=("", "src")),
    Layout(id="linked_worktree", build=_linked_worktree, starts=("", "src")),
    Layout(id="dotgit_config", build=_dotgit_config, starts=("", "src")),
    Layout(id="filter_clean", build=_filter_clean),
    Layout(id="hooks_path", build=_hooks_path),
    Layout(id="include_path", build=_include_path),
    Layout(id="submodule", build=_submodule),
    Layout(id="git_dir_env", build=_git_dir_env,
           env=(("GIT_DIR", "@X@/env.git"), ("GIT_WORK_TREE", "@P@"))),
)
