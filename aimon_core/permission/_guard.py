"""Path deny rules for every tool, and the files whose change could run code or widen rules.

``PathGuard`` answers, for any path a tool or a Bash command may touch, which ``Read(...)``
or ``Edit(...)`` deny (or ask) rule covers it. A path is compared by its resolved and its
merely normalised spelling (and their parent directories, as ``evaluate_path`` does) and, for
a file with several hard links, by ``(st_dev, st_ino)`` against the files the rules name.
A directory "contains" a denied path when a bounded walk below it finds one; a walk that
hits its bound counts as containing one (fail closed).

``protected_reason`` names files that change what aimon or git runs (``.git/``, a bare git
directory, ``.aimon/``, ``.claude/``, ``.mcp.json``, shell rc files, ...): writes there always
ask, whatever the allow rules and the mode say, except in bypassPermissions mode.
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from aimon_core.permission._credentials import Credentials, credential_reason
from aimon_core.permission._paths import GLOB_CHARS, anchor, compiled
from aimon_core.permission._rules import EDIT_TOOLS, PermissionRules, Rule, governs
from aimon_core.permission._spelling import clean, expand_user, with_parents

WALK_LIMIT = 4000
_SKIP_DIRS = frozenset({"node_modules", ".venv", "__pycache__", ".mypy_cache", ".ruff_cache"})
_PROTECTED_DIRS = {
    ".git": "git's internals (hooks and config run programs)",
    ".aimon": "aimon's project settings",
    ".claude": "Claude Code's project settings",
}
_PROTECTED_FILES = {
    ".mcp.json": "the MCP server list (it starts programs)",
    ".gitmodules": "git's submodule list",
    ".gitconfig": "git's configuration",
    ".envrc": "direnv's script",
    ".npmrc": "npm's configuration (it can name the shell that runs scripts)",
    ".bashrc": "a shell start-up file", ".bash_profile": "a shell start-up file",
    ".bash_login": "a shell start-up file", ".bash_logout": "a shell start-up file",
    ".profile": "a shell start-up file", ".zshrc": "a shell start-up file",
    ".zprofile": "a shell start-up file", ".zshenv": "a shell start-up file",
    ".zlogin": "a shell start-up file", ".zlogout": "a shell start-up file",
    ".kshrc": "a shell start-up file", ".cshrc": "a shell start-up file",
    ".tcshrc": "a shell start-up file", ".inputrc": "a shell start-up file",
}
_GIT_DIR_MARKERS = ("HEAD", "config", "objects", "refs")


def protected_reason(path: str) -> str | None:
    """Say why writing ``path`` (absolute) must always ask, or None."""
    parts = Path(path).parts
    for part in parts:
        if part in _PROTECTED_DIRS:
            return _PROTECTED_DIRS[part]
    if parts and parts[-1] in _PROTECTED_FILES:
        return _PROTECTED_FILES[parts[-1]]
    if len(parts) >= 2 and parts[-2] == ".ssh":
        return "ssh's configuration"
    for depth in range(1, min(len(parts), 4)):
        folder = Path(*parts[:-depth])
        name = parts[-depth]
        if name in {*_GIT_DIR_MARKERS, "hooks", "info", "packed-refs", "index"} and (
            _looks_like_git_dir(folder, name)
        ):
            return f"a git directory ({folder})"
    return None


def _looks_like_git_dir(folder: Path, written: str) -> bool:
    # git takes a folder with HEAD and objects/ or refs/ for a git directory (a bare repo);
    # config is optional there, but with objects/ and refs/ it is enough to worry.
    present = {written} | {m for m in _GIT_DIR_MARKERS if os.path.lexists(folder / m)}
    has_store = bool(present & {"objects", "refs"})
    return ("HEAD" in present and has_store) or {"config", "objects", "refs"} <= present


class PathGuard:
    """Answer which path deny (or ask) rule covers a path; callable as a read filter."""

    def __init__(self, rules: PermissionRules, project_root: Path, *, ask: bool = False) -> None:
        self._project_root = project_root
        groups = (*rules.deny, *rules.ask) if ask else rules.deny
        self._read = _compile(r for r in groups if governs(r.tool, "Read"))
        self._write = _compile(r for r in groups if r.tool in EDIT_TOOLS)
        self._inodes: dict[bool, dict[tuple[int, int], Rule]] = {}

    def __bool__(self) -> bool:
        return bool(self._read or self._write)

    @functools.cached_property
    def root(self) -> str:
        """The project root with its links resolved, taken when a rule first needs it.

        A guard is built for every command decided; most have no path rule to anchor, and a
        `realpath` is a system call per folder of the root (each one a chance for the
        session's writer thread to take the interpreter lock: ~0.1 ms a Bash iteration).
        """
        return clean(os.path.realpath(self._project_root))

    @functools.cached_property
    def credentials(self) -> Credentials:
        """The credential locations as they are now (a guard is made for one decision)."""
        return Credentials()

    def __call__(self, path: Path) -> bool:
        """Tell whether ``path`` may be read (the ``PathFilter`` tools are given).

        Neither a path a rule covers nor a credential file (``_credentials``) may; the guard
        of a read filter lives long, so the credential locations are looked at each time.
        """
        return self.covering(str(path)) is None and (
            credential_reason(str(path), Path(self.root)) is None)

    def covering(self, path: str, *, cwd: Path | None = None, writes: bool = False) -> Rule | None:
        """Return the rule that forbids reading (or writing) ``path``, if any."""
        rules = self._write if writes else self._read
        if not rules or "\x00" in path:
            return None
        joined = str(Path(cwd or self.root).absolute() / expand_user(path))
        lexical = clean(os.path.normpath(joined))
        real = clean(os.path.realpath(joined))
        targets = {*with_parents(lexical), *with_parents(real)}
        for rule, patterns in rules:
            if any(p.fullmatch(t) for p in patterns(self.root) for t in targets):
                return rule
        return self._by_inode(real, writes)

    def _by_inode(self, real: str, writes: bool) -> Rule | None:
        try:
            info = Path(real).stat()
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(info.st_mode) or info.st_nlink < 2:
            return None
        if writes not in self._inodes:
            self._inodes[writes] = self._named_inodes(writes)
        return self._inodes[writes].get((info.st_dev, info.st_ino))

    def _named_inodes(self, writes: bool) -> dict[tuple[int, int], Rule]:
        """Map the files the rules name (a bounded walk of each literal prefix) to their rule."""
        found: dict[tuple[int, int], Rule] = {}
        for rule, patterns in self._write if writes else self._read:
            for base in _literal_bases(rule, self.root):
                for path, info in _walk(base):
                    if stat.S_ISREG(info.st_mode) and any(
                        p.fullmatch(t) for p in patterns(self.root)
                        for t in with_parents(path)
                    ):
                        found.setdefault((info.st_dev, info.st_ino), rule)
        return found

    def contains(self, directory: str, *, cwd: Path | None = None,
                 writes: bool = False) -> Rule | None:
        """Return a rule covering something below ``directory`` (a bounded walk), if any."""
        rules = self._write if writes else self._read
        if not rules:
            return None
        start = clean(os.path.realpath(Path(cwd or self.root).absolute() / expand_user(directory)))
        seen = 0
        for path, _info in _walk(start):
            seen += 1
            rule = self.covering(path, writes=writes)
            if rule is not None:
                return rule
        if seen >= WALK_LIMIT:
            return rules[0][0]
        return None

    def reaches(self, directory: str) -> Rule | None:
        """Return a read rule that may cover a path at or below ``directory`` (absolute).

        Judged from the rules' patterns alone, not from the files there now: the path may
        exist only in a repository's history.
        """
        inside = directory.rstrip("/") + "/"
        for rule, _patterns in self._read:
            for base in _literal_bases(rule, self.root, anywhere="/"):
                if base in {"/", directory} or base.startswith(inside) or (
                    inside.startswith(base.rstrip("/") + "/")
                ):
                    return rule
        return None


def links_to_credentials(directory: str, cwd: Path) -> str | None:
    """Say which credential store a link below ``directory`` leads to (a bounded walk).

    For reads that follow links (``grep -R``): a walk that hits its bound counts as one.
    """
    try:
        start = clean(os.path.realpath(Path(cwd).absolute() / expand_user(directory)))
    except (OSError, ValueError):
        return None
    seen = 0
    for path, info in _walk(start):
        seen += 1
        if stat.S_ISLNK(info.st_mode) and (reason := credential_reason(path, Path(start))):
            return reason
    return "more files than aimon looks through for links" if seen >= WALK_LIMIT else None


_Compiled = tuple[tuple[Rule, "_Patterns"], ...]


class _Patterns:
    """A path rule's regexes, compiled once per project root."""

    def __init__(self, specifier: str) -> None:
        self.specifier = specifier
        self._cache: dict[str, tuple[re.Pattern[str], ...]] = {}

    def __call__(self, root: str) -> tuple[re.Pattern[str], ...]:
        if root not in self._cache:
            self._cache[root] = compiled(self.specifier, root, True)
        return self._cache[root]


def _compile(rules: Iterator[Rule] | tuple[Rule, ...]) -> _Compiled:
    return tuple((r, _Patterns(r.specifier)) for r in rules if r.specifier is not None)


def _literal_bases(rule: Rule, root: str, *, anywhere: str | None = None) -> list[str]:
    """Return the literal folders a rule's patterns start at (``anywhere`` for ``/``).

    By default a pattern that may match anywhere (`**/.env`) is looked for in the project.
    """
    bases: list[str] = []
    for anchored in anchor(rule.specifier or "", root, broad=True):
        full = anchored.prefix + anchored.glob
        literal: list[str] = []
        for part in full.split("/"):
            if GLOB_CHARS & set(part):
                break
            literal.append(part)
        base = "/".join(literal) or "/"
        bases.append((anywhere or root) if base == "/" else base)
        real = clean(os.path.realpath(base))
        if real != base:
            bases.append(real)
    return list(dict.fromkeys(bases))


def _walk(start: str) -> Iterator[tuple[str, os.stat_result]]:
    """Yield up to WALK_LIMIT paths at and below ``start`` with their lstat (links not followed)."""
    pending = [start]
    budget = WALK_LIMIT
    while pending and budget > 0:
        path = pending.pop()
        try:
            info = os.lstat(path)
        except (OSError, ValueError):
            continue
        budget -= 1
        yield path, info
        if stat.S_ISDIR(info.st_mode):
            try:
                children = sorted(Path(path).iterdir(), reverse=True)
            except OSError:
                continue
            pending.extend(str(c) for c in children if c.name not in _SKIP_DIRS)


def read_filter(rules: Callable[[], PermissionRules], project_root: Path) -> Callable[[Path], bool]:
    """Return the ``ToolContext.path_filter`` for search tools: True when a path may be read.

    ``rules`` is asked for the current rules on every call (settings may be reloaded); the
    compiled guard is rebuilt only when they change.
    """
    current: list[tuple[PermissionRules, PathGuard]] = []

    def allowed(path: Path) -> bool:
        now = rules()
        if not current or current[0][0] is not now:
            current[:] = [(now, PathGuard(now, project_root))]
        return current[0][1](path)

    return allowed
