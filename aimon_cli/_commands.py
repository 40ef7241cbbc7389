"""The root command (`aimon [PROMPT]`, `aimon -p PROMPT`, `--resume`) and the dispatch.

Arguments are parsed by the Typer app in `_args.py` (`aimon` alone skips it); the
`aimon sessions` subcommands are a Typer app too.
"""

from __future__ import annotations

import dataclasses
import io
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from aimon_cli._args import RootArgs
    from aimon_cli._early import EarlyPrompt
    from aimon_cli._print import PrintJob
    from aimon_core.live import LiveSession
    from aimon_core.runtime import AgentAssembly, AgentRuntimeRegistry, Application, RuntimeFlags
    from aimon_core.session import SessionStore

# Subcommands that are a Typer app of their own: the module (imported when used) and the app.
APPS = {
    "sessions": ("aimon_cli._sessions_cli", "sessions_app"),
    "store": ("aimon_cli._store_cli", "store_app"),
    "mcp": ("aimon_cli._mcp_cli", "mcp_app"),
    "workflow": ("aimon_cli._workflow_cli", "workflow_app"),
    "auth": ("aimon_cli._auth_cli", "auth_app"),
    "bundles": ("aimon_cli._bundles_cli", "bundles_app"),
    "skills": ("aimon_cli._extensions_cli", "skills_app"),
    "agents": ("aimon_cli._extensions_cli", "agents_app"),
    "memory": ("aimon_cli._memory_cli", "memory_app"),
    "knowledge": ("aimon_cli._knowledge_cli", "knowledge_app"),
}
# The service's commands (`aimon serve`, `ps`, `send`, `stop`, `attach`, `acp`).
SERVICE_COMMANDS = ("serve", "ps", "send", "stop", "attach", "acp")
# What the ledger and the traces tell (`aimon usage`, `aimon trace`).
OBSERVE_COMMANDS = ("usage", "trace")


class CommandExitError(Exception):
    """End the command with an exit status and a message for stderr.

    The message is written by `run`, once the early prompt (if any) has given the terminal
    back, so it is never drawn on the prompt's line.
    """

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(code, message)
        self.code, self.message = code, message


def notice(text: str) -> None:
    """Tell the user something on stderr (`aimon: ...`)."""
    sys.stderr.write(f"aimon: {text}\n")


# Print mode leaves out the start-up line naming the Claude Code settings read: a script
# runs aimon -p again and again, and the REPL says it at each start.
_CLAUDE_SETTINGS_READ = "read Claude Code settings: "


def print_notice(text: str) -> None:
    """Tell a print-mode run's user a notice on stderr, but for the settings-read line."""
    if not text.startswith(_CLAUDE_SETTINGS_READ) or "skipped" in text:
        notice(text)


def _fail(message: str, code: int = 2) -> CommandExitError:
    return CommandExitError(code, message)


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """What the command line asked for, after validation."""

    project_root: Path
    flags: RuntimeFlags
    resume: str | None
    pick: bool
    continue_last: bool


def root(args: RootArgs) -> int:
    """Run `aimon [options] [PROMPT]`: the REPL, or one turn in print mode."""
    if args.version:
        from aimon_core import __version__

        sys.stdout.write(f"aimon {__version__}\n")
        return 0
    if args.bg:  # the service runs it; `-p --bg` alone is unattended (it asks nobody)
        from aimon_cli._service_cli import start_background

        return start_background(args)
    # `echo "fix it" | aimon`: stdin is not a terminal, so nobody could type at a REPL;
    # the piped text (and any PROMPT) runs in print mode, with the same options as `-p`.
    if not args.print_mode and not (sys.stdin is not None and sys.stdin.isatty()):
        args = dataclasses.replace(args, print_mode=True)
    if args.print_mode:  # with a service running, it runs the turn (no SDK loads here)
        from aimon_cli._warm import warm_print

        code, args = warm_print(args)
        if code is not None:
            return code
    if not args.print_mode and args.profile is None:  # the REPL: say what to set first
        from aimon_cli._early import provider_problem

        if (problem := provider_problem(
                provider=args.provider, model=args.model, base_url=args.base_url,
                project_root=Path.cwd().resolve(), env=os.environ)) is not None:
            raise CommandExitError(1, problem)
    early = _paint_first_prompt(args)
    try:  # from here a Ctrl-C must give the terminal back: the finally below does
        from aimon_cli import _children, _startup

        _startup.begin()  # until the first session is open (or aimon leaves): see _startup
        _children.use_pidfd()
        return _root(args, early)
    finally:
        if early is not None:  # aimon leaves before the REPL took over (an error, Ctrl-C)
            early.give_back()


