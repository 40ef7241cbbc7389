"""The service's commands: `serve`, `ps`, `send`, `stop`, `attach`, `acp`, and `--bg`.

Every one but `serve` and `acp` is a client of the service (docs/PROTOCOL.md); those that need
a service start one when none runs (`aimon serve` in the background, which leaves by itself
after `service.idleMinutes` with nothing to do).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from aimon_cli._args import RootArgs
    from aimon_core.service import ServiceClient, ServicePaths

# How long a client waits for a service it started to listen.
START_SECONDS = 60.0


class ServiceCommandError(Exception):
    """A service command failed; the message says why (exit status 1)."""


# ------------------------------------------------------------------------- connecting


def connect(*, start: bool, client_name: str = "aimon") -> ServiceClient:
    """Return a connection to the service, starting one first if `start` and none runs."""
    from aimon_core.service import (
        RemoteError,
        ServiceClient,
        ServicePaths,
        ServiceUnavailableError,
    )

    paths = ServicePaths.default()
    try:
        return ServiceClient.connect(paths, client_name=client_name)
    except ServiceUnavailableError:
        if not start:
            raise ServiceCommandError("no service runs (start one with: aimon serve)") from None
    except RemoteError as exc:
        raise ServiceCommandError(f"the service refused this client: {exc}") from None
    paths.prepare()
    with _starting(paths):
        with contextlib.suppress(ServiceUnavailableError):  # another client started it
            return ServiceClient.connect(paths, client_name=client_name)
        _spawn(paths)
    try:
        return ServiceClient.connect(paths, client_name=client_name)
    except ServiceUnavailableError:
        raise ServiceCommandError(f"the service did not start; see {paths.log}") from None


@contextlib.contextmanager
def _starting(paths: ServicePaths) -> Iterator[None]:
    """Hold the start lock: one client at a time starts the service."""
    import fcntl

    fd = os.open(paths.folder / "start.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _spawn(paths: ServicePaths) -> None:
    """Start `aimon serve` in the background and wait until it listens (or fails)."""
    import select

    read_end, write_end = os.pipe()
    log_fd = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        subprocess.Popen(
            [sys.executable, "-m", "aimon_cli.app", "serve", "--ready-fd", str(write_end)],
            stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd, pass_fds=(write_end,),
            start_new_session=True, cwd="/")
    finally:
        os.close(write_end)
        os.close(log_fd)
    try:
        deadline = time.monotonic() + START_SECONDS
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([read_end], [], [], left)
            if ready:
                os.read(read_end, 64)  # "ready", or end of file: it failed (or lost a race)
                return
        raise ServiceCommandError(f"the service did not start in {START_SECONDS:.0f} s; "
                                  f"see {paths.log}")
    finally:
        os.close(read_end)


def _call(client: ServiceClient, method: str, params: dict[str, Any]) -> Any:
    from aimon_core.service import RemoteError

    try:
        return client.call(method, params)
    except RemoteError as exc:
        raise ServiceCommandError(str(exc)) from None


# ------------------------------------------------------------------------------ --bg


def start_background(args: RootArgs) -> int:
    """`aimon --bg PROMPT`: start a session in the service, send it the prompt, print its id."""
    from aimon_cli._commands import CommandExitError, launch_of
    from aimon_cli._stdin import read_prompt

    text = read_prompt(args.prompt, sys.stdin) if sys.stdin is not None else args.prompt or ""
    if not text:
        raise CommandExitError(2, 'no prompt: aimon --bg "PROMPT" (or pipe it on stdin)')
    if args.resume or args.continue_last or args.pick:
        raise CommandExitError(2, "--bg starts a new session; to continue one in the "
                               "service: aimon send ID TEXT")
    launch = launch_of(args, Path.cwd().resolve())
    try:
        with connect(start=True, client_name="aimon --bg") as client:
            if not client.same_environment:
                raise ServiceCommandError(_OTHER_ENVIRONMENT)
            flags = {key: value for key, value in _flags_json(launch.flags).items()
                     if value not in (None, [])}
            opened = _call(client, "session/new", {"cwd": str(launch.project_root),
                                                   "flags": flags,
                                                   "unattended": args.print_mode})
            session_id = opened["session_id"]
            _call(client, "session/send", {"session_id": session_id, "text": text})
    except ServiceCommandError as exc:
        raise CommandExitError(1, str(exc)) from None
    sys.stdout.write(f"{session_id}\n")
    return 0


_OTHER_ENVIRONMENT = ("the service runs with other model settings (provider keys, base URLs "
                      "or AIMON_ variables) than this shell; stop it with `aimon serve --stop` "
                      "and run this again")


def _flags_json(flags: Any) -> dict[str, Any]:
    import dataclasses

    return {key: list(value) if isinstance(value, tuple) else value
            for key, value in dataclasses.asdict(flags).items()}


# --------------------------------------------------------------------------- commands


def _app(help_text: str) -> typer.Typer:
    return typer.Typer(add_completion=False, rich_markup_mode=None, help=help_text,
                       pretty_exceptions_enable=False,
                       context_settings={"help_option_names": ["-h", "--help"]})


serve_app = _app("Run the background service (one per user).")
ps_app = _app("List the sessions the service hosts.")
send_app = _app("Deliver text to a session's inbox.")
stop_app = _app("Interrupt a session's running turn.")
attach_app = _app("Open the REPL on a session the service hosts.")
acp_app = _app("Speak the Agent Client Protocol on stdin and stdout (for editors).")


@serve_app.command()
def _serve(
    stop: Annotated[bool, typer.Option("--stop", help="Stop the running service.")] = False,
    status: Annotated[bool, typer.Option("--status", help="Show the running service.")] = False,
    idle_minutes: Annotated[float | None, typer.Option(
        "--idle-minutes", min=0, help="Leave after this long idle (0: never; default: the "
        "service.idleMinutes setting, 30).")] = None,
    tcp: Annotated[str | None, typer.Option(
        "--tcp", metavar="HOST:PORT", help="Also listen on TCP (clients need the token in "
        "the service folder).")] = None,
    ready_fd: Annotated[int | None, typer.Option("--ready-fd", hidden=True)] = None,
) -> None:
    """Run the service in the foreground (clients start one in the background by themselves)."""
    if stop or status:
        with _failing(), connect(start=False, client_name="aimon serve") as client:
            if stop:
                _call(client, "service/shutdown", {})
                typer.echo(f"Stopping the service (pid {client.hello.get('pid')}).")
            else:
                typer.echo(json.dumps(_call(client, "service/status", {}), indent=2))
        return
    address = None
    if tcp is not None:
        host, _, port = tcp.rpartition(":")
        if not host or not port.isdigit():
            raise typer.BadParameter("--tcp takes HOST:PORT")
        address = (host, int(port))
    from aimon_cli._serve import serve

    raise typer.Exit(serve(idle_minutes=idle_minutes, tcp=address, ready_fd=ready_fd))


@contextlib.contextmanager
def _failing() -> Iterator[None]:
    try:
        yield
    except ServiceCommandError as exc:
        sys.stderr.write(f"aimon: {exc}\n")
        raise typer.Exit(1) from None


@ps_app.command()
def _ps(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """List the service's sessions: id, state, project, agent, last activity, tokens, cost."""

    try:
        client: ServiceClient | None = connect(start=False, client_name="aimon ps")
    except ServiceCommandError:
        client = None
    sessions: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []  # routine runs of the last day
    if client is not None:
        with _failing(), client:
            listed = _call(client, "sessions/list", {})
            sessions, runs = listed["sessions"], listed.get("routine_runs", [])
    if as_json:
        typer.echo(json.dumps({"service": client is not None, "sessions": sessions,
                               "routine_runs": runs}, indent=2))
        return
    if client is None:
        typer.echo("No service runs (aimon --bg PROMPT starts one).")
        return
    if not sessions:
        typer.echo("The service hosts no session.")
    else:
        for line in ps_lines(sessions):
            typer.echo(line)
    if runs:
        from aimon_core.scheduling import runs_lines

        typer.echo("Routine runs (the last 24 hours; aimon schedule list):")
        for run, lines in ((run, runs_lines([run])) for run in runs):
            typer.echo(f"  {run['routine']}: {lines[0]}")
            for more in lines[1:]:
                typer.echo(f"  {more}")


