"""Which part of a repository a git command may print, for path rules to be checked against.

git prints what a repository holds — committed, staged, stashed and working-tree files, by
path or by object name — without a file name on the command line: `git grep KEY`, `git log
-p`, `git show HEAD:.env`, `git cat-file -p <hash>`. A git command either prints names only
(``status`` without ``-v``, ``log`` and ``show`` without patch options, ``ls-files``,
``commit``, ``push`` and the other sub-commands of ``_NAMES_ONLY`` without a patch-like
option), or may print the contents of anything in its repository. For ``grep``, ``log``,
``diff`` and ``show`` a pathspec after ``--`` narrows that to the paths it names, as a
``REV:path`` operand does; an object named by hash or by a name that may be a tag or a blob
(``git show v1``, ``git diff <blob> <blob>``) is printed whatever the pathspec says, so it
widens the part back to the whole repository.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from aimon_core.permission._gitcmd import GIT_SUBCOMMANDS
from aimon_core.permission._optspec import Parsed, Refused, Role, options, parse_args
from aimon_core.permission._paths import GLOB_CHARS
from aimon_core.permission._spelling import clean, expand_user

# Sub-commands that print names, hashes and messages, never a file's contents (unless given
# a patch-like option, see `_PATCH_LIKE`).
_NAMES_ONLY = frozenset({
    "ls-files", "ls-tree", "rev-parse", "branch", "tag", "remote", "describe", "config",
    "rev-list", "show-ref", "for-each-ref", "merge-base", "name-rev", "count-objects",
    "check-ignore", "check-attr", "check-ref-format", "var", "version", "help", "init",
    "clone", "fetch", "pull", "push", "commit", "add", "rm", "mv", "reset", "restore",
    "checkout", "switch", "merge", "rebase", "cherry-pick", "revert", "clean", "gc", "prune",
    "fsck", "worktree", "submodule", "bisect", "sparse-checkout", "maintenance", "reflog",
    "shortlog", "cherry", "apply", "am",
})
# Options of those that show hunks or file contents (`add -p`, `commit -v`, `reflog -p`).
_PATCH_LIKE = ("--patch", "--interactive", "--verbose", "--edit", "--unified")
_PATCH_LETTERS = frozenset("pvuU")
# Sub-commands whose `name` operands print contents (`stash show`, `notes show`).
_PRINTING_ACTIONS = {"stash": frozenset({"show", "list"}), "notes": frozenset({"show"})}
_STASH_NAMES = frozenset({"push", "save", "drop", "pop", "apply", "clear", "branch", "create",
                          "store"})
# Diff options that keep the output to names and numbers.
_NAMES_OUTPUT = frozenset({
    "-s", "--no-patch", "--raw", "--numstat", "--shortstat", "--dirstat", "--summary",
    "--name-only", "--name-status", "--stat", "--compact-summary", "--quiet",
})
_QUIET_OPTIONS = frozenset(o.name for o in options(
    "-R -z -D -M? -C? -B? -l= -O= -S= -G= -I= --cumulative --stat-width= --stat-name-width="
    " --stat-count= --stat-graph-width= --color? --no-color --no-renames --find-renames?"
    " --find-copies? --find-copies-harder --break-rewrites? --irreversible-delete"
    " --diff-filter= --pickaxe-all --pickaxe-regex --relative? --no-relative --abbrev?"
    " --full-index --no-ext-diff --no-textconv --ignore-submodules? --src-prefix="
    " --dst-prefix= --no-prefix --default-prefix --minimal --patience --histogram"
    " --diff-algorithm= --anchored= --indent-heuristic --no-indent-heuristic --exit-code"
    " --no-diff-merges --ita-invisible-in-index -a -b -w --text --ignore-cr-at-eol"
    " --ignore-space-at-eol --ignore-space-change --ignore-all-space --ignore-blank-lines"
    " --ignore-matching-lines= --cached --staged --merge-base"
)) | _NAMES_OUTPUT
# `log` options that choose and format commits; `-L` prints the lines it follows.
_LOG_ONLY = (frozenset(o.name for o in GIT_SUBCOMMANDS["log"].allowed) - frozenset(
    o.name for o in GIT_SUBCOMMANDS["diff"].allowed) - {"-L"}) | {"-NUM"}
_NARROWED = frozenset({"grep", "log", "diff", "show"})
# A revision that is surely a commit: HEAD, or anything peeled with `~N` / `^N`.
_COMMIT = re.compile(r"\^?(?:HEAD|@|[^:{}\s]+[~^]\d*)(?:[~^]\d*)*")
_SAFE_GLOBALS = frozenset({
    "--no-pager", "-P", "--paginate", "-p", "--no-optional-locks", "--no-replace-objects",
    "--literal-pathspecs", "--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs",
})
_REPOSITORY_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE",
                   "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES")
# `-c` settings that move the work tree or the repository.
_MOVING_KEYS = ("core.worktree", "core.bare", "include", "safe.")
ANYWHERE = "/"


def printed_paths(argv: tuple[str, ...], cwd: Path) -> tuple[str, ...]:
    """Return the absolute paths at or below which ``git ...`` may print file contents.

    ``()`` when it prints names only; ``("/",)`` when aimon cannot tell where the repository
    is (``--git-dir``, ``-c``, ``GIT_DIR``).
    """
    index, here = _globals(argv, Path(cwd))
    if index >= len(argv):
        return ()
    sub, args = argv[index], argv[index + 1 :]
    spec = GIT_SUBCOMMANDS.get(sub)
    parsed = parse_args(spec, args) if spec is not None else None
    parsed = None if isinstance(parsed, Refused) else parsed
    if _names_only(sub, args, parsed):
        return ()
    if sub == "diff" and parsed is not None and parsed.has("--no-index"):
        return ()  # its operands are the files it reads; they are checked as paths
    if here is None:
        return (ANYWHERE,)
    top = repository_top(here) or clean(os.path.normpath(here.absolute()))
    if sub == "blame" and parsed is not None:
        # blame prints the file it is given (operands that are revisions name no file).
        return tuple(_resolved(op, top, here, from_top=False) for op in parsed.operands)
    if sub not in _NARROWED or parsed is None:
        return (top,)
    return _narrowed(sub, parsed, top, here)


def repository_top(cwd: Path) -> str | None:
    """Return the folder of the repository git may use from ``cwd`` (worktree or bare), or None.

    Unlike ``filesystem.find_repository`` (the repository git surely uses), the first folder
    upward that holds a ``.git`` or is laid out like a bare repository counts, valid or not:
    what git might print from is the question.
    """
    if any(os.environ.get(name) for name in _REPOSITORY_ENV):
        return None
    try:
        start = Path(clean(os.path.realpath(cwd)))
    except (OSError, ValueError):
        return None
    for folder in (start, *start.parents):
        if (folder / ".git").exists() or all((folder / m).exists()
                                            for m in ("HEAD", "objects", "refs")):
            return str(folder)
    return None


def _globals(argv: tuple[str, ...], cwd: Path) -> tuple[int, Path | None]:
    """Return the sub-command's index and the folder git starts in (None: not known)."""
    here: Path | None = cwd
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        arg = argv[i]
        setting = argv[i + 1] if arg == "-c" and i + 1 < len(argv) else arg[2:]
        if arg == "-C" and i + 1 < len(argv):
            here = here / expand_user(argv[i + 1]) if here is not None else None
        elif arg.startswith("-c") and not setting.lower().startswith(_MOVING_KEYS):
            pass  # a setting that runs a program is an escape hatch, asked about elsewhere
        elif arg not in _SAFE_GLOBALS:
            here = None  # --git-dir, --work-tree, --namespace...: the repository is elsewhere
        i += 2 if arg in {"-C", "-c", "--git-dir", "--work-tree", "--namespace"} else 1
    return i, here


