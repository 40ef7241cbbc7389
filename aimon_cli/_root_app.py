"""The root command's Typer app: every option of `aimon [options] [PROMPT]`, typed.

Each option's spellings, help and metavar come from `ROOT_OPTIONS` (`_args.py`), the table
the fast parser reads too. Imported only for the command lines the fast parser declines:
`--help`, mistakes and unusual spellings.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from aimon_cli._args import DESCRIPTION, EPILOG, OPTION_BY_DEST, OutputFormat, RootArgs


def _declared(dest: str) -> Any:
    """Return the typer.Option declared for `dest` in ROOT_OPTIONS."""
    option = OPTION_BY_DEST[dest]
    return typer.Option(*option.flags, help=option.help, metavar=option.metavar,
                        hidden=option.hidden, min=option.minimum)


def root_app(take: Callable[[RootArgs], None]) -> typer.Typer:
    """Return the root command's Typer app; running it hands the parsed RootArgs to `take`."""
    app = typer.Typer(add_completion=False, rich_markup_mode=None,
                      pretty_exceptions_enable=False, help=DESCRIPTION, epilog=EPILOG,
                      context_settings={"help_option_names": ["-h", "--help"]})

    @app.command(epilog=EPILOG)
    def aimon(
        prompt: Annotated[str | None, typer.Argument(help="what to ask the agent")] = None,
        print_mode: Annotated[bool, _declared("print_mode")] = False,
        output_format: Annotated[OutputFormat, _declared("output_format")] = OutputFormat.TEXT,
        resume: Annotated[str | None, _declared("resume")] = None,
        pick: Annotated[bool, _declared("pick")] = False,
        continue_last: Annotated[bool, _declared("continue_last")] = False,
        model: Annotated[str | None, _declared("model")] = None,
        provider: Annotated[str | None, _declared("provider")] = None,
        base_url: Annotated[str | None, _declared("base_url")] = None,
        agent: Annotated[str | None, _declared("agent")] = None,
        allowed_tools: Annotated[list[str] | None, _declared("allowed_tools")] = None,
        disallowed_tools: Annotated[list[str] | None, _declared("disallowed_tools")] = None,
        max_iterations: Annotated[int | None, _declared("max_iterations")] = None,
        permission_mode: Annotated[str | None, _declared("permission_mode")] = None,
        sandbox: Annotated[bool, _declared("sandbox")] = False,
        version: Annotated[bool, _declared("version")] = False,
        bg: Annotated[bool, _declared("bg")] = False,
        profile: Annotated[str | None, _declared("profile")] = None,
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
            permission_mode=permission_mode, sandbox=sandbox, version=version, bg=bg,
            profile=profile))

    return app
