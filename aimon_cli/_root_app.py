"""The root command's Typer app: every option of `aimon [options] [PROMPT]`, typed.

Imported only when there is a command line to parse (`aimon` alone skips it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer

from aimon_cli._args import DESCRIPTION, EPILOG, OutputFormat, RootArgs


def root_app(take: Callable[[RootArgs], None]) -> typer.Typer:
    """Return the root command's Typer app; running it hands the parsed RootArgs to `take`."""
    app = typer.Typer(add_completion=False, rich_markup_mode=None,
                      pretty_exceptions_enable=False, help=DESCRIPTION, epilog=EPILOG,
                      context_settings={"help_option_names": ["-h", "--help"]})

    @app.command(epilog=EPILOG)
    def aimon(
        prompt: Annotated[str | None, typer.Argument(help="what to ask the agent")] = None,
        print_mode: Annotated[bool, typer.Option(
            "-p", "--print", help="run one turn, print the answer and exit (reads stdin if "
            "piped)")] = False,
        output_format: Annotated[OutputFormat, typer.Option(
            "--output-format", help="print mode output")] = OutputFormat.TEXT,
        resume: Annotated[str | None, typer.Option(
            "-r", "--resume", metavar="ID",
            help="resume a session by id (-r alone: pick from recent ones)")] = None,
        pick: Annotated[bool, typer.Option("--pick", hidden=True)] = False,
        continue_last: Annotated[bool, typer.Option(
            "-c", "--continue", help="continue the most recent session in this project")] = False,
        model: Annotated[str | None, typer.Option("-m", "--model", help="model name")] = None,
        provider: Annotated[str | None, typer.Option(
            "--provider", help="anthropic or openai (any OpenAI-compatible server)")] = None,
        base_url: Annotated[str | None, typer.Option(
            "--base-url", help="API base URL (Ollama, vLLM, OpenRouter, a proxy)")] = None,
        agent: Annotated[str | None, typer.Option(
            "--agent", help="agent to run (.aimon/agents/NAME.md, user agents, built-ins)")
        ] = None,
        allowed_tools: Annotated[list[str] | None, typer.Option(
            "--allowed-tools", metavar="RULES",
            help='rules to allow, e.g. "Edit,Write,Bash(git:*)"')] = None,
        disallowed_tools: Annotated[list[str] | None, typer.Option(
            "--disallowed-tools", metavar="RULES", help='rules to deny, e.g. "Bash(rm:*)"')
        ] = None,
        max_iterations: Annotated[int | None, typer.Option(
            "--max-iterations", metavar="N", min=1,
            help="stop after this many model calls")] = None,
        permission_mode: Annotated[str | None, typer.Option(
            "--permission-mode", metavar="MODE",
            help="default, acceptEdits (edits in the project allowed), plan (read-only) or "
            "bypassPermissions (everything but deny rules; refused as root unless "
            "AIMON_SANDBOX=1)")] = None,
        version: Annotated[bool, typer.Option("-v", "--version",
                                              help="print the version")] = False,
    ) -> None:
        """aimon: a coding agent in your terminal."""
        if (resume is not None or pick) and continue_last:
            raise typer.BadParameter("use either --resume or --continue, not both")
        take(RootArgs(
            prompt=prompt, print_mode=print_mode, output_format=output_format.value,
            resume=resume, pick=pick, continue_last=continue_last, model=model,
            provider=provider, base_url=base_url, agent=agent,
            allowed_tools=tuple(allowed_tools or ()),
            disallowed_tools=tuple(disallowed_tools or ()), max_iterations=max_iterations,
            permission_mode=permission_mode, version=version))

    return app