def _names_only(sub: str, args: tuple[str, ...], parsed: Parsed | None) -> bool:
    match sub:
        case "status":
            return parsed is not None and not parsed.has("-v", "--verbose")
        case "log":
            return parsed is not None and all(
                name in _LOG_ONLY or name in _QUIET_OPTIONS for name, _ in parsed.options)
        case "diff" | "show":
            return parsed is not None and _names_output(sub, parsed)
        case "stash" | "notes":
            action = next((a for a in args if not a.startswith("-")), "list")
            if action in _PRINTING_ACTIONS[sub] or (sub == "stash" and action not in (
                _STASH_NAMES | {"list"})):
                return False
            return not _patch_like(args)
        case _ if sub in _NAMES_ONLY:
            return sub in GIT_SUBCOMMANDS or not _patch_like(args)
        case _:
            return False


def _names_output(sub: str, parsed: Parsed) -> bool:
    """Tell whether ``git diff``/``show`` prints names and numbers only."""
    allowed = _QUIET_OPTIONS | (_LOG_ONLY if sub == "show" else frozenset())
    if not all(name in allowed for name, _ in parsed.options):
        return False
    if not any(name in _NAMES_OUTPUT for name, _ in parsed.options):
        return False
    # `git show` prints any object it is given; only commits come out as names and numbers.
    return sub == "diff" or all(_COMMIT.fullmatch(o) for o in _revisions(parsed))


