"""What a sandboxed command may touch, resolved to paths, and the bubblewrap mounts that say it.

The file system is read-only but for the project, the folders the user added, the paths
`sandbox.filesystem.allowWrite` names and a per-session temporary folder. Inside the project
(and each added folder) the files that make code run later stay read-only: `.git/config`,
`.git/hooks`, `.aimon/`, `.claude/` and `.mcp.json`. One that does not exist yet is held by an
empty read-only placeholder while a command runs (bubblewrap creates its mount point in the
folder, and `Placeholders` removes it afterwards), so no command can create it. The `.git`
folder itself is a mount point, so it cannot be renamed away and replaced. Credential files in
the home folder (`CREDENTIAL_PATHS`) and `sandbox.filesystem.denyRead` read as empty.

Mounts are applied shallowest first: a mount at a deeper path stays visible over one at its
parent (a project inside a masked folder stays writable; a masked file inside the project is
still masked).
"""

from __future__ import annotations

import enum
import os
import stat
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

from aimon_core.shell._credentials import HOME_CREDENTIALS

# Home-relative paths unreadable in the sandbox when they exist: every credential location
# (the one table the permission layer reads too), and all of ~/.claude, Claude Code's user
# settings, whose `env` aimon reads.
CREDENTIAL_PATHS: tuple[str, ...] = (*HOME_CREDENTIALS, ".claude")
# Inside the project and each added folder: files that run code or widen aimon later.
PROTECTED_FILES: tuple[str, ...] = (".mcp.json",)
PROTECTED_DIRS: tuple[str, ...] = (".aimon", ".claude")
_GIT_FILES, _GIT_DIRS = ("config",), ("hooks",)


