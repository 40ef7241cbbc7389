"""The root command's arguments, parsed with argparse.

Typer costs 0.15-0.3 s to import on the machines aimon is measured on, more than half of the
300 ms budget for the first REPL prompt, so the root command (`aimon`, `aimon -p`, `--resume`)
is parsed here with the standard library; `aimon sessions ...` stays a Typer app.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

OUTPUT_FORMATS = ("text", "json", "stream-json")
PICK = "__pick__"

DESCRIPTION = "aimon: a coding agent in your terminal."
EPILOG = """\
examples:
  aimon                                   start a conversation in this project
  aimon "explain the build"               start with a first prompt
  aimon -p "list the TODOs"               one answer, printed (reads stdin if piped)
  aimon -r                                pick a recent session to resume
  aimon sessions list|show ID|delete ID   manage stored sessions
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class RootArgs:
    """What `aimon [options] [PROMPT]` was given."""

    prompt: str | None
    print_mode: bool
    output_format: str
    resume: str | None
    pick: bool
    continue_last: bool
    model: str | None
    provider: str | None
    base_url: str | None
    agent: str | None
    allowed_tools: tuple[str, ...]
    disallowed_tools: tuple[str, ...]
    max_iterations: int | None
    permission_mode: str | None
    version: bool


class ArgsError(Exception):
    """The command line is wrong; the message says how."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise ArgsError(message)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def build_parser() -> argparse.ArgumentParser:
    """Return the parser for the root command."""
    parser = _Parser(prog="aimon", description=DESCRIPTION, epilog=EPILOG,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("prompt", nargs="?", help="what to ask the agent")
    add("-p", "--print", dest="print_mode", action="store_true",
        help="run one turn, print the answer and exit (reads stdin if piped)")
    add("--output-format", choices=OUTPUT_FORMATS, default="text",
        help="print mode output (default: text)")
    add("-r", "--resume", metavar="ID", nargs="?", const=PICK,
        help="resume a session by id (-r alone: pick from recent ones)")
    add("-c", "--continue", dest="continue_last", action="store_true",
        help="continue the most recent session in this project")
    add("-m", "--model", help="model name")
    add("--provider", help="anthropic or openai (any OpenAI-compatible server)")
    add("--base-url", help="API base URL (Ollama, vLLM, OpenRouter, a proxy)")
    add("--agent", help="agent to run (.aimon/agents/NAME.md, user agents, built-ins)")
    add("--allowed-tools", action="append", default=[], metavar="RULES",
        help='rules to allow, e.g. "Edit,Write,Bash(git:*)"')
    add("--disallowed-tools", action="append", default=[], metavar="RULES",
        help='rules to deny, e.g. "Bash(rm:*)"')
    add("--max-iterations", type=_positive, metavar="N",
        help="stop after this many model calls")
    add("--permission-mode", metavar="MODE",
        help="default, acceptEdits (edits in the project allowed), plan (read-only) or "
        "bypassPermissions (everything but deny rules; refused as root unless AIMON_SANDBOX=1)")
    add("-v", "--version", action="store_true", help="print the version")
    return parser


def parse_root(args: list[str]) -> RootArgs:
    """Parse the root command line; ArgsError explains a mistake."""
    space = build_parser().parse_args(args)
    resume = space.resume
    if resume is not None and space.continue_last:
        raise ArgsError("use either --resume or --continue, not both")
    return RootArgs(
        prompt=space.prompt,
        print_mode=space.print_mode,
        output_format=space.output_format,
        resume=None if resume == PICK else resume,
        pick=resume == PICK,
        continue_last=space.continue_last,
        model=space.model,
        provider=space.provider,
        base_url=space.base_url,
        agent=space.agent,
        allowed_tools=tuple(space.allowed_tools),
        disallowed_tools=tuple(space.disallowed_tools),
        max_iterations=space.max_iterations,
        permission_mode=space.permission_mode,
        version=space.version,
    )
