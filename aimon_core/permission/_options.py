"""Spell-insensitive matching of Bash deny and ask rules: options as sets, not strings.

``Bash(rm -rf:*)`` is about removing recursively and by force, however the options are
spelled: ``rm -fr``, ``rm -r -f x``, ``rm --force --recursive``, ``rm -Rf``, ``rm --rec -f``
(GNU accepts unambiguous prefixes of long options). Both the rule's words and the command
are split into a program, a set of canonical options and the positional words in order.

- A rule *hits* (same verdict as the rule) when the programs are equal, the rule's options
  are a subset of the command's and the rule's positional words start the command's.
- A rule *touches* (ASK) when the rule's positional words only appear in order somewhere
  among the command's (an option value we could not tell from a positional may sit between
  them: ``npm --prefix x install``).

This is used only to move a verdict away from ALLOW; allow rules stay literal.
"""

from __future__ import annotations

from dataclasses import dataclass

from aimon_core.permission._rules import (
    AnyPattern,
    CommandPattern,
    ExactPattern,
    PrefixPattern,
    StemPattern,
)
from aimon_core.permission._unwrap import GIT_COMMANDS


@dataclass(frozen=True, slots=True, kw_only=True)
class _Table:
    """What one program's options mean: aliases to canonical names and value-taking ones."""

    aliases: dict[str, tuple[str, ...]]
    with_value: frozenset[str] = frozenset()


_RM = _Table(aliases={
    "-R": ("-r",), "--recursive": ("-r",), "--force": ("-f",), "--dir": ("-d",),
    "--verbose": ("-v",), "--interactive": ("-i",),
})
_CP = _Table(
    aliases={
        "-R": ("-r",), "--recursive": ("-r",), "--force": ("-f",), "--verbose": ("-v",),
        # -a is -dR --preserve=all: it copies recursively too.
        "-a": ("-a", "-r", "-d", "-p"), "--archive": ("-a", "-r", "-d", "-p"),
        "--no-clobber": ("-n",), "--interactive": ("-i",), "--link": ("-l",),
        "--symbolic-link": ("-s",), "--update": ("-u",), "--preserve": ("-p",),
        "--target-directory": ("-t",), "--suffix": ("-S",),
    },
    with_value=frozenset({"-t", "-S", "--target-directory", "--suffix"}),
)
_MV = _Table(
    aliases={
        "--force": ("-f",), "--interactive": ("-i",), "--no-clobber": ("-n",),
        "--verbose": ("-v",), "--update": ("-u",), "--target-directory": ("-t",),
        "--suffix": ("-S",),
    },
    with_value=frozenset({"-t", "-S", "--target-directory", "--suffix"}),
)
_CHMOD = _Table(
    aliases={
        "--recursive": ("-R",), "--verbose": ("-v",), "--changes": ("-c",),
        "--silent": ("-f",), "--quiet": ("-f",),
    },
    with_value=frozenset({"--reference", "--from"}),
)
_GIT = _Table(
    aliases={
        "--force": ("-f",), "--force-with-lease": ("-f",), "--force-if-includes": ("-f",),
        "--delete": ("-d",), "-D": ("-d", "-f"), "-M": ("-m", "-f"), "--move": ("-m",),
        "--all": ("-a",), "--amend": ("--amend",), "--hard": ("--hard",), "--mirror": ("--mirror",),
        "--tags": ("--tags",), "--no-verify": ("-n",), "--quiet": ("-q",), "--verbose": ("-v",),
        "--set-upstream": ("-u",), "--dry-run": ("-n",), "--message": ("-m",),
        "--file": ("-F",), "--push-option": ("-o",), "--exclude": ("-e",),
    },
    with_value=frozenset({
        "-m", "-F", "-C", "-c", "-o", "-e", "--message", "--file", "--author", "--date",
        "--push-option", "--repo", "--exclude", "--reuse-message", "--reedit-message",
    }),
)
_TABLES = {
    "rm": _RM, "cp": _CP, "mv": _MV, "chmod": _CHMOD, "chown": _CHMOD, "chgrp": _CHMOD,
    "git": _GIT,
}
_NO_TABLE = _Table(aliases={})


@dataclass(frozen=True, slots=True, kw_only=True)
class Shape:
    """A command as a program, its canonical option set and positional words in order."""

    program: str
    options: frozenset[str]
    positionals: tuple[str, ...]


def shape(argv: tuple[str, ...]) -> Shape:
    """Split ``argv`` into its program, canonical options and positional words."""
    program = argv[0].rsplit("/", 1)[-1] if argv else ""
    table = _TABLES.get(program, _NO_TABLE)
    options: set[str] = set()
    positionals: list[str] = []
    words = iter(argv[1:])
    for word in words:
        if word == "--":
            positionals.extend(words)
            break
        if word.startswith("--") and len(word) > 2:
            name, eq, _ = word.partition("=")
            options.update(_long(name, table))
            if not eq and name in table.with_value:
                next(words, None)
        elif word.startswith("-") and len(word) > 1 and not _is_number(word):
            if _short_cluster(word, table, options):
                next(words, None)
        elif program == "git" and word.startswith("+") and len(word) > 1:
            # `git push origin +main` force-pushes main.
            options.add("-f")
            positionals.append(word[1:])
        else:
            positionals.append(word)
    return Shape(program=program, options=frozenset(options), positionals=tuple(positionals))


def _is_number(word: str) -> bool:
    return word[1:].isdigit()


def _long(name: str, table: _Table) -> tuple[str, ...]:
    if name in table.aliases:
        return table.aliases[name]
    # GNU getopt takes any unambiguous prefix; for a deny rule every candidate counts.
    matches = [a for a in table.aliases if a.startswith("--") and a.startswith(name)]
    if len(name) > 3 and matches:
        return tuple(c for m in matches for c in table.aliases[m])
    return (name,)


def _short_cluster(word: str, table: _Table, options: set[str]) -> bool:
    """Add each letter of ``-abc``; return True when the next word is the last one's value."""
    for position, letter in enumerate(word[1:], 1):
        option = "-" + letter
        options.update(table.aliases.get(option, (option,)))
        if option in table.with_value:
            return position == len(word) - 1
    return False


def rule_shape(pattern: CommandPattern) -> tuple[Shape, bool] | None:
    """Return the shape of a rule's words and whether the rule allows more words after them."""
    match pattern:
        case AnyPattern():
            return None
        case ExactPattern(words=words):
            return shape(words), False
        case PrefixPattern(words=words):
            return shape(words), True
        case StemPattern(words=words, stem=stem):
            # `rm -r*` still names option -r; a partial positional word is compared literally.
            return (shape((*words, stem)), True) if words and stem.startswith("-") else None


def hits(rule: Shape, command: Shape) -> bool:
    """Tell whether ``command`` is ``rule`` with options reordered or respelled."""
    return (
        bool(rule.program)
        and rule.program == command.program
        and rule.options <= command.options
        and command.positionals[: len(rule.positionals)] == rule.positionals
    )


def touches(rule: Shape, command: Shape) -> bool:
    """Tell whether ``command`` may be ``rule`` with option values we cannot tell apart."""
    if not rule.program or rule.program != command.program or not rule.options <= command.options:
        return False
    if rule.program == "git" and rule.positionals and command.positionals and (
        command.positionals[0] in GIT_COMMANDS
    ):
        # A known sub-command is not an option's value: `git stash push` is no `git push`.
        return command.positionals[0] == rule.positionals[0] and hits(rule, command)
    rest = iter(command.positionals)
    return all(any(word == seen for seen in rest) for word in rule.positionals)