def ps_lines(sessions: list[dict[str, Any]]) -> list[str]:
    """Return the lines of `aimon ps`."""
    lines = [f"{'SESSION':<28} {'STATE':<8} {'LAST':>8} {'AGENT':<10} {'TOKENS':>8} "
             f"{'COST':>8}  PROJECT"]
    now = time.time()
    for item in sessions:
        ago = _ago(now - float(item.get("last_activity", now)))
        tokens = int(item.get("input_tokens", 0)) + int(item.get("output_tokens", 0))
        state = item["state"] + ("*" if item.get("attached") else "")
        lines.append(f"{item['session_id']:<28} {state:<8} {ago:>8} {item['agent']:<10} "
                     f"{tokens:>8,} ${float(item.get('cost_usd', 0)):>7.4f}  {item['project']}")
        if item.get("title"):
            lines.append(f"{'':<28} {item['title']}")
    lines.append("(* a client is attached; waiting: a tool call waits for approval, "
                 "answer it with aimon attach ID)")
    return lines


def _ago(seconds: float) -> str:
    if seconds < 60:
        return f"{max(0, seconds):.0f}s ago"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m ago"
    return datetime.fromtimestamp(time.time() - seconds).strftime("%H:%M")


_ID_HELP = "The session (or the end of its id)."


