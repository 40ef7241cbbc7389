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
substitutions are marked ``dynamic`` by the parser and ask. File names a program reads from
stdin or from a file (``xargs``, ``--files0-from``, ``tar -T``) are words the rules never see:
``names_from_input`` says so.
"""

from __future__ import annotations

import fnmatch

from aimon_core.permission._gitcmd import GIT_SUBCOMMANDS, git_subcommand_index
from aimon_core.permission._optspec import OptionSpec, Refused, Role, parse_args, resolve_long
from aimon_core.permission._programs import HATCH_ONLY, PROGRAMS
from aimon_core.permission._readonly import OPERAND_HATCHES, has_hatches
from aimon_core.permission._syntax import SimpleCommand
from aimon_core.permission._unwrap import wrapped_command

# Options whose value names a file holding file names, by program ("" for any program).
_NAME_LISTS = frozenset({
    "--files0-from", "--files-from", "--pathspec-from-file", "--stdin-paths", "--arg-file",
})
_SHORT_NAME_LISTS = {"tar": "T", "file": "f", "zip": "@"}
# Programs that read file names from stdin whatever their options.
_STDIN_NAMES = frozenset({"cpio", "xargs"})
# Commands xargs may run on names it reads that print no file's contents.
_NAMES_ONLY = frozenset({
    "echo", "printf", "ls", "stat", "du", "basename", "dirname", "realpath", "readlink", "test",
    "[", "true", "false", "pwd", "mkdir", "rmdir", "touch", "rm",
})


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


def names_from_input(argv: tuple[str, ...]) -> str | None:
    """Say which file names ``argv`` reads from stdin or a file, unseen by any rule; or None."""
    if not argv:
        return None
    program = argv[0].rsplit("/", 1)[-1]
    if program in _STDIN_NAMES:
        inner = wrapped_command(argv) if program == "xargs" else ()
        if inner and inner[0].rsplit("/", 1)[-1] in _NAMES_ONLY:
            return None
        return _unseen(program, "reads file names from its input")
    if program == "find" and "-files0-from" in argv:
        return _unseen(program, "reads the starting points from a file")
    spec = _spec_of(program, argv)
    letters = _SHORT_NAME_LISTS.get(program, "")
    for index, arg in enumerate(argv[1:], 1):
        if arg == "--":
            break
        if arg.startswith("--") and _lists_names(spec, arg.partition("=")[0]):
            return _unseen(program, f"reads file names from `{arg}`")
        short = arg.startswith("-") and not arg.startswith("--")
        old_style = index == 1 and program == "tar"  # `tar cTf list`
        if (short or old_style) and set(arg.lstrip("-")) & set(letters):
            return _unseen(program, f"reads file names from the file `{arg}` names")
    return None


def _unseen(program: str, what: str) -> str:
    return (f"`{program}` {what}, which aimon cannot check against path rules and credential "
            "files")


def _spec_of(program: str, argv: tuple[str, ...]) -> OptionSpec | None:
    if program == "git":
        index = git_subcommand_index(argv)
        return GIT_SUBCOMMANDS.get(argv[index]) if index < len(argv) else None
    entry = PROGRAMS.get(program)
    return entry.spec if entry is not None and not entry.words else HATCH_ONLY.get(program)


def _lists_names(spec: OptionSpec | None, name: str) -> bool:
    """Tell whether the long option ``name`` (maybe abbreviated) reads a list of file names."""
    if len(name) <= 2:
        return False
    known = resolve_long(spec, name) if spec is not None else ()
    # A program aimon has no spec for takes any prefix: every list option it may stand for.
    candidates = known or tuple(o for o in _NAME_LISTS if o.startswith(name))
    return any(c in _NAME_LISTS for c in candidates)


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
