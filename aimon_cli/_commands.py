"""The Typer app: `aimon [PROMPT]`, `aimon -p PROMPT`, `--resume`, and `aimon sessions`."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from aimon_cli._setup import ModelOptions, RuntimeOptions, SetupError

if TYPE_CHECKING:
    from aimon_core.permission import Approver
    from aimon_core.session import LiveSession, SessionStore

root_app = typer.Typer(add_completion=False, rich_markup_mode=None,
                       pretty_exceptions_show_locals=False)

SUBCOMMANDS = ("sessions",)
_PICK = "__pick__"


def _fail(message: str, code: int = 2) -> typer.Exit:
    sys.stderr.write(f"aimon: {message}\n")
    return typer.Exit(code)


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """What the command line asked for, after validation."""

    project_root: Path
    runtime: RuntimeOptions
    resume: str | None
    pick: bool
    continue_last: bool


@root_app.command(context_settings={"help_option_names": ["-h", "--help"]})
def aimon(
    prompt: Annotated[str | None, typer.Argument(help="What to ask the agent.")] = None,
    print_mode: Annotated[bool, typer.Option(
        "-p", "--print", help="Run one turn, print the answer and exit (reads stdin if piped)."
    )] = False,
    output_format: Annotated[str, typer.Option(
        "--output-format", help="Print mode output: text, json or stream-json."
    )] = "text",
    resume: Annotated[str | None, typer.Option(
        "--resume", "-r", help="Resume a session by id (-r alone: pick from recent ones)."
    )] = None,
    continue_last: Annotated[bool, typer.Option(
        "--continue", "-c", help="Continue the most recent session in this project."
    )] = False,
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
    permission_mode: Annotated[str | None, typer.Option(
        "--permission-mode",
        help="default, acceptEdits (edits in the project allowed), plan (read-only) or "
        "bypassPermissions (everything but deny rules; refused as root unless AIMON_SANDBOX=1).",
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
    if resume is not None and continue_last:
        raise _fail("use either --resume or --continue, not both")
    project_root = Path.cwd().resolve()
    launch = Launch(
        project_root=project_root,
        runtime=RuntimeOptions(
            project_root=project_root,
            model=ModelOptions(provider=provider, model=model, base_url=base_url),
            agent=agent,
            allowed=tuple(_split_rules(allowed_tools)),
            disallowed=tuple(_split_rules(disallowed_tools)),
            permission_mode=permission_mode,
        ),
        resume=None if resume == _PICK else resume,
        pick=resume == _PICK,
        continue_last=continue_last,
    )
    if print_mode:
        code = _print_mode(launch, prompt, output_format, max_iterations)
    else:
        code = _interactive(launch, prompt)
    raise typer.Exit(code)


def _split_rules(values: list[str] | None) -> list[str]:
    """Split rule flags on commas and spaces, never inside parentheses."""
    from aimon_core.agent import split_tool_list

    rules: list[str] = []
    for value in values or ():
        for chunk in split_tool_list(value, "--allowed-tools") or ():
            rules.extend(split_tool_list(chunk, "--allowed-tools") or ())
    return rules


def _target_session(launch: Launch, store: SessionStore) -> str | None:
    """Return the session to resume (None: a new one); raise on a bad choice."""
    from aimon_cli._sessions_cli import most_recent

    if launch.continue_last:
        last = most_recent(store, launch.project_root)
        if last is None:
            raise _fail("no session to continue in this project; start one with: aimon", 1)
        return str(last.id)
    return launch.resume


def _with_session_agent(launch: Launch, store: SessionStore, session_id: str | None) -> Launch:
    """Resume a session with the agent it was made with, unless --agent says otherwise."""
    from dataclasses import replace

    from aimon_cli._sessions_cli import agent_of_session

    if session_id is None or launch.runtime.agent is not None:
        return launch
    agent = agent_of_session(store, session_id)
    return replace(launch, runtime=replace(launch.runtime, agent=agent))


async def _open_live(launch: Launch, store: SessionStore, session_id: str | None,
                     notices: list[str], *, approve: Approver | None = None,
                     on_event: Callable[[object], None] | None = None) -> LiveSession:
    """Load settings, build the runtime (imports the SDK, off the event loop), open the session."""
    from aimon_cli._setup import (
        attach_policy,
        build_runtime,
        load_project_settings,
        make_tool_context,
    )
    from aimon_core.session import LiveSession

    launch = _with_session_agent(launch, store, session_id)
    settings = await asyncio.to_thread(load_project_settings, launch.runtime)
    if settings.pending_trust is not None:
        notices.append("this folder's settings are not trusted yet, so these are held back: "
                       + "; ".join(settings.pending_trust.what)
                       + ". Run aimon interactively here once to trust them.")
    assembly = await asyncio.to_thread(build_runtime, launch.runtime, settings,
                                       approve=approve, on_event=on_event)
    notices.extend(assembly.notices)
    context = make_tool_context(launch.project_root, agent_name=assembly.runtime.agent.name,
                                env=settings.settings.env)
    live = await LiveSession.open(assembly.runtime, store, context, session_id=session_id)
    attach_policy(assembly.policy, live)
    return live


def _print_mode(launch: Launch, prompt: str | None, output_format: str,
                max_iterations: int | None) -> int:
    from aimon_cli._print import PrintJob, exit_code, read_prompt, run_print
    from aimon_cli._sessions_cli import default_store
    from aimon_core.session import SessionError

    if launch.pick:
        raise _fail("-r without a session id needs the interactive mode; pass the id with -p")
    text = read_prompt(prompt, sys.stdin)
    if not text:
        raise _fail("no prompt: pass one after -p or pipe it on stdin")
    store = default_store()
    session_id = _target_session(launch, store)
    job = PrintJob(prompt=text, output_format=output_format, max_iterations=max_iterations)

    async def go() -> int:
        notices: list[str] = []
        live = await _open_live(launch, store, session_id, notices)
        for notice in notices:
            sys.stderr.write(f"aimon: {notice}\n")
        try:
            result = await run_print(job, live, sys.stdout, sys.stderr)
        finally:
            await live.close()
            await live.runtime.client.aclose()
        return exit_code(result)

    try:
        return asyncio.run(go())
    except (SetupError, SessionError) as exc:
        raise _fail(str(exc), 2 if isinstance(exc, SetupError) else 1) from None
    except KeyboardInterrupt:
        sys.stderr.write("aimon: interrupted\n")
        return 130


def _interactive(launch: Launch, prompt: str | None) -> int:
    from aimon_cli._approval import ApprovalBridge
    from aimon_cli._runtime import SharedRuntime
    from aimon_cli._sessions_cli import default_store
    from aimon_cli.repl import ReplOptions, run_repl
    from aimon_core.session import SessionError, user_data_dir

    store = default_store()
    session_id = _target_session(launch, store)
    if launch.pick:
        from aimon_cli._picker import pick_session

        recent = store.records.list(str(launch.project_root), limit=20)
        session_id = asyncio.run(pick_session(recent))
        if session_id is None:
            return 0
    questions = ApprovalBridge(launch.project_root)
    shared = SharedRuntime(launch.runtime, store, questions)
    options = ReplOptions(
        project_root=launch.project_root, store=store, open_session=shared.open_session,
        session_id=session_id, initial_prompt=prompt,
        history_file=user_data_dir() / "prompt-history", shutdown=shared.shutdown,
        questions=questions, assembly=lambda: shared.assembly, watch=shared.watch,
    )
    try:
        return asyncio.run(run_repl(options))
    except (SetupError, SessionError) as exc:
        raise _fail(str(exc), 2 if isinstance(exc, SetupError) else 1) from None


def normalise_args(args: list[str]) -> list[str]:
    """Let `-r`/`--resume` stand alone: without a session id after it, it means 'pick one'."""
    out: list[str] = []
    for i, arg in enumerate(args):
        out.append(arg)
        if arg in ("-r", "--resume"):
            following = args[i + 1] if i + 1 < len(args) else None
            if following is None or following.startswith("-"):
                out.append(_PICK)
    return out


def run(args: list[str]) -> None:
    """Dispatch to a subcommand app or the root command."""
    if args and args[0] in SUBCOMMANDS:
        from aimon_cli._sessions_cli import sessions_app

        sessions_app(args[1:], prog_name="aimon sessions")
        return
    root_app(normalise_args(args), prog_name="aimon")
