"""`aimon schedule`: routines, prompts the service runs on a schedule.

Every subcommand is a client of the service (docs/PROTOCOL.md, `schedule/*`) and starts one
when none runs: the service keeps the routines and runs them, so starting it is what brings
them back after a reboot.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from aimon_cli._service_cli import ServiceCommandError, connect

schedule_app = typer.Typer(
    add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False,
    no_args_is_help=True, help="Routines: prompts the background service runs on a schedule.",
    context_settings={"help_option_names": ["-h", "--help"]})


def _call(method: str, params: dict[str, Any], client_name: str) -> Any:
    """Call the service (started if none runs); exit 1 with its message if it refuses."""
    from aimon_core.service import RemoteError

    try:
        with connect(start=True, client_name=client_name) as client:
            if method == "schedule/add" and not client.same_environment:
                sys.stderr.write("aimon: note: the service runs with other model settings "
                                 "than this shell; the routine runs with the service's\n")
            return client.call(method, params)
    except (ServiceCommandError, RemoteError) as exc:
        sys.stderr.write(f"aimon: {exc}\n")
        raise typer.Exit(1) from None


@schedule_app.command("add")
def _add(
    name: Annotated[str, typer.Argument(help="The routine's name (letters, digits, . _ -).")],
    prompt: Annotated[str, typer.Argument(help="What to run: a prompt or a slash command "
                                          "such as a skill ('-': read stdin).")],
    cron: Annotated[str | None, typer.Option("--cron", metavar="EXPR", help="A cron "
                                             "expression, e.g. '0 9 * * 1-5'.")] = None,
    every: Annotated[str | None, typer.Option("--every", metavar="DURATION",
                                              help="A fixed interval, e.g. 30m, 2h.")] = None,
    at: Annotated[str | None, typer.Option("--at", metavar="TIME", help="Once, at an ISO "
                                           "time, e.g. 2026-12-02T09:00.")] = None,
    in_: Annotated[str | None, typer.Option("--in", metavar="DURATION",
                                            help="Once, after a while, e.g. 20m.")] = None,
    tz: Annotated[str | None, typer.Option("--tz", metavar="ZONE", help="The time zone of "
                                           "--cron and --at (default: this machine's).")] = None,
    agent: Annotated[str | None, typer.Option("--agent", help="The agent that runs it.")
                     ] = None,
    project: Annotated[Path | None, typer.Option("--project", metavar="DIR", help="The "
                                                 "project folder (default: here).")] = None,
    session: Annotated[str | None, typer.Option("--session", metavar="ID", help="Append each "
                                                "run to this session (default: a new one "
                                                "each run).")] = None,
    max_runs: Annotated[int | None, typer.Option("--max-runs", min=1, help="Runs in all; then "
                                                 "the routine is done.")] = None,
    max_cost: Annotated[float | None, typer.Option("--max-cost", min=0, metavar="USD",
                                                   help="Cost of one run; it is stopped "
                                                   "past it.")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", min=1,
                                                   help="Tokens of one run.")] = None,
    runs_per_day: Annotated[int | None, typer.Option("--runs-per-day", min=1)] = None,
    cost_per_day: Annotated[float | None, typer.Option("--cost-per-day", min=0,
                                                       metavar="USD")] = None,
    tokens_per_day: Annotated[int | None, typer.Option("--tokens-per-day", min=1)] = None,
    pause_after: Annotated[int, typer.Option("--pause-after", min=1, metavar="N", help="Pause "
                                             "after N failed runs in a row.")] = 3,
    skip_missed: Annotated[bool, typer.Option("--skip-missed", help="Skip occurrences missed "
                                              "while no service ran (default: run once).")
                           ] = False,
    replace: Annotated[bool, typer.Option("--replace", help="Replace a routine of this "
                                          "name.")] = False,
) -> None:
    """Add a routine: one of --cron, --every, --at or --in, and the PROMPT."""
    from aimon_core.scheduling import (
        AddChoice,
        RoutineError,
        RoutineLimits,
        TriggerChoice,
        TriggerError,
        add_request,
    )

    if prompt == "-":
        prompt = sys.stdin.read()
    folder = (project or Path.cwd()).resolve()
    choice = AddChoice(
        name=name, prompt=prompt, project=str(folder), agent=agent, session=session,
        trigger=TriggerChoice(cron=cron, every=every, at=at, in_=in_, zone=tz),
        limits=RoutineLimits(max_runs=max_runs, max_cost_usd=max_cost, max_tokens=max_tokens,
                             runs_per_day=runs_per_day, cost_per_day_usd=cost_per_day,
                             tokens_per_day=tokens_per_day,
                             pause_after_failures=pause_after),
        skip_missed=skip_missed)
    try:
        params = add_request(choice)
    except (TriggerError, RoutineError) as exc:
        sys.stderr.write(f"aimon schedule add: {exc}\n")
        raise typer.Exit(2) from None
    from aimon_core.scheduling import local_time

    done = _call("schedule/add", {**params, "replace": replace}, "aimon schedule add")
    typer.echo(f"{done['name']}: {done['trigger_text']}, next run "
               f"{local_time(done['next_run'])}")


def _show(done: Any, as_json: bool, lines: list[str]) -> None:
    """Print a result: the JSON object, or the lines people read."""
    typer.echo(json.dumps(done, indent=2) if as_json else "\n".join(lines))


@schedule_app.command("list")
def _list(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
) -> None:
    """List the routines: trigger, state, next and last run, totals."""
    from aimon_core.scheduling import list_lines

    done = _call("schedule/list", {}, "aimon schedule list")
    _show(done, as_json, list_lines(done["routines"]))


@schedule_app.command("runs")
def _runs(
    name: Annotated[str, typer.Argument(help="The routine.")],
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object.")] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, help="How many, newest first.")
                     ] = 20,
    transcript: Annotated[bool, typer.Option("--transcript", help="Print the newest run's "
                                             "transcript.")] = False,
) -> None:
    """List a routine's runs, newest first: outcome, session (its transcript), cost."""
    from aimon_core.scheduling import runs_lines

    done = _call("schedule/runs", {"name": name, "limit": limit}, "aimon schedule runs")
    if transcript:
        with_session = [run for run in done["runs"] if run.get("session_id")]
        if not with_session:
            sys.stderr.write(f"aimon: {name} has no run with a transcript yet\n")
            raise typer.Exit(1)
        from aimon_cli._sessions_cli import show_session

        show_session(with_session[0]["session_id"])
        return
    _show(done, as_json, runs_lines(done["runs"]))