class _Mount(enum.IntEnum):
    """Kinds of mount, in the order they apply at one path."""

    WRITABLE = 0  # --bind
    MASK_DIR = 1  # --tmpfs, read-only at the end
    MASK_FILE = 2  # --ro-bind-data (an empty file)
    READ_ONLY = 3  # --ro-bind onto itself
    HOLD_DIR = 4  # placeholder directory: --tmpfs, read-only at the end
    HOLD_FILE = 5  # placeholder file: --ro-bind-data (an empty file)


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxPaths:
    """The folders a sandbox is built from (absolute paths; settings already resolved)."""

    project: Path
    extra_dirs: tuple[Path, ...] = ()
    allow_write: tuple[Path, ...] = ()
    deny_write: tuple[Path, ...] = ()
    deny_read: tuple[Path, ...] = ()
    allow_read: tuple[Path, ...] = ()
    home: Path | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Boundary:
    """The resolved boundary of one command: real paths, each list sorted.

    `held` are protected paths that do not exist: placeholders keep them from being created.
    `skipped` names settings entries that could not apply, and why.
    """

    writable: tuple[Path, ...]
    read_only: tuple[Path, ...]
    held_dirs: tuple[Path, ...]
    held_files: tuple[Path, ...]
    unreadable: tuple[Path, ...]
    readable: tuple[Path, ...]
    temp: Path
    skipped: tuple[str, ...] = ()


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _within(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def resolve_boundary(paths: SandboxPaths, temp: Path, ours: Collection[Path] = ()) -> Boundary:
    """Resolve `paths` against the file system as it is now (call it for each command).

    `ours` are placeholders a running command holds: they count as missing, not as files.
    """
    skipped: list[str] = []
    writable: list[Path] = []
    for path in (paths.project, *paths.extra_dirs, *paths.allow_write):
        real = _real(path)
        if real.is_dir() or real.is_file():
            writable.append(real)
        elif path not in (paths.project, *paths.extra_dirs):
            skipped.append(f"allowWrite {path}: does not exist")
    roots = [_real(p) for p in (paths.project, *paths.extra_dirs)]
    read_only: list[Path] = []
    held_dirs: list[Path] = []
    held_files: list[Path] = []
    for root in dict.fromkeys(roots):
        _protect(root, _Found(read_only, held_dirs, held_files, skipped, frozenset(ours)),
                 writable)
    for path in paths.deny_write:
        real = _real(path)
        if real.exists() and _within(real, writable):
            read_only.append(real)
    unreadable = _unreadable(paths)
    readable = [real for path in paths.allow_read
                if (real := _real(path)).exists() and _within(real, unreadable)]
    return Boundary(
        writable=_sorted(writable), read_only=_sorted(read_only), held_dirs=_sorted(held_dirs),
        held_files=_sorted(held_files), unreadable=_sorted(unreadable),
        readable=_sorted(readable), temp=temp, skipped=tuple(skipped))


@dataclass(frozen=True, slots=True)
class _Found:
    """Where `_protect` sorts what it finds; `ours` are placeholders (they count as missing)."""

    read_only: list[Path]
    held_dirs: list[Path]
    held_files: list[Path]
    skipped: list[str]
    ours: frozenset[Path]

    def keep(self, path: Path, is_dir: bool) -> None:
        """Keep `path` read-only if it exists (a link: its target), else hold its place."""
        mode = _lstat_mode(path)
        if mode is not None and stat.S_ISLNK(mode):
            # A mount follows the link: its target is kept, but the link itself sits in a
            # writable folder and could be replaced. Say so.
            self.skipped.append(f"{path} is a symbolic link: its target stays read-only, the "
                                "link can still be replaced")
            if (target := _real(path)).exists():
                self.read_only.append(target)
        elif mode is not None and path not in self.ours:
            self.read_only.append(path)
        else:
            (self.held_dirs if is_dir else self.held_files).append(path)


def _lstat_mode(path: Path) -> int | None:
    """Return the mode of `path` itself (not a link's target), or None if there is none."""
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None


def _protect(root: Path, found: _Found, writable: list[Path]) -> None:
    """Add the protected paths of one project-like folder."""
    for name in PROTECTED_DIRS:
        found.keep(root / name, True)
    for name in PROTECTED_FILES:
        found.keep(root / name, False)
    git = root / ".git"
    mode = _lstat_mode(git)
    if mode is not None and stat.S_ISDIR(mode):
        writable.append(git)  # bound onto itself: a mount point cannot be renamed away
        for name in _GIT_DIRS:
            found.keep(git / name, True)
        for name in _GIT_FILES:
            found.keep(git / name, False)
        return
    for gitdir in _linked_git_dirs(git) if mode is not None else ():
        for name in (*_GIT_DIRS, *_GIT_FILES):
            if (target := _real(gitdir / name)).exists() and _within(target, writable):
                found.read_only.append(target)


def _linked_git_dirs(git: Path) -> list[Path]:
    """Return the git directory a `.git` file names, and its common directory if any."""
    try:
        text = git.read_text(errors="replace") if git.is_file() else ""
    except OSError:
        return []
    line = text.strip().splitlines()[0] if text.strip() else ""
    if not line.startswith("gitdir:"):
        return []
    gitdir = (git.parent / line.removeprefix("gitdir:").strip()).resolve()
    found = [gitdir]
    try:
        common = (gitdir / "commondir").read_text(errors="replace").strip()
    except OSError:
        return found
    if common:
        found.append((gitdir / common).resolve())
    return found


def _unreadable(paths: SandboxPaths) -> list[Path]:
    """Return the existing credential paths and denyRead entries, resolved."""
    home = str(paths.home) if paths.home else ""
    named = [f"{home}/{name}" for name in CREDENTIAL_PATHS] if home else []
    found: list[Path] = []
    for text in (*named, *map(str, paths.deny_read)):
        # One stat each (most do not exist); a path that does is resolved through its links.
        if os.path.exists(text):  # noqa: PTH110 - called ~40 times per command
            found.append(_real(Path(text)))
    return found


def _sorted(paths: Iterable[Path]) -> tuple[Path, ...]:
    return tuple(sorted(dict.fromkeys(paths)))


def mount_args(boundary: Boundary, empty: Callable[[], int]) -> list[str]:
    """Return bubblewrap's file system arguments for `boundary` (after `--ro-bind / /`).

    `empty()` returns a new descriptor that reads as empty (bubblewrap reads and closes each):
    masked and held files are empty read-only files made from one (no file on the machine is
    their source, so none can be written to change them).
    """
    ops: list[tuple[Path, _Mount]] = [(p, _Mount.WRITABLE) for p in boundary.writable]
    ops.append((boundary.temp, _Mount.WRITABLE))
    ops += [(p, _Mount.MASK_DIR if p.is_dir() else _Mount.MASK_FILE)
            for p in boundary.unreadable]
    ops += [(p, _Mount.READ_ONLY) for p in (*boundary.read_only, *boundary.readable)]
    ops += [(p, _Mount.HOLD_DIR) for p in boundary.held_dirs]
    ops += [(p, _Mount.HOLD_FILE) for p in boundary.held_files]
    ops.sort(key=lambda op: (len(op[0].parts), op[1], op[0]))
    args: list[str] = []
    sealed: list[str] = []
    for path, kind in ops:
        text = str(path)
        match kind:
            case _Mount.WRITABLE:
                args += ["--bind", text, text]
            case _Mount.READ_ONLY:
                args += ["--ro-bind", text, text]
            case _Mount.MASK_DIR | _Mount.HOLD_DIR:
                args += ["--tmpfs", text]
                sealed.append(text)
            case _Mount.MASK_FILE | _Mount.HOLD_FILE:
                args += ["--ro-bind-data", str(empty()), text]
    # Read-only only now: mount points for deeper paths were made inside them first.
    for text in sealed:
        args += ["--remount-ro", text]
    return args


class Placeholders:
    """Remove the placeholders bubblewrap left once no sandbox of this shell uses them.

    bubblewrap creates an empty file or folder on the host as the mount point of each held
    path. Removing one while another command's sandbox still uses it would undo that
    sandbox's mount, so they are counted; one no command uses is idle, and `sweep` removes
    the idle ones (if still the empty file or folder bubblewrap made). The sandbox sweeps a
    moment after a command ends, so a burst of commands makes and removes each once. Used
    from the event loop only.
    """

    def __init__(self) -> None:
        self._users: Counter[Path] = Counter()
        self._idle: set[Path] = set()

    def ours(self) -> frozenset[Path]:
        """Return the placeholders there are (pass them to `resolve_boundary`)."""
        return frozenset((*self._users, *self._idle))

    def hold(self, boundary: Boundary) -> tuple[Path, ...]:
        """Count a command's placeholders in; return them (pass them to `release`).

        Call it right after `resolve_boundary`, with no `await` between: a placeholder removed
        in between is made again by bubblewrap, but one removed after its mount would undo it.
        """
        held = (*boundary.held_dirs, *boundary.held_files)
        self._users.update(held)
        self._idle.difference_update(held)
        return held

    def release(self, held: Iterable[Path]) -> bool:
        """Count a command's placeholders out; return whether some became idle."""
        idle = False
        for path in held:
            self._users[path] -= 1
            if self._users[path] <= 0:
                del self._users[path]
                self._idle.add(path)
                idle = True
        return idle

    def sweep(self) -> None:
        """Remove the idle placeholders."""
        for path in sorted(self._idle, reverse=True):
            _remove_empty(path)
        self._idle.clear()


def _remove_empty(path: Path) -> None:
    try:
        if path.is_symlink():
            return
        if path.is_dir():
            path.rmdir()  # only if still empty
        elif path.is_file() and path.stat().st_size == 0:
            path.unlink()
    except OSError:
        pass  # not empty (someone wrote there outside the sandbox), or gone already
