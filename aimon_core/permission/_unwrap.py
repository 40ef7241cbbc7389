"""Normalise a simple command for deny and ask matching.

One argv yields several forms: itself, its basename (``/bin/rm`` -> ``rm``), the command a
wrapper runs (``sudo``, ``env``, ``command``, ``builtin``, ``exec``, ``nohup``, ``time``,
``timeout N``, ``nice -n N``, ``stdbuf``, ``ionice``, ``setsid``, ``busybox``, ``xargs``,
``watch``, ``find -exec ... ;``), the commands of an inline script (``bash -c``, ``sh -c``,
``zsh -c``, ``su -c``, ``eval``, ``env -S``, ``trap``), and git without its global options
(``git -C dir --no-pager push`` -> ``git push``). Leading ``VAR=value`` words are already
split off by the parser; those after ``env``/``sudo`` are skipped here. Git aliases given
with ``-c alias.X=...`` and command-valued ``-c`` settings (``core.pager`` ...) are applied.

Some commands hide what they run in a way no form can show: a shell reading stdin or a
script file, ``alias``/``source``, an interpreter with inline code or a script, a wrapper
whose options we do not know (``chroot``, ``flock``, ``strace`` ...: every suffix of its
words starting at an operand is added as a guessed form; for everyday runners such as
``uv run`` or ``docker exec`` the tails are added without making them suspicious), a
program named by a path outside the system folders (``./t``), a git alias or git plumbing
(``send-pack`` for ``push``). These are
recorded as ``Forms.opaque``; the matcher asks about them when a deny or ask rule could
be about the hidden command.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from aimon_core.permission._bash import parse_script
from aimon_core.permission._syntax import COULD_NOT_PARSE

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_GLOB = re.compile(r"[*?]|\[.*\]")
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish"})
_SHELL_WITH_VALUE = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
_PLAIN_WRAPPERS = frozenset({
    "builtin", "nohup", "setsid", "unbuffer", "chronic", "coproc", "busybox",
})
_WITH_VALUE: dict[str, frozenset[str]] = {
    "command": frozenset(),
    "exec": frozenset({"-a"}),
    "time": frozenset({"-f", "--format", "-o", "--output"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "--class", "-n", "--classdata", "-p", "-P", "-u"}),
    "stdbuf": frozenset({"-i", "--input", "-o", "--output", "-e", "--error"}),
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "sudo": frozenset({
        "-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-h", "--host",
        "-p", "--prompt", "-r", "--role", "-t", "--type", "-T", "--command-timeout", "-U",
        "--other-user", "-R", "--chroot",
    }),
    "doas": frozenset({"-u", "-C"}),
    "xargs": frozenset({
        "-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L", "-n", "--max-args", "-P",
        "--max-procs", "-s", "--max-chars", "--process-slot-var",
    }),
    "watch": frozenset({"-n", "--interval", "-q", "--equexit"}),
    "su": frozenset({"-c", "--command", "-s", "--shell", "-g", "--group", "-G"}),
}
_GIT_GLOBAL_WITH_VALUE = frozenset({
    "-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix",
})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# Programs that run their operands as a command and whose options aimon does not model.
GENERIC_WRAPPERS = frozenset({
    "chroot", "flock", "script", "taskset", "strace", "ltrace", "runuser", "unshare", "prlimit",
    "firejail", "nsenter", "setpriv", "cgexec", "numactl", "caffeinate", "chrt", "faketime",
    "sg", "newgrp", "pkexec", "systemd-run", "dbus-run-session", "dbus-launch", "flatpak-spawn",
    "bwrap", "proot", "valgrind", "gdb", "lldb", "perf", "catchsegv", "torsocks", "proxychains",
    "proxychains4", "tsocks", "fakeroot", "fakechroot", "cpulimit", "sem", "parallel", "entr",
    "ssh", "setarch", "linux32", "linux64", "schedtool", "trickle", "eatmydata", "nocache",
    "rlwrap", "socat", "xvfb-run", "mpirun", "mpiexec", "srun", "nix-shell", "npx", "pnpx",
    "bunx", "uvx", "pipx", "tini", "dumb-init", "gosu", "su-exec", "chpst", "setuidgid",
    "envdir", "softlimit", "at", "batch", "tmux", "screen", "start-stop-daemon", "daemonize",
    "runcon", "sandbox-exec", "winpty", "sshpass", "retry", "expect", "s6-setuidgid",
    "ktrace", "dtruss", "dotenv", "with-contenv",
})
# Everyday tools with a sub-command that runs a command (`uv run X`, `docker exec c X`):
# the tails after the sub-command are matched against deny rules, but the tools are not
# suspicious by themselves.
RUNNERS = frozenset({
    "apptainer", "singularity", "podman", "docker", "kubectl", "uv", "poetry", "pdm", "hatch",
    "conda", "mamba", "pixi", "rye", "pipenv", "pyenv", "rbenv", "asdf", "mise", "devbox",
    "direnv", "aws-vault", "op", "doppler", "bundle", "npm", "pnpm", "yarn", "hyperfine",
})
_SYSTEM_DIRS = (
    "/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/", "/usr/local/sbin/",
    "/opt/homebrew/bin/",
)
# Programs that run code given inline or in a script file.
INTERPRETERS = frozenset({
    "python", "python2", "python3", "pypy", "pypy3", "perl", "ruby", "irb", "node", "nodejs",
    "deno", "bun", "php", "lua", "luajit", "tclsh", "wish", "osascript", "Rscript", "R",
    "julia", "pwsh", "powershell", "guile", "racket", "sbcl", "ghci", "runghc", "elixir",
    "erl", "escript", "groovy", "jshell", "scala", "swift", "sqlite3", "psql", "mysql", "vim",
    "vi", "nvim", "ex", "ed", "emacs", "tsx", "ts-node",
})
_PYTHON = re.compile(r"python[0-9.]*|pypy[0-9.]*")
# `python -m MODULE` that only runs tools or tests, not code given on the command line.
_SAFE_MODULES = frozenset({
    "pytest", "unittest", "pip", "venv", "mypy", "ruff", "black", "isort", "flake8", "pylint",
    "coverage", "build", "json.tool", "http.server", "pydoc", "compileall", "py_compile",
    "tox", "nox", "twine", "doctest",
})
_PYTHON_FLAGS = frozenset({
    "-B", "-b", "-bb", "-d", "-E", "-I", "-O", "-OO", "-P", "-q", "-R", "-s", "-S", "-u", "-v",
})
_VERSION_FLAGS = frozenset({"--version", "-V", "-v", "--help", "-h", "-version"})
_SHELL_BUILTINS = {
    "alias": "an alias may rename any command",
    "source": "`source` runs a script file",
    ".": "`.` runs a script file",
    "hash": "`hash -p` may rename any command",
    "enable": "`enable` may load or hide builtins",
}
GIT_COMMANDS = frozenset({
    "add", "am", "annotate", "apply", "archive", "bisect", "blame", "branch", "bundle",
    "cat-file", "check-attr", "check-ignore", "check-mailmap", "check-ref-format", "checkout",
    "cherry", "cherry-pick", "citool", "clean", "clone", "commit", "config", "count-objects",
    "describe", "diff", "diff-files", "diff-index", "diff-tree", "difftool", "fetch",
    "for-each-ref", "format-patch", "fsck", "gc", "grep", "help", "init", "log", "ls-files",
    "ls-remote", "ls-tree", "merge", "merge-base", "mergetool", "mv", "name-rev", "notes",
    "pull", "push", "range-diff", "rebase", "reflog", "remote", "repack", "restore", "rev-list",
    "rev-parse", "revert", "rm", "shortlog", "show", "show-branch", "show-ref", "sparse-checkout",
    "stash", "status", "submodule", "switch", "tag", "version", "whatchanged", "worktree",
    "maintenance", "var", "verify-commit", "verify-tag", "stripspace", "interpret-trailers",
    "hash-object", "mktag", "mktree", "write-tree", "read-tree", "commit-tree", "update-ref",
    "update-index", "symbolic-ref", "checkout-index", "send-pack", "http-push", "fast-import",
    "fast-export", "filter-branch", "replace", "prune", "pack-objects", "unpack-objects",
    "receive-pack", "upload-pack", "merge-tree", "merge-file", "request-pull",
    "send-email", "credential", "bugreport", "gui", "gitk", "instaweb", "archimport",
})
# Plumbing that does what porcelain does (push, commit, reset, branch -D, tag ...).
_GIT_PLUMBING = frozenset({
    "send-pack", "http-push", "receive-pack", "upload-pack", "update-ref", "commit-tree",
    "read-tree", "checkout-index", "update-index", "symbolic-ref", "mktag", "mktree",
    "write-tree", "hash-object", "fast-import", "replace", "pack-objects", "unpack-objects",
    "merge-tree", "merge-file", "filter-branch",
})
# git settings whose value is a command line run by the shell; `-c KEY=VALUE` is unwrapped.
_GIT_COMMAND_KEY = re.compile(
    r"core\.(pager|editor|sshcommand|fsmonitor|askpass)|sequence\.editor|diff\.external"
    r"|gpg\.program|interactive\.difffilter|credential\.helper|pager\.[^.]+"
    r"|(filter\.[^.]+\.(clean|smudge|process))|(diff\.[^.]+\.(textconv|command))"
    r"|(merge\.[^.]+\.driver)|(alias\.[^.]+)",
)
_SCRIPT_WORD = re.compile(r"\s|[;&|`$<>(]")


@dataclass(frozen=True, slots=True, kw_only=True)
class Opaque:
    """A part of a command whose effect no form shows; ``program`` None means any rule."""

    reason: str
    program: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Forms:
    """The argv forms deny and ask rules are matched against, and what hides the rest."""

    argvs: tuple[tuple[str, ...], ...]
    problems: tuple[str, ...]
    opaque: tuple[Opaque, ...] = ()


def command_forms(argv: tuple[str, ...], *, reparse_budget: int = 3) -> Forms:
    """Return every normalised form of ``argv`` (itself first)."""
    argvs: list[tuple[str, ...]] = []
    problems: list[str] = []
    opaque: list[Opaque] = []
    _expand(argv, argvs, (problems, opaque), reparse_budget)
    return Forms(argvs=tuple(argvs), problems=tuple(dict.fromkeys(problems)),
                 opaque=tuple(dict.fromkeys(opaque)))


def _expand(
    argv: tuple[str, ...],
    out: list[tuple[str, ...]],
    notes: tuple[list[str], list[Opaque]],
    budget: int,
    *,
    guessed: bool = False,
) -> None:
    """Add ``argv`` and what it runs to ``out``.

    ``guessed`` forms (a wrapper's tails, words that look like scripts) may not be commands
    at all, so what would block a real command only makes them opaque.
    """
    problems, opaque = notes

    def problem(reason: str) -> None:
        if guessed:
            opaque.append(Opaque(reason=reason))
        else:
            problems.append(reason)

    if not argv or argv in out:
        return
    if len(out) > 64:
        problem("the command nests too many wrappers")
        return
    out.append(argv)
    name = argv[0]
    base = name.rsplit("/", 1)[-1]
    if _GLOB.search(base):
        problem("a command name is a glob")
    for variant in (base, base.lower()):
        if variant != name:
            _expand((variant, *argv[1:]), out, notes, budget, guessed=guessed)
    inner, scripts = _unwrap(base, argv[1:])
    opaque.extend(_hidden(name, argv[1:], guessed=guessed))
    forms = [(form, guessed) for form in inner]
    scripts_guessed = [(script, guessed) for script in scripts]
    if base == "git":
        forms += [(form, guessed) for form in _git_aliases(argv[1:])]
        scripts_guessed += [(script, guessed) for script in _git_config_scripts(argv[1:])]
    elif base in GENERIC_WRAPPERS or base in RUNNERS:
        # A runner's first operand is its sub-command (`docker rm x` is not `rm x`).
        forms += [(form, True) for form in _suffixes(argv[1:], skip=int(base in RUNNERS))]
        scripts_guessed += [(script, True) for script in _script_words(argv[1:])]
    for form, form_guessed in forms:
        _expand(form, out, notes, budget, guessed=form_guessed)
    for script, script_guessed in scripts_guessed:
        _expand_script(script, out, notes, budget, guessed=script_guessed)


def _expand_script(
    script: str,
    out: list[tuple[str, ...]],
    notes: tuple[list[str], list[Opaque]],
    budget: int,
    *,
    guessed: bool,
) -> None:
    problems, opaque = notes
    found: list[str] = []
    if budget <= 0:
        found.append("inline scripts nest too deeply")
    else:
        parsed = parse_script(script, reparse_budget=budget - 1)
        if parsed.risky:
            found.append(f"an inline script uses {', '.join(parsed.risky)}")
        if COULD_NOT_PARSE in parsed.risky:
            found.append("an inline script could not be parsed")
        for command in parsed.commands:
            _expand(command.argv, out, notes, budget - 1, guessed=guessed)
    if guessed:
        opaque.extend(Opaque(reason=reason) for reason in found)
    else:
        problems.extend(found)


def _hidden(path: str, args: tuple[str, ...], *, guessed: bool = False) -> list[Opaque]:
    """Return what ``path args`` may run that no form shows."""
    name = path.rsplit("/", 1)[-1]
    # A guessed form's first word is often an option's value (`docker run -v /a:/b ...`).
    if "/" in path and not guessed and not path.startswith(_SYSTEM_DIRS):
        return [Opaque(reason=f"`{path}` is a program aimon does not know (a script, or a copy "
                              "of another program)")]
    if name in _SHELL_BUILTINS:
        return [Opaque(reason=_SHELL_BUILTINS[name])]
    if name in _SHELLS and not _shell_scripts(args):
        if args and set(args) <= _VERSION_FLAGS:
            return []
        return [Opaque(reason=f"`{name}` runs a script from stdin or a file aimon cannot see")]
    if name in GENERIC_WRAPPERS:
        return [Opaque(reason=f"`{name}` runs a command in a way aimon does not model")]
    if name in INTERPRETERS or _PYTHON.fullmatch(name):
        return [] if _benign_interpreter(name, args) else [
            Opaque(reason=f"`{name}` runs code aimon cannot check against the rules")
        ]
    if name == "git":
        return _git_hidden(args)
    return []


def _benign_interpreter(name: str, args: tuple[str, ...]) -> bool:
    if args and all(a in _VERSION_FLAGS for a in args):
        return True
    if not _PYTHON.fullmatch(name):
        return False
    i = 0
    while i < len(args) and args[i] in _PYTHON_FLAGS:
        i += 1
    return args[i : i + 1] == ("-m",) and args[i + 1 : i + 2] != () and (
        args[i + 1] in _SAFE_MODULES
    )


def _git_split(args: tuple[str, ...]) -> tuple[dict[str, str], int, bool]:
    """Return git's ``-c alias.X=...`` values, the sub-command's index and unknown config."""
    aliases: dict[str, str] = {}
    env_config = False
    i = 0
    while i < len(args) and args[i].startswith("-"):
        arg = args[i]
        value = args[i + 1] if arg == "-c" and i + 1 < len(args) else arg[2:] if (
            arg.startswith("-c") and len(arg) > 2) else ""
        key, eq, text = value.partition("=")
        if eq and key.lower().startswith("alias."):
            aliases[key[6:].lower()] = text
        env_config = env_config or arg.startswith("--config-env")
        i += 2 if arg in _GIT_GLOBAL_WITH_VALUE else 1
    return aliases, i, env_config


def git_config_value(argv: tuple[str, ...], index: int) -> str | None:
    """Return the command in git's ``-c KEY=VALUE`` at ``argv[index]`` if KEY runs one."""
    arg = argv[index]
    value = argv[index + 1] if arg == "-c" and index + 1 < len(argv) else arg[2:]
    key, eq, text = value.partition("=")
    if not arg.startswith("-c") or not eq or not _GIT_COMMAND_KEY.fullmatch(key.lower()):
        return None
    return text.removeprefix("!")


def _git_config_scripts(args: tuple[str, ...]) -> list[str]:
    argv = ("git", *args)
    _, end, _ = _git_split(args)
    found: list[str] = []
    for i in range(1, end + 1):
        value = git_config_value(argv, i)
        setting = argv[i + 1] if argv[i] == "-c" and i + 1 < len(argv) else argv[i][2:]
        # An alias runs a git sub-command (see _git_aliases) unless it starts with `!`.
        if value and not setting.lower().startswith("alias."):
            found.append(value)
    return found


def _git_hidden(args: tuple[str, ...]) -> list[Opaque]:
    aliases, index, env_config = _git_split(args)
    if index >= len(args):
        return []
    sub = args[index]
    found: list[Opaque] = []
    if env_config:
        found.append(Opaque(reason="`git --config-env` may define an alias", program="git"))
    if sub in _GIT_PLUMBING:
        found.append(Opaque(reason=f"`git {sub}` is plumbing that can do what porcelain does",
                            program="git"))
    elif sub not in GIT_COMMANDS and sub.lower() not in aliases:
        found.append(Opaque(reason=f"`git {sub}` may be an alias from git's configuration",
                            program="git"))
    return found


def _git_aliases(args: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Return ``git X`` with a ``-c alias.X=...`` given on the command line applied."""
    aliases, index, _ = _git_split(args)
    if index >= len(args) or args[index].lower() not in aliases:
        return []
    value = aliases[args[index].lower()]
    if value.startswith("!"):
        return [("sh", "-c", value[1:] + " " + shlex.join(args[index + 1 :]))]
    try:
        return [("git", *shlex.split(value), *args[index + 1 :])]
    except ValueError:
        return [("sh", "-c", value)]


def _suffixes(args: tuple[str, ...], *, skip: int = 0) -> list[tuple[str, ...]]:
    """Return every tail of ``args`` starting at an operand, but the first ``skip`` ones."""
    starts = [i for i, arg in enumerate(args[:16]) if not arg.startswith(("-", "+"))]
    return [args[i:] for i in starts[skip:]]


def _script_words(args: tuple[str, ...]) -> list[str]:
    """Return the words of a wrapper that look like shell scripts (``script -c 'cmd'``)."""
    return [arg.partition("=")[2] if arg.startswith("--") else arg
            for arg in args if _SCRIPT_WORD.search(arg)][:4]


def wrapped_command(argv: tuple[str, ...]) -> tuple[str, ...]:
    """Return the command a wrapper runs (``xargs -0 cat`` -> ``cat``); ``()`` if none."""
    if not argv:
        return ()
    inner, _ = _unwrap(argv[0].rsplit("/", 1)[-1], argv[1:])
    return inner[0] if inner else ()


def _unwrap(name: str, args: tuple[str, ...]) -> tuple[list[tuple[str, ...]], list[str]]:
    """Return the argvs and inline scripts that ``name args`` runs."""
    if name in _PLAIN_WRAPPERS:
        return [args], []
    if name in _SHELLS:
        return [], _shell_scripts(args)
    match name:
        case "eval":
            return [], [" ".join(args)]
        case "trap":
            return [], list(args[:1])
        case "git":
            return [_git_without_globals(args)], []
        case "find":
            return _find_execs(args), []
        case "command" if any(re.fullmatch(r"-p*[vV][pvV]*", a) for a in args[:2]):
            return [], []
    if name not in _WITH_VALUE:
        return [], []
    return _unwrap_options(name, args)


def _unwrap_options(name: str, args: tuple[str, ...]) -> tuple[list[tuple[str, ...]], list[str]]:
    """Unwrap a wrapper that takes options before the command it runs."""
    if name == "su":
        return [], _option_values(args, {"-c", "--command"})
    start = _skip_options(args, _WITH_VALUE[name])
    rest = args[start:]
    scripts = _option_values(args[:start], {"-S", "--split-string"} if name == "env" else set())
    if name in {"env", "sudo", "doas"}:
        while rest and _ASSIGNMENT.match(rest[0]):
            rest = rest[1:]
    if name == "timeout" and rest:
        rest = rest[1:]
    if name == "xargs" and not rest:
        rest = ("echo",)
    if name == "watch":
        scripts.append(" ".join(rest))
    if name == "sudo" and any(a in {"-s", "-i", "--shell", "--login"} for a in args[:start]):
        scripts.append(" ".join(rest))
    return [rest], scripts


def _skip_options(args: tuple[str, ...], with_value: frozenset[str]) -> int:
    """Return the index of the first operand after the options in ``args``."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            return i + 1
        if not arg.startswith("-"):
            return i
        if arg.startswith("--"):
            i += 2 if "=" not in arg and arg in with_value else 1
            continue
        for position, letter in enumerate(arg[1:], 1):
            if "-" + letter in with_value:
                # The value is the rest of this word, or the next word.
                i += 1 if position == len(arg) - 1 else 0
                break
        i += 1
    return i


def _option_values(args: tuple[str, ...], names: set[str]) -> list[str]:
    values: list[str] = []
    for index, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name in names and eq:
            values.append(value)
        elif arg in names and index + 1 < len(args):
            values.append(args[index + 1])
        elif len(arg) > 2 and arg[:2] in names and not arg.startswith("--"):
            values.append(arg[2:])
    return values


def _shell_scripts(args: tuple[str, ...]) -> list[str]:
    i = 0
    inline = False
    while i < len(args):
        arg = args[i]
        if arg in {"--", "-"}:
            i += 1
            break
        if arg in _SHELL_WITH_VALUE:
            i += 2
        elif arg.startswith("--") or (arg[:1] in "-+" and len(arg) > 1):
            inline = inline or (not arg.startswith("--") and "c" in arg)
            i += 1
        else:
            break
    return [args[i]] if inline and i < len(args) else []


def _git_without_globals(args: tuple[str, ...]) -> tuple[str, ...]:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _GIT_GLOBAL_WITH_VALUE else 1
    return ("git", *args[i:])


def _find_execs(args: tuple[str, ...]) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    i = 0
    while i < len(args):
        if args[i] in _FIND_EXEC:
            end = i + 1
            while end < len(args) and args[end] not in {";", "+"}:
                end += 1
            found.append(args[i + 1 : end])
            i = end
        i += 1
    return found

