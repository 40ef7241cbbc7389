"""Knowledge about programs: read-only invocations, escape-hatch arguments, risky env names.

Everything here looks at one literal argv. Read-only is proven, not presumed: a program is
read-only only in the forms its spec (``_programs``, ``_gitcmd``) allows, parsed the way the
program parses them (``_optspec``); any other option or form is not. An escape hatch is an
argument that makes a program run other programs or write files it was not obviously asked to
write (``git -c core.pager=...``, ``rg --pre``, ``find -exec``, ``sed -i``, ``sort --outp=x``);
a broad allow rule does not cover one. Both come from the same tables and the same parser.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path

from aimon_core.permission._gitcmd import git_config_problem, git_hatches, git_read_only
from aimon_core.permission._optspec import (
    OptionSpec,
    Parsed,
    Refused,
    dangerous_at,
    parse_args,
)
from aimon_core.permission._programs import (
    FIND_NEWER,
    FIND_PRIMARIES,
    HATCH_ONLY,
    PROGRAMS,
    Program,
)

Hatch = tuple[int, str]

_DANGEROUS_ENV = frozenset({
    "PATH", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV", "PAGER", "EDITOR",
    "VISUAL", "NODE_OPTIONS", "NODE_PATH", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT",
    "RUBYLIB", "IFS", "PS4", "PROMPT_COMMAND", "HOME", "SHELL", "SHELLOPTS", "BASHOPTS",
    "CDPATH", "GLOBIGNORE", "MANPAGER", "BROWSER", "LESS", "LESSOPEN", "LESSCLOSE",
    "GREP_OPTIONS", "RIPGREP_CONFIG_PATH", "TAR_OPTIONS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
    "CLASSPATH", "ZDOTDIR", "TERMINFO", "GCONV_PATH", "MAKEFLAGS", "RUSTC_WRAPPER",
    "POSIXLY_CORRECT",
})
_DANGEROUS_ENV_PREFIXES = (
    "LD_", "DYLD_", "GIT_", "PYTHON", "BASH_FUNC_", "XDG_", "NPM_CONFIG_", "SSH_", "SUDO_",
)
_VERSION_QUERIES = frozenset({
    ("python", "--version"), ("python", "-V"), ("python3", "--version"), ("python3", "-V"),
    ("node", "--version"), ("node", "-v"),
})
_FIND_LEADING = frozenset({"-H", "-L", "-P", "-O0", "-O1", "-O2", "-O3"})
_SED_SIMPLE_COMMANDS = frozenset("pPdDqQnN=lgGhHx{}")
_SED_S_FLAGS = frozenset("gpiImM0123456789")
_INTEGER = re.compile(r"-?\d+")
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_AWKS = frozenset({"awk", "gawk", "mawk", "nawk"})
# Programs whose operands, not only their options, can be escape hatches: a sed script, an
# awk program, uniq's output file.
OPERAND_HATCHES = frozenset({"sed", "uniq", *_AWKS})


def has_hatches(program: str) -> bool:
    """Tell whether ``program`` has arguments aimon knows to run programs or write files."""
    entry = PROGRAMS.get(program)
    return (program == "git" or program in HATCH_ONLY or program in OPERAND_HATCHES
            or (entry is not None and bool(entry.spec.dangerous)))


def assignment_problem(assignment: str) -> str | None:
    """Say why a ``NAME=value`` prefix is unsafe, or None when it is harmless."""
    name = assignment.split("=", 1)[0].removesuffix("+")
    upper = name.upper()
    if name in _DANGEROUS_ENV or upper.startswith(_DANGEROUS_ENV_PREFIXES):
        return f"sets {name}, which can change what runs"
    return None


def is_read_only_argv(argv: tuple[str, ...], *, cwd: Path | None = None) -> bool:
    """Tell whether a literal argv is a known read-only command in an allowed form.

    Args:
        cwd: the directory the command runs in; git is read-only only when the repository
            found from there has inert configuration, so with None git is never read-only.
    """
    if not argv or "/" in argv[0] or escape_hatches(argv):
        return False
    program, args = argv[0], argv[1:]
    if program == "git":
        return git_read_only(argv, cwd)
    entry = PROGRAMS.get(program)
    if entry is not None:
        return _program_read_only(entry, argv)
    match program:
        case "printf":
            return bool(args) and not args[0].startswith("-")
        case "env":
            return not args
        case "test" | "[" | "[[":
            return _test_read_only(argv)
        case _:
            return argv in _VERSION_QUERIES


def _program_read_only(entry: Program, argv: tuple[str, ...]) -> bool:
    if entry.any_args:
        return True
    if entry.words:
        return _find_read_only(argv[1:])
    parsed = parse_args(entry.spec, argv[1:])
    if isinstance(parsed, Refused):
        return False
    return entry.check is None or entry.check(parsed) is None


def _find_read_only(args: tuple[str, ...]) -> bool:
    i = 0
    while i < len(args) and args[i] in _FIND_LEADING:
        i += 1
    while i < len(args) and not args[i].startswith("-") and args[i] not in {"(", ")", "!", ","}:
        i += 1  # starting points
    while i < len(args):
        count = FIND_PRIMARIES.get(args[i])
        if count is None and FIND_NEWER.fullmatch(args[i]):
            count = 1
        if count is None:
            return False
        i += 1 + count
    return i == len(args)


def escape_hatches(argv: tuple[str, ...], *, cwd: Path | None = None) -> tuple[Hatch, ...]:
    """Return (index, reason) for each argument that lets ``argv`` run or write more.

    With `cwd`, a git repository whose configuration can run programs is a hatch too, at
    index ``len(argv)``: no rule, however it is spelled, covers what the configuration runs.
    """
    if not argv:
        return ()
    program = argv[0].rsplit("/", 1)[-1]
    if program == "git":
        configured = git_config_problem(argv, cwd) if cwd is not None else None
        return (*git_hatches(argv), *(((len(argv), configured),) if configured else ()))
    entry = PROGRAMS.get(program)
    spec = entry.spec if entry is not None else HATCH_ONLY.get(program)
    hits: list[Hatch] = []
    if entry is not None and entry.words:
        names = {o.name for o in entry.spec.dangerous}
        hits += [(i, _why(program, a)) for i, a in enumerate(argv[1:], 1) if a in names]
    elif spec is not None:
        hits += [(i + 1, _why(program, name)) for i, name in dangerous_at(spec, argv[1:])]
    match program:
        case "sed" if entry is not None:
            hits += _sed_hatches(entry.spec, argv)
        case "uniq" if entry is not None:
            hits += _uniq_hatches(entry.spec, argv)
        case "tar" if len(argv) > 1 and not argv[1].startswith("-") and (
            set(argv[1]) & {"I", "F"}
        ):
            hits.append((1, "old-style `tar` options run a program (I or F)"))
        case name if name in _AWKS:
            hits += _awk_hatches(argv)
        case _:
            pass
    return tuple(sorted(set(hits)))


def _why(program: str, option: str) -> str:
    return f"`{program} {option}` can run programs or write files"


def _uniq_hatches(spec: OptionSpec, argv: tuple[str, ...]) -> list[Hatch]:
    parsed = parse_args(_any_operands(spec), argv[1:])
    if isinstance(parsed, Refused) or len(parsed.operands) > 1:
        return [(len(argv) - 1, "`uniq IN OUT` writes OUT")]
    return []


@functools.lru_cache(maxsize=8)
def _any_operands(spec: OptionSpec) -> OptionSpec:
    return dataclasses.replace(spec, max_operands=None)


@functools.lru_cache(maxsize=8)
def _dangerous_accepted(spec: OptionSpec) -> OptionSpec:
    """Return ``spec`` with its dangerous options allowed: to find sed's scripts, not to judge."""
    return dataclasses.replace(spec, allowed=spec.allowed + spec.dangerous, dangerous=())