def _paint_first_prompt(args: RootArgs) -> EarlyPrompt | None:
    """Draw the REPL's banner and prompt now, before the slow imports, if a REPL is next.

    Not when something else comes first: print mode, the session picker, the check that
    there is a session to continue, or a first prompt given on the command line.
    """
    if args.print_mode or args.pick or args.continue_last or args.prompt is not None:
        return None
    from aimon_cli._early import EarlyPrompt, banner_text, screen_width
    from aimon_core import __version__

    return EarlyPrompt.paint(banner_text(__version__, str(Path.cwd().resolve()), screen_width()))


def _root(args: RootArgs, early: EarlyPrompt | None) -> int:
    launch = launch_of(args, Path.cwd().resolve())
    if args.print_mode:
        return _print_mode(launch, args.prompt, args.output_format, args.max_iterations)
    return _interactive(launch, args.prompt, early)


def _split_rules(values: list[str] | None) -> list[str]:
    """Split rule flags on commas and spaces, never inside parentheses."""
    if not values:
        return []  # the common case stays off the agent package's import cost
    from aimon_core.agent import split_tool_list

    rules: list[str] = []
    for value in values or ():
        for chunk in split_tool_list(value, "--allowed-tools") or ():
            rules.extend(split_tool_list(chunk, "--allowed-tools") or ())
    return rules


def _target_session(launch: Launch, store: SessionStore) -> str | None:
    """Return the session to resume (None: a new one); raise on a bad choice."""
    from aimon_cli._store import most_recent

    if launch.continue_last:
        last = most_recent(store, launch.project_root)
        if last is None:
            raise _fail("no session to continue in this project; start one with: aimon", 1)
        return str(last.id)
    if launch.resume is None:
        return None
    from aimon_cli._store import resolve_session_id

    try:  # (R) the same short ids as /resume: the end (or start) of an id
        return resolve_session_id(store, launch.resume, launch.project_root)
    except ValueError as exc:
        raise _fail(str(exc), 2) from None


async def _open_live(registry: AgentRuntimeRegistry, store: SessionStore,
                     session_id: str | None, err: TextIO | None = None
                     ) -> tuple[AgentAssembly, LiveSession]:
    """Build the session's agent runtime (imports the SDK, off the event loop) and open it."""
    import asyncio

    from aimon_cli._store import agent_of_session

    err = err or sys.stderr
    agent = None
    if session_id is not None and registry.flags.agent is None:
        agent = await asyncio.to_thread(agent_of_session, store, session_id)
    assembly = await registry.get(agent)
    from aimon_cli._schedule_repl import register_schedule_here

    register_schedule_here(assembly.commands)  # `aimon -p /schedule` lists the routines
    pending = assembly.settings.pending_trust
    if pending is not None:
        err.write("aimon: this folder's settings are not trusted yet, so these are held "
                  "back: " + "; ".join(pending.what)
                  + ". Run aimon interactively here once to trust them.\n")
    if assembly.mcp is not None:  # print mode waits for its MCP servers (MCP_TIMEOUT at most)
        def say(text: str) -> None:
            err.write(f"aimon: {text}\n")

        assembly.start_background(say)
        await assembly.mcp.wait_ready(assembly.mcp.options.connect_timeout)
    return assembly, await assembly.open_session(store, session_id=session_id)