def _patch_like(args: tuple[str, ...]) -> bool:
    for arg in args:
        if arg == "--":
            return False
        name = arg.partition("=")[0]
        if arg.startswith("--") and len(name) > 2 and any(o.startswith(name) for o in _PATCH_LIKE):
            return True
        if arg.startswith("-") and not arg.startswith("--") and set(arg[1:]) & _PATCH_LETTERS:
            return True
    return False


def _split(parsed: Parsed) -> tuple[list[str], list[str]]:
    """Return the operands before ``--`` (revisions, a pattern) and after it (pathspecs)."""
    roles = [r for r in parsed.roles if r in {Role.OPERAND, Role.LAST}]
    pairs = list(zip(parsed.operands, roles, strict=True))
    return ([op for op, role in pairs if role is Role.OPERAND],
            [op for op, role in pairs if role is Role.LAST])


def _revisions(parsed: Parsed) -> list[str]:
    return _split(parsed)[0]


def _narrowed(sub: str, parsed: Parsed, top: str, cwd: Path) -> tuple[str, ...]:
    """Return what ``grep``/``log``/``diff``/``show`` may print, narrowed by what it names."""
    before, after = _split(parsed)
    if sub == "grep" and before and not parsed.has("-e", "-f"):
        before = before[1:]  # the pattern
    named: list[str] = []
    revisions: list[str] = []
    for operand in before:
        rev, path = _revision_path(operand)
        if path is None:
            revisions.append(rev)
        else:
            named.append(_resolved(path, top, cwd, from_top=not path.startswith(("./", "../"))))
    if sub in {"show", "diff"} and not all(_COMMIT.fullmatch(r) for r in revisions):
        return (top,)
    if after:
        return tuple(named + [_pathspec(p, top, cwd) for p in after])
    return (top,) if revisions or not named else tuple(named)


def _revision_path(operand: str) -> tuple[str, str | None]:
    """Split ``REV:path`` (``:path``, ``:0:path``, ``HEAD^{tree}:path``); path None if none."""
    depth = 0
    for i, char in enumerate(operand):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == ":" and depth == 0:
            rest = operand[i + 1 :]
            if i == 0 and rest.startswith("/"):
                return operand, None  # `:/message` finds a commit by its message
            if i == 0 and re.match(r"\d:", rest):
                rest = rest[2:]
            return operand[:i], rest
    return operand, None


def _pathspec(spec: str, top: str, cwd: Path) -> str:
    """Return the folder a pathspec covers: its literal part, or the whole repository."""
    if spec.startswith(":"):
        return top  # magic (`:(top)`, `:(exclude)`, `:/`)
    cut = next((i for i, c in enumerate(spec) if c in GLOB_CHARS or c == "\\"), len(spec))
    literal = spec[:cut] if cut == len(spec) else spec[:cut].rpartition("/")[0]
    return _resolved(literal, top, cwd, from_top=False)


def _resolved(path: str, top: str, cwd: Path, *, from_top: bool) -> str:
    base = Path(top) if from_top else Path(cwd).absolute()
    return clean(os.path.normpath(base / path)) if path else str(base)
