"""Find the repository git would use, and tell whether its configuration runs nothing.

Git runs programs named in a repository's config (``core.fsmonitor``, ``core.pager``,
``alias.*``, diff drivers, filters, ``core.hooksPath``...) and in its hooks, also for ``git
status``; and ``git status`` recurses into submodules, whose configs count too. A checkout the
model can write is therefore code. A repository is inert when every key of every config git
reads for it is on a short list, it has no hooks, and each populated submodule is inert too.
The user's own ``~/.gitconfig`` and the system config are trusted and not read here.

Discovery follows git's (``setup.c``) from the command's directory upward: ``DIR/.git`` as a
directory or a ``gitdir:`` file (worktrees: also their ``commondir``), then ``DIR`` itself as a
bare repository. A candidate is vetted whatever git would think of it; the walk stops only at one
that is surely valid to git, so git can never skip past a vetted repository to an unvetted one.

Shared by the Bash tool's read-only check and by aimon's own description of the repository in
the system prompt (`find_repository`, `read_branch`): both read files, and git itself runs only
where `repository_is_inert` says so.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from aimon_core.filesystem._gitconfig import index_gitlinks, parse_config

_INERT_KEYS = frozenset({
    "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
    "core.ignorecase", "core.precomposeunicode", "core.symlinks", "user.name", "user.email",
    "init.defaultbranch", "extensions.worktreeconfig", "extensions.objectformat",
})
# Keys inert under any subsection name: ``remote.<name>.url``.
_INERT_NAMED_KEYS = frozenset({
    ("remote", "url"), ("remote", "fetch"), ("remote", "pushurl"), ("branch", "remote"),
    ("branch", "merge"),
})
# Set in aimon's own environment these choose another repository or index: fail closed.
_REPOSITORY_ENV = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
)
_HEAD = re.compile(rb"ref: refs/[^\n]*\n?|[0-9a-f]{40}(?:[0-9a-f]{24})?\n?")
# A branch name aimon repeats in the system prompt: what git allows, minus the odd corners.
_BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+@-]{0,199}")
_SMALL = 4096
_MAX_CONFIG = 1 << 20
_MAX_SUBMODULE_DEPTH = 3
_STOP, _ON, _UNSAFE = "stop", "on", "unsafe"


def repository_is_inert(cwd: Path, *, hooks_run: bool = True) -> bool:
    """Tell whether git run in ``cwd`` would find only inert repository configuration.

    ``hooks_run=False``: the caller runs git with hooks turned off (``-c core.hooksPath=
    /dev/null``, as aimon's own worktree commands do), so hooks of the repository do not count.
    """
    if any(os.environ.get(name) for name in _REPOSITORY_ENV):
        return False
    try:
        start = Path(os.path.realpath(cwd))
    except (OSError, ValueError):
        return False
    return _walk(start, depth=0, seen=_Seen(hooks_run=hooks_run))


class _Seen(set[str]):
    """The git folders vetted so far in one walk, and whether their hooks would run."""

    def __init__(self, *, hooks_run: bool) -> None:
        super().__init__()
        self.hooks_run = hooks_run


@dataclass(frozen=True, slots=True, kw_only=True)
class Repository:
    """The repository git would use in a folder, found from its files alone."""

    gitdir: Path
    """The folder holding HEAD (a linked worktree's own folder under the main repository)."""
    worktree: Path | None
    """The checkout's top folder; None for a folder laid out like a bare repository."""


def find_repository(cwd: Path) -> Repository | None:
    """Return the repository git run in ``cwd`` would surely use, found as git finds it.

    Nothing runs: only files are read. None when there is none, when a candidate on the way
    is one git might or might not take, or when aimon's environment names one (``GIT_DIR``).
    """
    if any(os.environ.get(name) for name in _REPOSITORY_ENV):
        return None
    try:
        start = Path(os.path.realpath(cwd))
    except (OSError, ValueError):
        return None
    for directory in (start, *start.parents):
        try:
            gitdir = _dotgit(directory)
        except OSError:
            return None
        if gitdir is not None:
            return Repository(gitdir=gitdir, worktree=directory) if _surely_valid(gitdir) else None
        if os.path.lexists(directory / "HEAD"):
            if _surely_valid(directory):
                return Repository(gitdir=directory, worktree=None)
            return None
    return None


def read_branch(repository: Repository) -> str | None:
    """Return the checked-out branch (``HEAD`` when detached), read from the HEAD file.

    None when HEAD is not in a form git writes, or names a ref aimon would not repeat.
    """
    try:
        head = repository.gitdir / "HEAD"
        if not stat.S_ISREG(head.lstat().st_mode):
            return None
        data = _read_small(head)
    except OSError:
        return None
    if not _HEAD.fullmatch(data):
        return None
    text = data.decode("ascii", "replace").strip()
    if not text.startswith("ref: "):
        return "HEAD"
    ref = text.removeprefix("ref: ")
    name = ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else ref
    return name if _BRANCH.fullmatch(name) and ".." not in name else None


def _walk(start: Path, *, depth: int, seen: _Seen) -> bool:
    for directory in (start, *start.parents):
        match _at(directory, depth=depth, seen=seen):
            case "stop":
                return True
            case "unsafe":
                return False
            case _:
                continue
    return True


def _at(directory: Path, *, depth: int, seen: _Seen) -> str:
    """Vet the repositories git could take at ``directory``: stop, go on upward, or unsafe."""
    try:
        gitdir = _dotgit(directory)
    except OSError:
        return _UNSAFE
    if gitdir is not None:
        if not _gitdir_is_inert(gitdir, directory, depth=depth, seen=seen):
            return _UNSAFE
        if _surely_valid(gitdir):
            return _STOP
    # Git never takes a folder without HEAD for a repository (`validate_headref`).
    if os.path.lexists(directory / "HEAD"):
        if not _gitdir_is_inert(directory, None, depth=depth, seen=seen):
            return _UNSAFE
        if _surely_valid(directory):
            return _STOP
    return _ON


def _dotgit(directory: Path) -> Path | None:
    """Return the git directory ``directory/.git`` names (itself, or a ``gitdir:`` file's).

    None when there is no ``.git``; OSError when it cannot be told (unreadable, or a file
    that is not a gitdir file: git stops there with an error).
    """
    dotgit = directory / ".git"
    try:
        mode = dotgit.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    gitdir = dotgit if stat.S_ISDIR(mode) else _read_gitfile(dotgit, mode)
    if gitdir is None:
        raise OSError(f"{dotgit} is neither a folder nor a gitdir file")
    return gitdir


def _read_gitfile(path: Path, mode: int) -> Path | None:
    if not stat.S_ISREG(mode):
        return None
    try:
        text = _read_small(path).decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not text.startswith("gitdir:"):
        return None
    return path.parent / text.removeprefix("gitdir:").strip()


def _common_dir(gitdir: Path) -> Path | None:
    commondir = gitdir / "commondir"
    if not commondir.exists():
        return gitdir
    try:
        text = _read_small(commondir).decode("utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return gitdir / text if text else None


def _surely_valid(gitdir: Path) -> bool:
    """Tell whether git certainly takes ``gitdir`` as a repository (stricter than git)."""
    common = _common_dir(gitdir)
    if common is None:
        return False
    try:
        head = gitdir / "HEAD"
        if not stat.S_ISREG(head.lstat().st_mode) or not _HEAD.fullmatch(_read_small(head)):
            return False
    except OSError:
        return False
    return all(
        (common / name).is_dir() and os.access(common / name, os.X_OK)
        for name in ("objects", "refs")
    )


def _gitdir_is_inert(gitdir: Path, worktree: Path | None, *, depth: int,
                     seen: _Seen) -> bool:
    key = os.path.realpath(gitdir)
    if key in seen:
        return True
    seen.add(key)
    common = _common_dir(gitdir)
    if common is None:
        return False
    hash_len = 20
    for folder in dict.fromkeys((gitdir, common)):
        for name in ("config", "config.worktree"):
            entries = config_entries(folder / name)
            if entries is None or not all(_inert(k) for k, _ in entries):
                return False
            if ("extensions.objectformat", "sha256") in entries:
                hash_len = 32
        if seen.hooks_run and _has_hooks(folder / "hooks"):
            return False
    if worktree is None:
        return True
    return _submodules_inert(gitdir / "index", worktree, hash_len, depth=depth, seen=seen)


def _submodules_inert(index: Path, worktree: Path, hash_len: int, *, depth: int,
                      seen: _Seen) -> bool:
    links = _gitlinks(index, hash_len)
    if links is None:
        return False
    for link in links:
        sub = worktree / link
        if not os.path.lexists(sub / ".git"):
            continue  # not checked out: git does not go into it
        if depth >= _MAX_SUBMODULE_DEPTH or _at(sub, depth=depth + 1, seen=seen) == _UNSAFE:
            return False
    return True


def _inert(key: str) -> bool:
    section, dot, rest = key.partition(".")
    subsection, _, name = rest.rpartition(".")
    if not dot or not name:
        return False
    if not subsection:
        return key in _INERT_KEYS
    return (section, name) in _INERT_NAMED_KEYS


def _read_small(path: Path, limit: int = _SMALL) -> bytes:
    """Read the start of a regular file; a FIFO or a device raises instead of blocking."""
    # O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"not a regular file: {path}")
        return handle.read(limit)


def config_entries(path: Path) -> tuple[tuple[str, str], ...] | None:
    """Return a config file's (key, value) pairs, () when absent, None when unreadable or odd.

    The file is read every time (~10 µs) and only its parse is cached, by content: a cache
    keyed by mtime could miss a rewrite within the clock's granularity.
    """
    try:
        data = _read_small(path, _MAX_CONFIG + 1)
    except (FileNotFoundError, NotADirectoryError):
        return ()
    except OSError:
        return None
    return None if len(data) > _MAX_CONFIG else _parse_cached(data)


@functools.lru_cache(maxsize=256)
def _parse_cached(data: bytes) -> tuple[tuple[str, str], ...] | None:
    return parse_config(data)


def _has_hooks(hooks: Path) -> bool:
    try:
        names = [entry.name for entry in hooks.iterdir()]
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:
        return True
    return any(not name.endswith(".sample") for name in names)


def _gitlinks(index: Path, hash_len: int) -> tuple[str, ...] | None:
    """Return the index's gitlinks; the parse is cached by (path, mtime, ctime, size, inode).

    ctime cannot be set from user space, and git rewrites the index by rename (a new inode).
    """
    try:
        st = index.stat()
    except (FileNotFoundError, NotADirectoryError):
        return ()
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return _gitlinks_cached(str(index), st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino,
                            hash_len)


@functools.lru_cache(maxsize=64)
def _gitlinks_cached(path: str, mtime_ns: int, ctime_ns: int, size: int, inode: int,
                     hash_len: int) -> tuple[str, ...] | None:
    try:
        data = Path(path).read_bytes()
    except OSError:
        return None
    return index_gitlinks(data, hash_len)