def _awk_hatches(argv: tuple[str, ...]) -> list[Hatch]:
    for index, arg in enumerate(argv[1:], 1):
        if arg.startswith("-"):
            continue
        if "system" in arg or "|" in arg or ">" in arg:
            return [(index, "the awk program can run commands or write files")]
        return []
    return []


def _sed_hatches(spec: OptionSpec, argv: tuple[str, ...]) -> list[Hatch]:
    parsed = parse_args(_dangerous_accepted(spec), argv[1:])
    if isinstance(parsed, Refused):
        return [(parsed.index + 1, f"sed: {parsed.reason}")]
    return [
        (_index_of(argv, script), "the sed script may run commands or write files")
        for script in _sed_scripts(parsed)
        if not sed_script_is_safe(script)
    ]


def _sed_scripts(parsed: Parsed) -> list[str]:
    scripts = [v or "" for name, v in parsed.options if name in {"-e", "--expression"}]
    if not scripts and not parsed.has("-f", "--file") and parsed.operands:
        scripts.append(parsed.operands[0])
    return scripts


def _index_of(argv: tuple[str, ...], text: str) -> int:
    for index in range(1, len(argv)):
        if argv[index].endswith(text):
            return index
    return len(argv) - 1


def sed_script_is_safe(script: str) -> bool:
    """Tell whether a sed script only prints, deletes, substitutes or transliterates."""
    i, n = 0, len(script)
    while True:
        while i < n and script[i] in " \t\n;":
            i += 1
        if i >= n:
            return True
        step = _sed_address(script, i)
        if step is not None and step < n and script[step] == ",":
            step = _sed_address(script, step + 1)
        if step is None:
            return False
        i = step
        while i < n and script[i] in " \t!":
            i += 1
        if i >= n:
            return False
        if script[i] in _SED_SIMPLE_COMMANDS:
            i += 1
        elif script[i] in "sy":
            command = script[i]
            end = _skip_delimited(script, i + 1, 2)
            if end is None:
                return False
            i = end
            while command == "s" and i < n and script[i] in _SED_S_FLAGS:
                i += 1
        else:
            return False
        if i < n and script[i] not in " \t\n;}":
            return False