@schedule_app.command("run")
def _run(
    name: Annotated[str, typer.Argument(help="The routine.")],
    detach: Annotated[bool, typer.Option("--detach", help="Start it and return at once.")
                      ] = False,
) -> None:
    """Run a routine now, off its schedule (and wait for the run to end)."""
    from aimon_core.scheduling import runs_lines

    done = _call("schedule/run", {"name": name, "wait": not detach}, "aimon schedule run")
    run = done["run"]
    if detach:
        typer.echo(f"{name}: started {run['id'] if run else ''}; aimon schedule runs {name} "
                   "shows it")
        return
    for line in runs_lines([run]):
        typer.echo(line)
    if run["outcome"] != "ok":
        raise typer.Exit(1)


def _switch(verb: str, name: str | None, every_one: bool) -> None:
    if (name is None) == (not every_one):
        sys.stderr.write(f"aimon schedule {verb}: give a NAME or --all\n")
        raise typer.Exit(2)
    params: dict[str, Any] = {"all": True} if every_one else {"name": name}
    done = _call(f"schedule/{verb}", params, f"aimon schedule {verb}")
    names = done.get("paused" if verb == "pause" else "resumed", [])
    word = "paused" if verb == "pause" else "resumed"
    if every_one:
        stop = " and their runs stopped" if verb == "pause" else ""
        typer.echo(f"{len(names)} routine(s) {word}{stop}: {', '.join(names) or '-'}")
    else:
        typer.echo(f"{name}: {word}")


