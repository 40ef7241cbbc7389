"""The paths a Bash command names, checked against path rules, credentials, protected files.

Every operand, option value (``--output=x``, ``of=x``, ``-f.env`` and each tail of a short
cluster), git ``REV:path``, glob expansion and redirection target counts. A command asks when
it names a path a ``Read(...)`` deny or ask rule covers or a credential file (``_credentials``,
with no rule needed), reads a directory recursively that holds one (``grep -r`` in every
spelling, ``rg``, ``tar``, ``cp -r``; through links for ``grep -R``), is git printing a part of
its repository that may hold one (``_gitread``), reads file names from its input
(``_expansions``), writes (is not read-only) a path an ``Edit(...)`` rule covers, or writes a
protected file (``.git/``, ``.aimon/``, shell rc files, see ``_guard``).
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from aimon_core.permission._expansions import names_from_input
from aimon_core.permission._gitread import printed_paths
from aimon_core.permission._guard import PathGuard, links_to_credentials, protected_reason
from aimon_core.permission._optspec import Refused, parse_args
from aimon_core.permission._programs import PROGRAMS
from aimon_core.permission._spelling import clean, expand_user
from aimon_core.permission._syntax import SimpleCommand, is_write_redirect
from aimon_core.permission._unwrap import Forms

_GLOB = re.compile(r"[*?[]")
_GLOB_LIMIT = 200
_ALWAYS_RECURSIVE = frozenset({
    "rg", "ag", "ack", "tar", "zip", "7z", "rsync", "scp", "git", "bsdtar", "cpio", "pax",
    "rgrep",
})
_SEARCH_CWD = frozenset({"rg", "ag", "ack", "rgrep"})
_GREPS = frozenset({"grep", "egrep", "fgrep", "zgrep", "rgrep"})
_NAMES_ONLY = frozenset({"ls", "find", "tree", "du", "stat", "mkdir", "cd", "pwd"})
# Options that make a program read the folders it is given, by program (from their specs),
# and for programs aimon has no spec for, every long option any prefix may stand for.
_RECURSIVE_OPTIONS = {
    "grep": frozenset({"-r", "-R", "--recursive", "--dereference-recursive"}),
    "diff": frozenset({"-r", "--recursive"}),
}
_RECURSIVE_LONGS = ("--recursive", "--dereference-recursive", "--archive", "--recurse")
_DIRECTORY_ACTIONS = frozenset({"read", "skip"})
# Programs that do not follow links below the folders they are given, unless told to.
_NO_FOLLOW = frozenset({
    "grep", "egrep", "fgrep", "zgrep", "rgrep", "rg", "ag", "ack", "git", "cp", "tar",
    "rsync", "bsdtar", "cpio", "pax",
})
_FOLLOW_LONGS = ("--follow", "--dereference", "--dereference-recursive", "--copy-links")

ReadOnly = Callable[[tuple[str, ...]], bool]


def path_problem(
    commands: Sequence[SimpleCommand],
    forms: Sequence[Forms],
    guard: PathGuard,
    *,
    cwd: Path,
    read_only: ReadOnly,
) -> str | None:
    """Say why the command's paths need approval, or None.

    After a ``cd`` anywhere in the command, relative paths are checked against every folder
    the command may be in (order and control flow are not followed).
    """
    places = _places(commands, cwd)
    for simple, form in zip(commands, forms, strict=True):
        for here in places:
            problem = _redirect_problem(simple, guard, here)
            for argv in form.argvs if problem is None else ():
                problem = _argv_problem(argv, guard, here, writes=not read_only(argv))
                if problem is not None:
                    break
            if problem is not None:
                return problem
    return None


def _places(commands: Sequence[SimpleCommand], cwd: Path) -> list[Path]:
    """Return ``cwd`` and every folder a ``cd``/``pushd`` in the command may enter."""
    places = [Path(cwd)]
    for simple in commands:
        argv = simple.argv
        if not argv or argv[0] not in {"cd", "pushd"}:
            continue
        operands = [a for a in argv[1:] if not a.startswith("-") or a == "-"]
        target = operands[0] if operands and operands[0] != "-" else "~"
        for base in list(places):
            place = Path(clean(os.path.normpath(base / expand_user(target))))
            if place not in places and len(places) < 8:
                places.append(place)
    return places


def _redirect_problem(simple: SimpleCommand, guard: PathGuard, cwd: Path) -> str | None:
    for redirect in simple.redirects:
        if redirect.dynamic or redirect.op in {"<<", "<<-", "<<<"}:
            continue
        if is_write_redirect(redirect):
            problem = _write_problem(redirect.target, guard, cwd)
        elif redirect.op in {"<", "<>"}:
            # Bash expands a pattern in a redirection too (`< ./.e*` reads `.env`).
            problem = next(filter(None, (_read_problem(path, guard, cwd)
                                         for path in _expand(redirect.target, cwd))), None)
        else:
            problem = None
        if problem is not None:
            return problem
    return None


def _argv_problem(argv: tuple[str, ...], guard: PathGuard, cwd: Path, *,
                  writes: bool) -> str | None:
    if not argv:
        return None
    program = argv[0].rsplit("/", 1)[-1]
    unseen = names_from_input(argv)
    if unseen is not None:
        return unseen
    recursive = _recursive(program, argv)
    follow = recursive and _follows(program, argv)
    operands = list(_operands(program, argv))
    for word in operands:
        for path in _expand(word, cwd):
            problem = _read_problem(path, guard, cwd)
            if problem is None and writes:
                problem = _write_problem(path, guard, cwd)
            if problem is None and recursive:
                problem = _inside_problem(path, guard, cwd, writes=writes, follow=follow)
            if problem is not None:
                return problem
    searches_cwd = program in _SEARCH_CWD or (program in _GREPS and recursive)
    # `rg KEY` and `grep -r KEY` search the working directory when no operand is a path.
    if searches_cwd and not any(_exists(word, cwd) for word in operands):
        return _inside_problem(".", guard, cwd, writes=False, follow=follow)
    return _printed_problem(argv, guard, cwd) if program == "git" else None


def _printed_problem(argv: tuple[str, ...], guard: PathGuard, cwd: Path) -> str | None:
    """Say why git may print a file a rule covers, or a credential, without naming it."""
    for place in printed_paths(argv, cwd):
        shown = f"`{_show(argv)}` may print files in `{place}` without naming them"
        rule = guard.reaches(place) if guard else None
        if rule is not None:
            return (f"{shown}, and rule {rule.text} covers a path there (a pathspec after "
                    "`--` can keep the command away from it)")
        reason = guard.credentials.below(place, cwd)
        if reason is not None:
            return f"{shown}, and that holds {reason}"
    return None


def _show(argv: tuple[str, ...]) -> str:
    text = " ".join(argv)
    return text if len(text) <= 60 else text[:57] + "..."


def _exists(word: str, cwd: Path) -> bool:
    try:
        return (Path(cwd) / expand_user(word)).exists()
    except (OSError, ValueError):
        return False


def _read_problem(path: str, guard: PathGuard, cwd: Path) -> str | None:
    rule = guard.covering(path, cwd=cwd)
    if rule is not None:
        return f"the command names `{path}`, which rule {rule.text} forbids reading"
    reason = guard.credentials.reason(path, cwd)
    if reason is not None:
        return f"the command names `{path}`, part of {reason}; reading credentials always asks"
    return None


def _write_problem(path: str, guard: PathGuard, cwd: Path) -> str | None:
    joined = Path(cwd).absolute() / expand_user(path)
    for spelling in (clean(os.path.normpath(joined)), clean(os.path.realpath(joined))):
        reason = protected_reason(spelling)
        if reason is not None:
            return f"the command may write `{path}`, part of {reason}; this always asks"
    rule = guard.covering(path, cwd=cwd, writes=True)
    if rule is None:
        return None
    return f"the command may write `{path}`, which rule {rule.text} forbids"


def _inside_problem(path: str, guard: PathGuard, cwd: Path, *, writes: bool,
                    follow: bool) -> str | None:
    if not (Path(cwd) / expand_user(path)).is_dir():
        return None
    reason = guard.credentials.below(path, cwd) or (
        links_to_credentials(path, cwd) if follow else None)
    if reason is not None:
        return (f"the command may read everything in `{path}`, which holds {reason}; reading "
                "credentials always asks")
    if not guard:
        return None
    for check_writes in (False, True) if writes else (False,):
        rule = guard.contains(path, cwd=cwd, writes=check_writes)
        if rule is not None:
            return (f"the command may read or change everything in `{path}`, which holds "
                    f"a path rule {rule.text} covers")
    return None


def _recursive(program: str, argv: tuple[str, ...]) -> bool:
    """Tell whether ``argv`` reads the folders it names, in any spelling of the option."""
    if program in _NAMES_ONLY:
        return False
    if program in _ALWAYS_RECURSIVE:
        return True
    entry = PROGRAMS.get(program)
    parsed = parse_args(entry.spec, argv[1:]) if entry is not None and not entry.words else None
    if parsed is not None and not isinstance(parsed, Refused):
        names = _RECURSIVE_OPTIONS.get(program, frozenset())
        return any(name in names or (program == "grep" and name in {"-d", "--directories"}
                                     and value not in _DIRECTORY_ACTIONS)
                   for name, value in parsed.options)
    return _looks_recursive(program in _GREPS, argv)


def _looks_recursive(grep: bool, argv: tuple[str, ...]) -> bool:
    """Guess recursion without a spec: every prefix and cluster that may mean it counts."""
    for index, arg in enumerate(argv[1:], 1):
        if arg == "--":
            break
        name, eq, value = arg.partition("=")
        following = argv[index + 1] if index + 1 < len(argv) else ""
        if arg.startswith("--") and len(name) > 2:
            if any(option.startswith(name) for option in _RECURSIVE_LONGS):
                return True
            if grep and "--directories".startswith(name) and (
                (value if eq else following) not in _DIRECTORY_ACTIONS
            ):
                return True
        elif arg.startswith("-") and len(arg) > 1:
            letters = arg[1:]
            if set(letters) & {"r", "R", "a"}:
                return True
            if grep and "d" in letters and (
                letters.partition("d")[2] or following) not in _DIRECTORY_ACTIONS:
                return True
    return False


def _follows(program: str, argv: tuple[str, ...]) -> bool:
    """Tell whether a recursive read follows links below the folders it is given."""
    if program not in _NO_FOLLOW:
        return True
    for arg in argv[1:]:
        if arg == "--":
            break
        name = arg.partition("=")[0]
        if arg.startswith("--") and len(name) > 3 and any(
            option.startswith(name) for option in _FOLLOW_LONGS
        ):
            return True
        if arg.startswith("-") and not arg.startswith("--") and (
            "L" in arg or (program in _GREPS and "R" in arg) or (program == "tar" and "h" in arg)
        ):
            return True
    return False


def _operands(program: str, argv: tuple[str, ...]) -> Iterator[str]:
    """Yield every word of ``argv`` that may name a path."""
    for arg in argv[1:]:
        name, eq, value = arg.partition("=")
        if arg.startswith("-"):
            if eq and value:
                yield value
            if not arg.startswith("--"):
                # An attached value may start after any letter of a cluster (`-nf.env`).
                yield from (arg[i:] for i in range(2, len(arg)))
            continue
        yield arg
        if eq and value and name.isidentifier():
            yield value
        if program == "git" and ":" in arg:
            yield arg.split(":", 1)[1]


def _expand(word: str, cwd: Path) -> list[str]:
    if not word or "\x00" in word:
        return []
    if not _GLOB.search(word):
        return [word]
    pattern = expand_user(word)
    base = None if Path(pattern).is_absolute() else str(cwd)
    found: list[str] = []
    # glob.iglob skips dot files for `*` like bash does; Path.glob would not.
    for match in glob.iglob(pattern, root_dir=base, recursive="**" in pattern):  # noqa: PTH207
        found.append(match)
        if len(found) >= _GLOB_LIMIT:
            break
    return found or [word]