def _sed_address(script: str, i: int) -> int | None:
    n = len(script)
    if i < n and script[i].isdigit():
        while i < n and (script[i].isdigit() or script[i] == "~"):
            i += 1
        return i
    if i < n and script[i] == "$":
        return i + 1
    if i < n and script[i] == "/":
        end = _skip_delimited(script, i, 1)
        while end is not None and end < n and script[end] in "IM":
            end += 1
        return end
    return i


def _skip_delimited(script: str, i: int, count: int) -> int | None:
    """Skip ``count`` more unescaped copies of the delimiter at ``script[i]``."""
    if i >= len(script) or script[i] in "\n\\":
        return None
    delimiter = script[i]
    i += 1
    while i < len(script):
        if script[i] == "\\":
            i += 2
            continue
        i += 1
        if script[i - 1] == delimiter:
            count -= 1
            if count == 0:
                return i
    return None


def _test_read_only(argv: tuple[str, ...]) -> bool:
    args = argv[1:-1] if argv[0] in {"[", "[["} else argv[1:]
    if argv[0] in {"[", "[["} and argv[-1] not in {"]", "]]"}:
        return False
    for index, arg in enumerate(args):
        # `[[ x -eq 1 ]]` evaluates x as arithmetic, and `a[$(cmd)]` runs cmd.
        if "[" in arg or arg == "-v":
            return False
        if arg in _ARITHMETIC_TESTS:
            operands = args[index - 1 : index] + args[index + 1 : index + 2]
            if len(operands) != 2 or not all(_INTEGER.fullmatch(o) for o in operands):
                return False
    return True
