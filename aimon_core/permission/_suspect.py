"""Bash deny and ask rules about the effect, not the spelling.

``rule_hits`` matches a rule against every form of every simple command, literally and with
options compared as sets (``_options``). ``suspicion`` says why a command cannot be shown to
stay outside the deny and ask rules that name commands: a form is opaque (a shell reading
stdin, an alias, an interpreter, a wrapper aimon does not model, a git alias or plumbing),
an argument is an escape hatch (``sed 'e ...'``, ``git -c ...``), a rule's words appear in
the command in another order, a file name pattern may expand to a rule's words (``rm *`` next
to a file named ``-rf``, ``git pu?h``), or a program we do not know gets a denied program's
name as an operand (``ln -s /bin/rm r``). Only deny and ask matching use this; allow stays
literal.
"""

from __future__ import annotations

import fnmatch

from aimon_core.permission._expansions import spelled_by
from aimon_core.permission._options import Shape, hits, rule_shape, shape, touches
from aimon_core.permission._readonly import escape_hatches
from aimon_core.permission._rules import (
    ExactPattern,
    PermissionRules,
    PrefixPattern,
    Rule,
    StemPattern,
    command_pattern,
    governs,
    match_argv,
)
from aimon_core.permission._unwrap import (
    GENERIC_WRAPPERS,
    INTERPRETERS,
    RUNNERS,
    Forms,
    git_config_value,
)

# Programs whose operands are data, never a program to run or to copy under another name.
_INERT = frozenset({
    "echo", "printf", "cat", "grep", "egrep", "fgrep", "rg", "ls", "head", "tail", "wc", "sort",
    "uniq", "cut", "tr", "diff", "cmp", "file", "stat", "du", "df", "which", "type", "whereis",
    "man", "info", "help", "touch", "mkdir", "rmdir", "rm", "test", "[", "[[", "pwd", "cd",
    "basename", "dirname", "realpath", "readlink", "tree", "less", "more", "true", "false",
    "date", "ps", "kill", "pgrep", "pkill", "killall", "jq", "yq", "git", "sed", "awk", "gawk",
    "find", "xargs", "export", "unset", "local", "declare", "readonly", "typeset", "read",
    "pip", "pip3", "apt", "apt-get", "brew", "dnf", "yum", "pacman", "apk", "cargo", "go",
    "npm", "pnpm", "yarn", "make", "cmake", "pytest", "tox", "nl", "od", "xxd", "hexdump",
    "strings", "base64", "sha256sum", "md5sum", "shasum", "column", "paste", "join", "comm",
    "fold", "fmt", "expand", "unexpand", "rev", "tac", "seq", "sleep", "wait", "id",
    "whoami", "hostname", "uname", "env", "printenv", "command",
})


def rule_hits(rule: Rule, forms: list[Forms]) -> bool:
    """Tell whether any form of any command matches ``rule`` (options as a set)."""
    if rule.specifier is None:
        return True
    pattern = command_pattern(rule.specifier, rule=rule.text)
    shaped = rule_shape(pattern)
    for form in forms:
        for argv in form.argvs:
            if match_argv(pattern, argv) is not None:
                return True
            if shaped is not None and hits(shaped[0], shape(argv)):
                return True
    return False


Globs = tuple[frozenset[str], frozenset[str]]
"""The words that are file name patterns, and those of them that may be options."""


def suspicion(forms: list[Forms], rules: PermissionRules, tool: str, *,
              path_rule: Rule | None = None,
              globs: Globs = (frozenset(), frozenset())) -> str | None:
    """Say why the command may do what a deny or ask rule forbids; None if it cannot.

    Args:
        path_rule: a ``Read(...)``/``Edit(...)`` deny rule, if any: hidden code may break
            it too.
        globs: the command's file name patterns (``_matcher``), which may become words a
            rule names.
    """
    named = [r for r in (*rules.deny, *rules.ask)
             if governs(r.tool, tool) and r.specifier is not None]
    if not named and path_rule is None:
        return None
    programs = {name for rule in named if (name := _program(rule))}
    first = (named[0] if named else path_rule or named[0]).text
    for form in forms:
        for opaque in form.opaque:
            if opaque.program is None or opaque.program in programs:
                return f"{opaque.reason}, so aimon cannot tell it stays outside rule {first}"
        for argv in form.argvs:
            hatches = [h for h in escape_hatches(argv) if not _unwrapped(argv, h[0])]
            if hatches:
                return f"{hatches[0][1]}, so aimon cannot tell it stays outside rule {first}"
            reason = _argv_suspicion(argv, named, programs) or _glob_suspicion(argv, named, globs)
            if reason is not None:
                return reason
    return None


def _glob_suspicion(argv: tuple[str, ...], named: list[Rule], globs: Globs) -> str | None:
    """Say which rule a pattern among ``argv`` may spell out when bash expands it."""
    patterns, options = globs
    if not patterns or not argv:
        return None
    command = shape(argv)
    for rule in named:
        shaped = rule_shape(command_pattern(rule.specifier or "", rule=rule.text))
        if shaped is None or shaped[0].program != command.program:
            continue
        for word in argv[1:]:
            spelled = _spelled(word, shaped[0], patterns, options)
            if spelled:
                return (f"`{word}` may expand to {spelled} (a file can be given that name), "
                        f"which rule {rule.text} is about")
    return None


def _spelled(word: str, rule: Shape, patterns: frozenset[str], options: frozenset[str]) -> str:
    if word not in patterns:
        return ""
    if word in options and rule.options:
        return f"`{sorted(rule.options)[0]}`"
    found = spelled_by(word, rule.positionals)
    return f"`{found}`" if found else ""


def _argv_suspicion(argv: tuple[str, ...], named: list[Rule], programs: set[str]) -> str | None:
    command = shape(argv)
    for rule in named:
        shaped = rule_shape(command_pattern(rule.specifier or "", rule=rule.text))
        if shaped is not None and touches(shaped[0], command):
            return f"`{' '.join(argv)[:80]}` may be what rule {rule.text} is about"
    base = command.program
    if not argv or base in _INERT or base in GENERIC_WRAPPERS or base in INTERPRETERS or (
        base in RUNNERS
    ):
        return None
    for word in argv[1:]:
        name = word.rsplit("/", 1)[-1]
        if name and any(fnmatch.fnmatchcase(p, name) or p == name for p in programs):
            return (f"`{base}` is given `{word}`, the program a deny or ask rule names; "
                    "it may run it or copy it under another name")
    return None


def _unwrapped(argv: tuple[str, ...], index: int) -> bool:
    """Tell whether the hatch at ``index`` is a git ``-c`` command already among the forms."""
    return argv[0].rsplit("/", 1)[-1] == "git" and git_config_value(argv, index) is not None


def _program(rule: Rule) -> str:
    match command_pattern(rule.specifier or "", rule=rule.text):
        case StemPattern(words=(), stem=stem):
            return stem
        case ExactPattern(words=words) | PrefixPattern(words=words) | StemPattern(words=words):
            return words[0].rsplit("/", 1)[-1]
        case _:
            return ""