def launch_of(args: RootArgs, project_root: Path) -> Launch:
    """Return what `args` ask for in `project_root`, validated."""
    from aimon_core.runtime import RuntimeFlags

    return Launch(
        project_root=project_root,
        flags=RuntimeFlags(
            provider=args.provider, model=args.model, base_url=args.base_url,
            agent=args.agent,
            allowed=tuple(_split_rules(list(args.allowed_tools))),
            disallowed=tuple(_split_rules(list(args.disallowed_tools))),
            permission_mode=args.permission_mode,
            sandbox=args.sandbox,
            profile=args.profile,
        ),
        resume=args.resume,
        pick=args.pick,
        continue_last=args.continue_last,
    )


def _print_job(launch: Launch, prompt: str | None, output_format: str,
               max_iterations: int | None) -> PrintJob:
    """Return the print job, the prompt read from the argument or piped stdin."""
    from aimon_cli._print import PrintJob
    from aimon_cli._stdin import read_prompt

    if launch.pick:
        raise _fail("-r without a session id needs the interactive mode; pass the id with -p")
    stdin = sys.stdin or io.StringIO()  # None: file descriptor 0 is closed
    text = read_prompt(prompt, stdin)
    if not text and not stdin.isatty():  # `aimon < /dev/null`, `true | aimon`
        raise _fail('no prompt: stdin is not a terminal and is empty; pass one '
                    '(aimon -p "...") or run aimon in a terminal')
    if not text:
        raise _fail("no prompt: pass one after -p or pipe it on stdin")
    return PrintJob(prompt=text, output_format=output_format, max_iterations=max_iterations)


async def print_turn(app: Application, launch: Launch, job: PrintJob, out: TextIO,
                     err: TextIO) -> int:
    """Run one print-mode turn in `app` and write it to `out` and `err`; return the status.

    The command line runs it in its own application; the service (`aimon serve`) runs it for
    a warm `aimon -p`, writing to that client.
    """
    from aimon_cli import _startup
    from aimon_cli._print import EXIT_OUTPUT_CLOSED, OutputClosedError, exit_code, run_print
    from aimon_cli._schedule_repl import schedule_parts

    store = app.store
    session_id = _target_session(launch, store)
    registry = app.runtimes(launch.project_root, launch.flags, on_notice=print_notice,
                            parts=schedule_parts())
    try:
        assembly, live = await _open_live(registry, store, session_id, err)
    finally:
        _startup.finish()
    async with live:
        try:
            result = await run_print(job, live, out, err, policy=assembly.policy)
        except OutputClosedError:  # the reader of stdout went away: quietly, as `yes | head`
            return EXIT_OUTPUT_CLOSED
    return exit_code(result, live)


def _print_mode(launch: Launch, prompt: str | None, output_format: str,
                max_iterations: int | None) -> int:
    import asyncio

    from aimon_cli._store import default_store
    from aimon_core.runtime import Application, RuntimeSetupError
    from aimon_core.session import SessionError

    job = _print_job(launch, prompt, output_format, max_iterations)

    async def go() -> int:
        async with Application(default_store()) as app:
            return await print_turn(app, launch, job, sys.stdout, sys.stderr)

    try:
        return asyncio.run(go())
    except (RuntimeSetupError, SessionError) as exc:
        raise _fail(str(exc), 2 if isinstance(exc, RuntimeSetupError) else 1) from None
    except KeyboardInterrupt:
        sys.stderr.write("aimon: interrupted\n")
        return 130