@schedule_app.command("pause")
def _pause(
    name: Annotated[str | None, typer.Argument(help="The routine.")] = None,
    every_one: Annotated[bool, typer.Option("--all", help="The kill switch: pause every "
                                            "routine and stop every run.")] = False,
) -> None:
    """Pause a routine (or all of them: --all)."""
    _switch("pause", name, every_one)


@schedule_app.command("resume")
def _resume(
    name: Annotated[str | None, typer.Argument(help="The routine.")] = None,
    every_one: Annotated[bool, typer.Option("--all", help="Every paused routine.")] = False,
) -> None:
    """Resume a paused routine (from now: what it missed is not run)."""
    _switch("resume", name, every_one)


@schedule_app.command("rm")
def _rm(name: Annotated[str, typer.Argument(help="The routine.")]) -> None:
    """Remove a routine (its runs stay listed in its sessions)."""
    _call("schedule/remove", {"name": name}, "aimon schedule rm")
    typer.echo(f"{name}: removed")


@schedule_app.command("load")
def _load(
    project: Annotated[Path | None, typer.Option("--project", metavar="DIR", help="The "
                                                 "project folder (default: here).")] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Trust them without asking.")] = False,
) -> None:
    """Schedule the project's .aimon/routines/*.md, once you trust what they run."""
    from aimon_core.scheduling import (
        describe,
        local_zone,
        read_routine_files,
        trust_files,
        trusted_items,
    )

    folder = (project or Path.cwd()).resolve()
    files, problems = read_routine_files(folder, local=local_zone())
    for problem in problems:
        sys.stderr.write(f"aimon: skipped {problem}\n")
    listed = _call("schedule/list", {}, "aimon schedule load")["routines"]
    scheduled = {r["origin"]: r for r in listed if r.get("origin")}
    fresh = [f for f in files if scheduled.get(str(f.path), {}).get("origin_item") != f.item]
    taken = {r["name"]: r.get("origin") for r in listed}
    clashes = [f.routine.name for f in fresh
               if f.routine.name in taken and taken[f.routine.name] != str(f.path)]
    if clashes:
        sys.stderr.write(f"aimon: a routine not from this file has the name: "
                         f"{', '.join(clashes)} (rename the file, or aimon schedule rm)\n")
        raise typer.Exit(1)
    trusted = trusted_items(folder)
    asking = [f for f in fresh if f.item not in trusted]
    for routine_file in fresh:
        mark = "new or changed" if routine_file in asking else "trusted"
        routine = routine_file.routine
        typer.echo(f"{routine.name} ({routine_file.path.relative_to(folder)}, {mark}): "
                   f"{describe(routine.trigger)}: {' '.join(routine.prompt.split())[:100]}")
    if asking and not yes:
        if not sys.stdin.isatty():
            sys.stderr.write("aimon: these run prompts by themselves with this project's "
                             "rules; trust them with --yes (or run this in a terminal)\n")
            raise typer.Exit(1)
        if not typer.confirm(f"Trust and schedule {len(asking)} routine file(s)? They run "
                             "their prompts by themselves with this project's rules"):
            raise typer.Exit(1)
    if asking:
        trust_files(folder, asking)
    from aimon_core.scheduling import routine_to_json

    for routine_file in fresh:
        _call("schedule/add", {"routine": routine_to_json(routine_file.routine),
                               "replace": True}, "aimon schedule load")
    root = str(folder / ".aimon" / "routines")
    gone = [r["name"] for origin, r in scheduled.items()
            if origin.startswith(root) and origin not in {str(f.path) for f in files}]
    for name in gone:
        _call("schedule/remove", {"name": name}, "aimon schedule load")
    typer.echo(f"{len(fresh)} scheduled, {len(files) - len(fresh)} unchanged, "
               f"{len(gone)} removed (their files are gone)")


def schedule_command(args: list[str]) -> int:
    """Run `aimon schedule ARGS`; return the exit status."""
    from aimon_cli._service_cli import run_app

    return run_app(schedule_app, args, "aimon schedule")