def _session_id(client: ServiceClient, text: str) -> str:
    """Return the id `text` names: a hosted session's (the service decides), else a stored one."""
    from aimon_cli._store import default_store, resolve_session_id

    hosted = [s["session_id"] for s in _call(client, "sessions/list", {})["sessions"]]
    if text in hosted or any(sid.endswith(text) or sid.startswith(text) for sid in hosted):
        return text
    try:
        return resolve_session_id(default_store(), text, Path.cwd())
    except ValueError as exc:
        raise ServiceCommandError(str(exc)) from None


@send_app.command()
def _send(
    session: Annotated[str, typer.Argument(metavar="ID", help=_ID_HELP)],
    text: Annotated[str, typer.Argument(help="What to send ('-': read stdin).")],
    key: Annotated[str | None, typer.Option(
        "--key", help="An idempotency key: the same key twice delivers once.")] = None,
) -> None:
    """Send TEXT to a session: it runs after the running turn, or now if the session is idle."""
    if text == "-":
        text = sys.stdin.read().strip()
    with _failing(), connect(start=True, client_name="aimon send") as client:
        params: dict[str, Any] = {"session_id": _session_id(client, session), "text": text}
        if key:
            params["key"] = key
        done = _call(client, "session/send", params)
    outcome = done["outcome"]
    notes = {"started": "started a turn", "queued": "queued after the running turn",
             "duplicate": "already delivered with this key: not sent again",
             "routed": f"delivered to {done.get('holder', 'its holder')}" + (
                 "" if done.get("heard") else ", which does not answer: this service takes "
                 "the session over once its lease expires")}
    typer.echo(f"{done['session_id']}: {notes.get(outcome, outcome)}")


@stop_app.command()
def _stop(
    session: Annotated[str, typer.Argument(metavar="ID", help=_ID_HELP)],
    close: Annotated[bool, typer.Option("--close", help="Also let the service release the "
                                        "session (it stays stored).")] = False,
) -> None:
    """Interrupt the session's running turn."""
    with _failing(), connect(start=False, client_name="aimon stop") as client:
        done = _call(client, "session/stop", {"session_id": _session_id(client, session),
                                              "close": close})
    what = "interrupted its turn" if done["interrupted"] else "no turn was running"
    typer.echo(f"{done['session_id']}: {what}" + ("; released" if done["closed"] else ""))


@attach_app.command()
def _attach(
    session: Annotated[str, typer.Argument(metavar="ID", help=_ID_HELP)],
) -> None:
    """Attach: the history, the live events, the questions; Ctrl-D or /detach leaves it running."""
    from aimon_cli._attach import attach

    with _failing():
        with connect(start=True, client_name="aimon attach") as client:
            session_id = _session_id(client, session)
        raise typer.Exit(attach(session_id))


@acp_app.command()
def _acp() -> None:
    """Run aimon as an ACP agent on stdin and stdout (Zed, JetBrains, Neovim ...)."""
    from aimon_cli._acp_cli import run_acp

    raise typer.Exit(run_acp())


_APPS = {"serve": serve_app, "ps": ps_app, "send": send_app, "stop": stop_app,
         "attach": attach_app, "acp": acp_app}


def service_command(name: str, args: list[str]) -> int:
    """Run `aimon NAME ARGS`; return the exit status."""
    return run_app(_APPS[name], args, f"aimon {name}")


def run_app(app: typer.Typer, args: list[str], prog_name: str) -> int:
    """Run a subcommand's Typer app on `args`; return the exit status (usage errors: 2)."""
    try:
        # Without standalone mode, click returns the code of a typer.Exit rather than raising.
        code = app(args, prog_name=prog_name, standalone_mode=False)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:
        return 130
    except Exception as exc:  # click's usage errors, vendored by Typer
        format_message = getattr(exc, "format_message", None)
        if callable(format_message):
            sys.stderr.write(f"{prog_name}: {format_message()}\n")
            return 2
        raise
    return code if isinstance(code, int) else 0
