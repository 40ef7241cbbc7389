"""What bash makes of a command's words at run time, and whether the command holds for all of it.

A file name pattern (an unquoted ``*``, ``?``, ``[...]``: ``SimpleCommand.globs``) becomes any
number of words, each the name of a file in the folder when the command runs; a file can be
made between aimon's check and the run, so what matches now proves nothing. A name may start
with ``-``: ``sort *`` in a folder holding a file named ``--output=x`` writes ``x``, and
``git grep foo *`` next to ``-Otouch x`` runs ``touch``. Whether a pattern matters is decided
by its place, never by the files there now:

- where the program still reads options, a pattern whose words may start with ``-``
  (``option_globs``: its first character is a pattern, or it varies an option's name) may be
  any option; after the ``--`` that ends them, or led by a literal such as ``./`` or ``src/``,
  it is operands only;
- a pattern as an option's value may spill extra words after it (``-e *``);
- operands may be many: a program that takes a bounded number of them (``uniq IN OUT``,
  ``date``) is not read-only with one.

Brace expansion, ``~+``/``~-``, ``$'...'`` with escapes and parameter, arithmetic and command
substitutions are marked ``dynamic`` by the parser and ask.
"""

from __future__ import annotations

import fnmatch

from aimon_core.permission._gitcmd import GIT_SUBCOMMANDS, git_subcommand_index
from aimon_core.permission._optspec import OptionSpec, Refused, Role, parse_args
from aimon_core.permission._programs import PROGRAMS
from aimon_core.permission._readonly import OPERAND_HATCHES, has_hatches
from aimon_core.permission._syntax import SimpleCommand


def glob_problem(simple: SimpleCommand) -> str | None:
    """Say why a pattern may make a read-only-looking ``simple`` do more; None if it cannot."""
    if not simple.globs:
        return None
    argv = simple.argv
    if argv[0] == "git":
        index = git_subcommand_index(argv)
        early = [i for i in sorted(simple.globs) if i <= index]
        if early:
            return _may_be_option(argv[early[0]])
        spec = GIT_SUBCOMMANDS.get(argv[index]) if index < len(argv) else None
        return _placed(spec, simple, index + 1) if spec is not None else None
    entry = PROGRAMS.get(argv[0])
    if entry is None:
        options = sorted(simple.option_globs)
        return _may_be_option(argv[options[0]]) if options else None
    if entry.any_args:
        return None
    if entry.words:
        options = sorted(simple.option_globs)
        return _may_be_option(argv[options[0]]) if options else None
    return _placed(entry.spec, simple, 1)


def glob_hatch(simple: SimpleCommand, start: int) -> str | None:
    """Say why a pattern at or after ``start`` may bring an escape hatch into ``simple``.

    An allow rule such as ``Bash(git grep:*)`` covers any words but the program's escape
    hatches; a pattern that may become an option brings any of them, whatever its place (a
    file named like one is the only price). Where operands can be hatches (a sed script,
    uniq's output file), any pattern may.
    """
    program = simple.argv[0].rsplit("/", 1)[-1]
    found = sorted(i for i in simple.globs if i >= start)
    if not found or not has_hatches(program):
        return None
    if program in OPERAND_HATCHES or (program == "tar" and found[0] == 1):  # `tar c*f x`
        return (f"`{simple.argv[found[0]]}` may expand to any number of file names, and "
                f"`{program}` operands can run programs or write files")
    options = [i for i in found if i in simple.option_globs]
    return _may_be_option(simple.argv[options[0]]) if options else None


def spelled_by(pattern: str, words: tuple[str, ...]) -> str:
    """Return the first of ``words`` a file name matching ``pattern`` could be ("" if none)."""
    # Bash takes `[^...]` as `[!...]`; fnmatch would read the `^` literally.
    normal = pattern.replace("[^", "[!")
    return next((w for w in words if fnmatch.fnmatchcase(w, normal)), "")


def _placed(spec: OptionSpec, simple: SimpleCommand, first: int) -> str | None:
    """Judge each pattern of ``simple`` by the role its word has in the program's arguments."""
    parsed = parse_args(spec, simple.argv[first:])
    if isinstance(parsed, Refused):
        return None  # not read-only as written already
    for index in sorted(simple.globs):
        word = simple.argv[index]
        match parsed.roles[index - first]:
            case Role.VALUE:
                return (f"`{word}` may expand to several words, and those after the first "
                        "would no longer be this option's value")
            case Role.OPTION | Role.OPERAND if index in simple.option_globs:
                return _may_be_option(word)
            case Role.OPERAND | Role.LAST if spec.max_operands is not None:
                return (f"`{word}` may expand to more operands than a read-only use of "
                        f"`{simple.argv[0]}` takes")
            case _:
                pass
    return None


def _may_be_option(word: str) -> str:
    return (f"`{word}` may expand to the name of a file that reads as an option (a file named "
            "`--output=x` or `-Otouch x` can be planted); write `./` before it, or put it "
            "after `--`")
