"""The root command's arguments: one table of options, a fast exact parser, and Typer.

`aimon` with no arguments — the REPL, by far the most common start — needs no parsing at all.
The usual command lines (`aimon -p PROMPT --model M --output-format json ...`) are parsed by
`parse_fast`, which follows click's rules exactly for the options of `ROOT_OPTIONS` and
declines anything else: importing Typer and parsing with it costs ~135 ms of CPU on its own,
~20-30 ms of an `aimon -p` run (pydantic, most of it, is imported by the SDKs anyway).
Everything it declines — `--help`, any mistake, an unknown option, an unusual spelling — goes
to the Typer app in `_root_app.py`, built from the same table, which prints help and errors.
`tests/cli/test_fast_args.py` checks that the two agree on a generated table of command lines.
`aimon sessions|skills|agents|mcp ...` are Typer sub-apps dispatched by their first word (a
click group cannot also take an optional PROMPT argument).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any

PICK = "__pick__"

DESCRIPTION = "aimon: a coding agent in your terminal."
EPILOG = """\
\b
examples:
  aimon                                   start a conversation in this project
  aimon "explain the build"               start with a first prompt
  aimon -p "list the TODOs"               one answer, printed (reads stdin if piped)
  aimon -p "/help"                        slash commands work in print mode too
  aimon -r                                pick a recent session to resume
\b
commands:
  aimon sessions list|show ID|delete ID   stored sessions
  aimon skills list [--json]              skills loaded, and from where
  aimon agents list [--json]              subagents loaded, and from where
  aimon workflow run NAME|list|runs|show RUN|resume RUN   workflows and their runs
  aimon mcp list|get|add|remove           MCP servers
  aimon --bg "PROMPT"                     run it in the background service
  aimon ps [--json]                       the service's sessions
  aimon attach ID                         the REPL on a running session
  aimon send ID "TEXT" [--key K]          a message to a session's inbox
  aimon stop ID                           interrupt a session's turn
  aimon serve [--stop|--status]           the background service
  aimon acp                               the Agent Client Protocol on stdio
"""


class OutputFormat(enum.Enum):
    """Print mode's output."""

    TEXT = "text"
    JSON = "json"
    STREAM_JSON = "stream-json"


OUTPUT_FORMATS = tuple(f.value for f in OutputFormat)


@dataclass(frozen=True, slots=True, kw_only=True)
class RootArgs:
    """What `aimon [options] [PROMPT]` was given."""

    prompt: str | None = None
    print_mode: bool = False
    output_format: str = "text"
    resume: str | None = None
    pick: bool = False
    continue_last: bool = False
    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    agent: str | None = None
    allowed_tools: tuple[str, ...] = ()
    disallowed_tools: tuple[str, ...] = ()
    max_iterations: int | None = None
    permission_mode: str | None = None
    sandbox: bool = False
    version: bool = False
    bg: bool = False
    profile: str | None = None


class Takes(enum.Enum):
    """What an option takes after its name."""

    NOTHING = "flag"  # a boolean flag
    TEXT = "text"  # one value; given twice, the last wins
    TEXTS = "texts"  # one value, repeatable; all are kept in order
    CHOICE = "choice"  # one of `choices`
    COUNT = "count"  # a whole number >= `minimum`


@dataclass(frozen=True, slots=True, kw_only=True)
class RootOption:
    """One option of `aimon [options] [PROMPT]`: the RootArgs field it sets and how."""

    dest: str
    flags: tuple[str, ...]
    takes: Takes
    help: str | None = None
    metavar: str | None = None
    hidden: bool = False
    choices: tuple[str, ...] = ()
    minimum: int | None = None


# The one declaration of the root command's options: the Typer app (`_root_app.py`) declares
# each from here, and `parse_fast` reads it.
ROOT_OPTIONS: tuple[RootOption, ...] = (
    RootOption(dest="print_mode", flags=("-p", "--print"), takes=Takes.NOTHING,
               help="run one turn, print the answer and exit (reads stdin if piped)"),
    RootOption(dest="output_format", flags=("--output-format",), takes=Takes.CHOICE,
               choices=OUTPUT_FORMATS, help="print mode output"),
    RootOption(dest="resume", flags=("-r", "--resume"), takes=Takes.TEXT, metavar="ID",
               help="resume a session by id (-r alone: pick from recent ones)"),
    RootOption(dest="pick", flags=("--pick",), takes=Takes.NOTHING, hidden=True),
    RootOption(dest="continue_last", flags=("-c", "--continue"), takes=Takes.NOTHING,
               help="continue the most recent session in this project"),
    RootOption(dest="model", flags=("-m", "--model"), takes=Takes.TEXT, help="model name"),
    RootOption(dest="provider", flags=("--provider",), takes=Takes.TEXT,
               help="anthropic or openai (any OpenAI-compatible server)"),
    RootOption(dest="base_url", flags=("--base-url",), takes=Takes.TEXT,
               help="API base URL (Ollama, vLLM, OpenRouter, a proxy)"),
    RootOption(dest="profile", flags=("--profile",), takes=Takes.TEXT, metavar="NAME",
               help="run with a stored account: its provider, base URL, model and key "
               "(aimon auth login NAME ...)"),
    RootOption(dest="agent", flags=("--agent",), takes=Takes.TEXT,
               help="agent to run (.aimon/agents/NAME.md, user agents, built-ins)"),
    RootOption(dest="allowed_tools", flags=("--allowed-tools",), takes=Takes.TEXTS,
               metavar="RULES", help='rules to allow, e.g. "Edit,Write,Bash(git:*)"'),
    RootOption(dest="disallowed_tools", flags=("--disallowed-tools",), takes=Takes.TEXTS,
               metavar="RULES", help='rules to deny, e.g. "Bash(rm:*)"'),
    RootOption(dest="max_iterations", flags=("--max-iterations",), takes=Takes.COUNT,
               minimum=1, metavar="N", help="stop after this many model calls"),
    RootOption(dest="permission_mode", flags=("--permission-mode",), takes=Takes.TEXT,
               metavar="MODE",
               help="default, acceptEdits (edits in the project allowed), plan (read-only) or "
               "bypassPermissions (everything but deny rules; refused as root unless "
               "AIMON_SANDBOX=1)"),
    RootOption(dest="sandbox", flags=("--sandbox",), takes=Takes.NOTHING,
               help="run the model's shell commands in the OS sandbox (bubblewrap) for this run"),
    RootOption(dest="bg", flags=("--bg",), takes=Takes.NOTHING,
               help="run the prompt in the background service and print the session's id "
               "(with -p: unattended, what would ask is refused)"),
    RootOption(dest="version", flags=("-v", "--version"), takes=Takes.NOTHING,
               help="print the version"),
)
OPTION_BY_DEST = {option.dest: option for option in ROOT_OPTIONS}
_BY_FLAG = {flag: option for option in ROOT_OPTIONS for flag in option.flags}


