"""Normalise a simple command for deny and ask matching.

One argv yields several forms: itself, its basename (``/bin/rm`` -> ``rm``), the command a
wrapper runs (``sudo``, ``env``, ``command``, ``builtin``, ``exec``, ``nohup``, ``time``,
``timeout N``, ``nice -n N``, ``stdbuf``, ``ionice``, ``setsid``, ``busybox``, ``xargs``,
``watch``,
``find -exec ... ;``), the commands of an inline script (``bash -c``, ``sh -c``,
``zsh -c``, ``su -c``, ``eval``, ``env -S``, ``trap``), and git without its global options
(``git -C dir --no-pager push`` -> ``git push``). Leading ``VAR=value`` words are already
split off by the parser; those after ``env``/``sudo`` are skipped here.
"""

from __future__ import annotations

import re
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Forms:
    """The argv forms deny and ask rules are matched against, and what hides the rest."""

    argvs: tuple[tuple[str, ...], ...]
    problems: tuple[str, ...]


def command_forms(argv: tuple[str, ...], *, reparse_budget: int = 3) -> Forms:
    """Return every normalised form of ``argv`` (itself first)."""
    argvs: list[tuple[str, ...]] = []
    problems: list[str] = []
    _expand(argv, argvs, problems, reparse_budget)
    return Forms(argvs=tuple(argvs), problems=tuple(dict.fromkeys(problems)))


def _expand(
    argv: tuple[str, ...], out: list[tuple[str, ...]], problems: list[str], budget: int
) -> None:
    if not argv or argv in out:
        return
    if len(out) > 64:
        problems.append("the command nests too many wrappers")
        return
    out.append(argv)
    name = argv[0]
    base = name.rsplit("/", 1)[-1]
    if _GLOB.search(base):
        problems.append("a command name is a glob")
    for variant in (base, base.lower()):
        if variant != name:
            _expand((variant, *argv[1:]), out, problems, budget)
    inner, scripts = _unwrap(base, argv[1:])
    for form in inner:
        _expand(form, out, problems, budget)
    for script in scripts:
        if budget <= 0:
            problems.append("inline scripts nest too deeply")
            continue
        parsed = parse_script(script, reparse_budget=budget - 1)
        if parsed.risky:
            problems.append(f"an inline script uses {', '.join(parsed.risky)}")
        if COULD_NOT_PARSE in parsed.risky:
            problems.append("an inline script could not be parsed")
        for command in parsed.commands:
            _expand(command.argv, out, problems, budget - 1)


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

