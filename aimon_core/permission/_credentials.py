"""Where credentials live: files aimon never lets a command or tool read without asking.

One table for every read check: a Bash command aimon would allow by itself (read-only, or by
an allow rule) and the Read, Grep and Glob tools ask before reading any of these, even with
no rule configured; Grep and Glob searches of a folder around them skip them. The locations
are the usual homes of tokens and keys below the home folder (cloud CLIs, ssh, package
registries, git credential stores, Claude Code's login) and every process's environment and
memory under ``/proc``, whichever spelling reaches them (``/proc/self/root/...``,
``/dev/fd/..``, a symlink): a path is compared by its normalised and its resolved form.
"""

from __future__ import annotations

import functools
import os
import pwd
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from aimon_core.permission._spelling import clean, expand_user
from aimon_core.shell import HOME_CREDENTIALS

# Any process's environment and memory, by pid, `self`, `thread-self` or task.
_PROC = re.compile(r"/proc/(?:[^/]+/)+(environ|mem)")
# Other accounts' home folders (`~root/.ssh`), where they usually are.
_OTHER_HOMES = r"/home/[^/]+|/Users/[^/]+|/root|/var/root"
_ABOVE_HOMES = re.compile(rf"/|/home|/Users|/var|{_OTHER_HOMES}")
_PROC_REASONS = {"environ": "a process's environment (it holds its secrets)",
                 "mem": "a process's memory"}


class Credentials:
    """The credential locations as they are now, for the path checks of one decision.

    A snapshot: made once per decision (a few `stat` calls), it answers every path of it.
    """

    def __init__(self) -> None:
        self._table = _table()
        self._real_cwd: dict[str, str] = {}

    def reason(self, path: str, cwd: Path) -> str | None:
        """Say which credential store reading ``path`` (from ``cwd``) would reach, or None."""
        if "\x00" in path:
            return None
        for spelling in self._spellings(path, cwd):
            if match := _PROC.fullmatch(spelling):
                return _PROC_REASONS[match.group(1)]
            if (match := self._table.at.match(spelling)) and match.lastindex:
                return self._table.reasons[match.lastindex - 1]
        return None

    def below(self, directory: str, cwd: Path) -> str | None:
        """Say which credential store lies at or below ``directory`` (read recursively)."""
        if "\x00" in directory:
            return None
        for spelling in self._spellings(directory, cwd):
            if spelling == "/proc" or spelling.startswith("/proc/"):
                return _PROC_REASONS["environ"]
            inside = spelling.rstrip("/") + "/"
            for location, reason in self._table.below:
                if location == spelling or location.startswith(inside):
                    return reason
            if _ABOVE_HOMES.fullmatch(spelling.rstrip("/") or "/"):
                return "home folders, which hold credentials"
        return self.reason(directory, cwd)

    def _spellings(self, path: str, cwd: Path) -> tuple[str, str]:
        """Return ``path`` from ``cwd`` normalised, and resolved (links followed)."""
        expanded = expand_user(path)
        here = str(cwd) if str(cwd).startswith("/") else str(Path(cwd).absolute())
        # Strings, not Path objects: this runs for every word of every command (~10 µs less).
        lexical = clean(os.path.normpath(f"{here}/{expanded}"))
        if expanded.startswith("/"):
            return lexical, clean(os.path.realpath(expanded))
        if here not in self._real_cwd:
            self._real_cwd[here] = os.path.realpath(here)
        return lexical, clean(_resolved_below(self._real_cwd[here], expanded))


def _resolved_below(real: str, relative: str) -> str:
    """Return ``os.path.realpath(real/relative)`` for a resolved ``real``, looking only at the
    parts of ``relative``: about 3 µs for a one-part operand instead of about 15 µs."""
    parts = [p for p in relative.split("/") if p not in {"", "."}]
    path = real.rstrip("/")
    for part in parts:
        path = f"{path}/{part}"
        try:
            linked = part == ".." or stat.S_ISLNK(os.lstat(path).st_mode)
        except OSError:
            linked = False  # missing: realpath keeps the rest as written, and so do we
        if linked:
            return os.path.realpath(f"{real}/{relative}")
    return path or "/"


def credential_reason(path: str, cwd: Path) -> str | None:
    """Say which credential store reading ``path`` (from ``cwd``) would reach, or None."""
    return Credentials().reason(path, cwd)


def credentials_below(directory: str, cwd: Path) -> str | None:
    """Say which credential store lies at or below ``directory`` (a recursive read), or None."""
    return Credentials().below(directory, cwd)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Table:
    """Every location in this account's home folders, as written and resolved; and a regex
    matching a path at or below any location, in any account's home folder (group ``i + 1``
    gives ``reasons[i]``)."""

    below: tuple[tuple[str, str], ...]
    at: re.Pattern[str]
    reasons: tuple[str, ...]


def _table() -> _Table:
    homes = _homes()
    return _resolved(homes, tuple(_fingerprint(d) for d in _watched(homes)))


def _homes() -> tuple[str, ...]:
    """The home folders: ``$HOME``, and the account's own when ``$HOME`` points elsewhere."""
    homes = [clean(os.path.normpath(expand_user("~"))), *_account_home(os.getuid())]
    return tuple(dict.fromkeys(h for h in homes if h.startswith("/")))


@functools.lru_cache(maxsize=4)
def _account_home(uid: int) -> tuple[str, ...]:
    try:
        return (clean(os.path.normpath(pwd.getpwuid(uid).pw_dir)),)
    except KeyError:
        return ()


def _watched(homes: tuple[str, ...]) -> list[str]:
    # A link that moves a location is made in one of these folders (changing its mtime).
    return [f"{home.rstrip('/')}/{sub}" for home in homes for sub in ("", ".config")]


def _fingerprint(folder: str) -> tuple[int, int]:
    try:
        info = os.stat(folder)  # noqa: PTH116 (one system call; no Path object per check)
    except (OSError, ValueError):
        return (0, 0)
    return (info.st_ino, info.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _resolved(homes: tuple[str, ...], _fingerprints: tuple[tuple[int, int], ...]) -> _Table:
    """Build the table; a link moving a location (`~/.ssh -> dotfiles/ssh`) adds its target."""
    below: dict[str, str] = {}
    moved: dict[str, str] = {}
    for home in homes:
        for rel, reason in HOME_CREDENTIALS.items():
            location = f"{home.rstrip('/')}/{rel}"
            below.setdefault(location, reason)
            real = clean(os.path.realpath(location))
            if real != location:
                moved.setdefault(real, reason)
    below.update((location, reason) for location, reason in moved.items())
    # One prefix for every home folder, then the locations: a path outside every home fails
    # at its first characters instead of against each location in turn.
    prefixes = "|".join([*map(re.escape, homes), _OTHER_HOMES])
    names = "|".join(f"({re.escape(rel)})" for rel in HOME_CREDENTIALS)
    extra = "".join(f"|({re.escape(location)})" for location in moved)
    return _Table(below=tuple(below.items()),
                  at=re.compile(f"(?:(?:{prefixes})/(?:{names}){extra})(?:/|$)"),
                  reasons=(*HOME_CREDENTIALS.values(), *moved.values()))