class ArgsError(Exception):
    """The command line is wrong; the message says how."""


def _pick_alone(args: list[str]) -> list[str]:
    """Spell `-r` / `--resume` given without an id as `--pick` (click has no optional values)."""
    out: list[str] = []
    for index, arg in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) else None
        if arg in ("-r", "--resume") and (following is None or following.startswith("-")):
            out.append("--pick")
        else:
            out.append(arg)
    return out


class _DeclinedError(Exception):
    """The fast parser does not take this command line: Typer will."""


def _converted(option: RootOption, value: str) -> object:
    """Return an option's value as click would convert it; raise _DeclinedError if unsure."""
    if value.startswith("-"):
        raise _DeclinedError  # click would take it as the value; rare enough to leave to Typer
    match option.takes:
        case Takes.CHOICE if value not in option.choices:
            raise _DeclinedError
        case Takes.COUNT:
            if not (value.isascii() and value.isdigit()):
                raise _DeclinedError
            number = int(value)
            if option.minimum is not None and number < option.minimum:
                raise _DeclinedError
            return number
    return value


def _set(values: dict[str, Any], option: RootOption, value: str | None) -> None:
    if option.takes is Takes.NOTHING:
        values[option.dest] = True
    elif value is None:
        raise _DeclinedError  # a value was needed and none is left: Typer says so
    elif option.takes is Takes.TEXTS:
        values[option.dest] = (*values.get(option.dest, ()), _converted(option, value))
    else:
        values[option.dest] = _converted(option, value)


def _option(arg: str, rest: list[str], values: dict[str, Any]) -> None:
    """Take one option argument (and its value from `rest`, as click does)."""
    name, equals, attached = arg.partition("=")
    long_option = _BY_FLAG.get(name) if name.startswith("--") else None
    if long_option is not None:
        if long_option.takes is Takes.NOTHING:
            if equals:
                raise _DeclinedError  # "does not take a value": Typer's message
            _set(values, long_option, None)
        else:
            _set(values, long_option, attached if equals else (rest.pop(0) if rest else None))
        return
    if arg.startswith("--") or equals:
        raise _DeclinedError
    for index in range(1, len(arg)):  # -pc: flags in a cluster; -mNAME: an attached value
        option = _BY_FLAG.get("-" + arg[index])
        if option is None:
            raise _DeclinedError
        if option.takes is Takes.NOTHING:
            _set(values, option, None)
            continue
        attached = arg[index + 1:]
        _set(values, option, attached or (rest.pop(0) if rest else None))
        return


def parse_fast(args: list[str]) -> RootArgs | None:
    """Parse the root command line without Typer; None: leave it to Typer.

    Returns what Typer would return for every command line it takes (`args` already through
    `_pick_alone`); declines help, errors and anything unusual.
    """
    values: dict[str, Any] = {}
    positional: list[str] = []
    rest = list(args)
    try:
        while rest:
            arg = rest.pop(0)
            if arg == "--":
                positional += rest
                break
            if arg.startswith("-") and len(arg) > 1:
                _option(arg, rest, values)
            else:
                positional.append(arg)
    except _DeclinedError:
        return None
    if len(positional) > 1 or (values.get("continue_last")
                               and ("resume" in values or values.get("pick"))):
        return None  # Typer's errors
    return replace(RootArgs(prompt=positional[0] if positional else None), **values)


def parse_root(args: list[str]) -> RootArgs | int:
    """Parse the root command line; return RootArgs, or the exit status when it printed help.

    Raises ArgsError for a mistake (the caller says it and exits 2).
    """
    if not args:
        return RootArgs()  # `aimon` alone: nothing to parse, no Typer import
    spelled = _pick_alone(args)
    fast = parse_fast(spelled)
    return fast if fast is not None else parse_with_typer(spelled)


def parse_with_typer(args: list[str]) -> RootArgs | int:
    """Parse with the root command's Typer app (help, errors, every spelling click takes)."""
    import typer
    from typer.exceptions import TyperException

    from aimon_cli._root_app import root_app

    parsed: list[RootArgs] = []
    try:
        result: Any = root_app(parsed.append)(args, prog_name="aimon", standalone_mode=False)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except TyperException as exc:  # click's usage errors, vendored by Typer
        format_message = getattr(exc, "format_message", None)
        raise ArgsError(format_message() if callable(format_message) else str(exc)) from None
    if not parsed:  # --help: click printed it and returned
        return int(result or 0)
    return parsed[0]