def _interactive(launch: Launch, prompt: str | None, early: EarlyPrompt | None) -> int:
    import asyncio

    from aimon_cli._approval import Questions
    from aimon_cli._runtime import ReplRuntimes
    from aimon_cli._store import default_store, lazy_default_store
    from aimon_cli.repl import ReplOptions, run_repl
    from aimon_core.runtime import RuntimeSetupError
    from aimon_core.session import SessionError, user_data_dir

    eager = launch.continue_last or launch.pick or launch.resume is not None
    store = default_store() if eager else lazy_default_store()
    session_id = _target_session(launch, store)
    if launch.pick:
        from aimon_cli._picker import pick_session

        recent = store.records.list_sessions(str(launch.project_root), limit=20)
        session_id = asyncio.run(pick_session(recent))
        if session_id is None:
            return 0
    questions = Questions(launch.project_root)
    shared = ReplRuntimes(launch.project_root, launch.flags, store, questions)
    options = ReplOptions(
        project_root=launch.project_root, store=store, open_session=shared.open_session,
        session_id=session_id, initial_prompt=prompt,
        history_file=user_data_dir() / "prompt-history", shutdown=shared.shutdown,
        questions=questions, assembly=lambda: shared.assembly, watch=shared.watch,
        early=early, trust=shared.trust, notices=shared.take_notices,
    )
    try:
        return asyncio.run(run_repl(options))
    except (RuntimeSetupError, SessionError) as exc:
        raise _fail(str(exc), 2 if isinstance(exc, RuntimeSetupError) else 1) from None


def take_store_flag(args: list[str]) -> list[str]:
    """Take `--store URL` (or `--store=URL`) out of the command line, into AIMON_STORE_URL
    (so a service this command starts keeps the same store); return the rest."""
    rest: list[str] = []
    words = iter(args)
    for arg in words:
        if arg == "--store":
            url = next(words, None)
            if url is None:
                raise _fail("--store needs a URL (postgresql://..., redis://..., file:)", 2)
            os.environ["AIMON_STORE_URL"] = url
        elif arg.startswith("--store="):
            os.environ["AIMON_STORE_URL"] = arg.removeprefix("--store=")
        else:
            rest.append(arg)
    return rest


def run(args: list[str]) -> None:
    """Dispatch to a subcommand app or the root command; exit with its status."""
    if "--store" in args or any(arg.startswith("--store=") for arg in args):
        try:
            args = take_store_flag(args)
        except CommandExitError as exc:
            sys.stderr.write(f"aimon: {exc.message}\n")
            raise SystemExit(exc.code) from None
    try:
        _run(args)
    except Exception as exc:
        from aimon_core.stores import StoreError  # not at start: only when needed

        if not isinstance(exc, StoreError):
            raise
        # The chosen store (--store, AIMON_STORE_URL, store.url) cannot be used.
        sys.stderr.write(f"aimon: {exc}\n")
        from aimon_cli._exit import leave

        leave(1)


def _run(args: list[str]) -> None:
    name = args[0] if args else ""
    if name in APPS:
        import importlib

        module, attribute = APPS[name]
        getattr(importlib.import_module(module), attribute)(args[1:], prog_name=f"aimon {name}")
        return
    if name in SERVICE_COMMANDS or name == "schedule":
        from aimon_cli._exit import leave

        if name == "schedule":
            from aimon_cli._schedule_cli import schedule_command

            leave(schedule_command(args[1:]))
        from aimon_cli._service_cli import service_command

        leave(service_command(name, args[1:]))
    if name in OBSERVE_COMMANDS:
        from aimon_cli._usage_cli import observe_command

        sys.exit(observe_command(name, args[1:]))
    from aimon_cli._args import ArgsError, parse_root

    try:
        parsed = parse_root(args)
        code = parsed if isinstance(parsed, int) else root(parsed)
    except ArgsError as exc:
        sys.stderr.write(f"aimon: {exc}\nTry 'aimon --help'.\n")
        code = 2
    except CommandExitError as exc:
        if exc.message:
            sys.stderr.write(f"aimon: {exc.message}\n")
        code = exc.code
    except KeyboardInterrupt:  # Ctrl-C while aimon was starting (the REPL handles its own)
        sys.stderr.write("aimon: interrupted\n")
        code = 130
    from aimon_cli._exit import leave

    # Print mode and the REPL have closed their sessions, written their output and run the
    # SessionEnd hooks by now: skip the interpreter's teardown (~350 ms with the SDK loaded).
    leave(code)
