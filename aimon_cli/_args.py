"""The root command's arguments: a Typer app (`aimon [options] [PROMPT]`).

`aimon` with no arguments — the REPL, by far the most common start — needs no parsing at all
and skips importing Typer (40-55 ms here): the first prompt is painted first. Any other command
line is parsed by the Typer app below; `aimon sessions|skills|agents|mcp ...` are Typer sub-apps
dispatched by their first word (a click group cannot also take an optional PROMPT argument).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
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
  aimon mcp list|get|add|remove           MCP servers
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
    version: bool = False


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


def parse_root(args: list[str]) -> RootArgs | int:
    """Parse the root command line; return RootArgs, or the exit status when it printed help.

    Raises ArgsError for a mistake (the caller says it and exits 2).
    """
    if not args:
        return RootArgs()  # `aimon` alone: nothing to parse, no Typer import
    import typer
    from typer.exceptions import TyperException

    from aimon_cli._root_app import root_app

    parsed: list[RootArgs] = []
    try:
        result: Any = root_app(parsed.append)(_pick_alone(args), prog_name="aimon",
                                              standalone_mode=False)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except TyperException as exc:  # click's usage errors, vendored by Typer
        format_message = getattr(exc, "format_message", None)
        raise ArgsError(format_message() if callable(format_message) else str(exc)) from None
    if not parsed:  # --help: click printed it and returned
        return int(result or 0)
    return parsed[0]
