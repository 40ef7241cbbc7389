"""The Typer app: `aimon [PROMPT]`, `aimon -p PROMPT`, and subcommands."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

import typer

from aimon_cli._setup import ModelOptions, RuntimeOptions, SetupError

root_app = typer.Typer(add_completion=False, rich_markup_mode=None)

SUBCOMMANDS = ("sessions",)


def _fail(message: str, code: int = 2) -> typer.Exit:
    sys.stderr.write(f"aimon: {message}\n")
    return typer.Exit(code)


@root_app.command(context_settings={"help_option_names": ["-h", "--help"]})
def aimon(
    prompt: Annotated[str | None, typer.Argument(help="What to ask the agent.")] = None,
    print_mode: Annotated[bool, typer.Option(
        "-p", "--print", help="Run one turn, print the answer and exit (reads stdin if piped)."
    )] = False,
    output_format: Annotated[str, typer.Option(
        "--output-format", help="Print mode output: text, json or stream-json."
    )] = "text",
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model name.")] = None,
    provider: Annotated[str | None, typer.Option(
        "--provider", help="anthropic or openai (any OpenAI-compatible server)."
    )] = None,
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="API base URL (Ollama, vLLM, OpenRouter, a proxy)."
    )] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Agent to run.")] = None,
    allowed_tools: Annotated[list[str] | None, typer.Option(
        "--allowed-tools", help='Rules to allow, e.g. "Edit,Write,Bash(git:*)".'
    )] = None,
    disallowed_tools: Annotated[list[str] | None, typer.Option(
        "--disallowed-tools", help='Rules to deny, e.g. "Bash(rm:*)".'
    )] = None,
    max_iterations: Annotated[int | None, typer.Option(
        "--max-iterations", min=1, help="Stop after this many model calls."
    )] = None,
    version: Annotated[bool, typer.Option("--version", help="Print the version.")] = False,
) -> None:
    """aimon: a coding agent in your terminal."""
    if version:
        from aimon_core import __version__

        typer.echo(f"aimon {__version__}")
        return
    if output_format not in ("text", "json", "stream-json"):
        raise _fail(f"--output-format must be text, json or stream-json, not {output_format!r}")
    if not print_mode:
        raise _fail("the interactive mode is not available in this build; use -p PROMPT")
    from aimon_cli._print import PrintJob, exit_code, read_prompt, run_print
    from aimon_cli._setup import build_runtime, make_tool_context
    from aimon_core.permission import PermissionRules, RuleError, print_mode_gate

    text = read_prompt(prompt, sys.stdin)
    if not text:
        raise _fail("no prompt: pass one after -p or pipe it on stdin")
    try:
        rules = PermissionRules.parse(
            allow=_split_rules(allowed_tools), deny=_split_rules(disallowed_tools)
        )
    except RuleError as exc:
        raise _fail(str(exc)) from None
    project_root = Path.cwd().resolve()
    try:
        runtime, notices = build_runtime(RuntimeOptions(
            project_root=project_root,
            model=ModelOptions(provider=provider, model=model, base_url=base_url),
            agent=agent,
            gate=print_mode_gate(rules, project_root=project_root),
        ))
    except SetupError as exc:
        raise _fail(str(exc)) from None
    for notice in notices:
        sys.stderr.write(f"aimon: {notice}\n")
    context = make_tool_context(project_root, agent_name=runtime.agent.name)
    job = PrintJob(prompt=text, output_format=output_format, max_iterations=max_iterations)

    async def go() -> int:
        try:
            result = await run_print(job, runtime, context, sys.stdout, sys.stderr)
        finally:
            await context.shell.close()
            await runtime.client.aclose()
        return exit_code(result)

    try:
        code = asyncio.run(go())
    except KeyboardInterrupt:
        sys.stderr.write("aimon: interrupted\n")
        code = 130
    raise typer.Exit(code)


def _split_rules(values: list[str] | None) -> list[str]:
    """Split rule flags on commas and spaces, never inside parentheses."""
    from aimon_core.agent import split_tool_list

    rules: list[str] = []
    for value in values or ():
        for chunk in split_tool_list(value, "--allowed-tools") or ():
            rules.extend(split_tool_list(chunk, "--allowed-tools") or ())
    return rules


def run(args: list[str]) -> None:
    """Dispatch to a subcommand app or the root command."""
    if args and args[0] in SUBCOMMANDS:
        from aimon_cli._subcommands import sessions_app

        sessions_app(args[1:], prog_name="aimon sessions")
        return
    root_app(args, prog_name="aimon")
