"""`aimon workflow run|list|runs|show|resume`: workflows from the command line.

`run` and `resume` are print mode: nobody is there to answer a question, so a task's tool call
(or a check, or a merge) that would ask is refused; the refusals are listed at the end with the
flags that would allow them. Progress goes to stderr, the final outputs to stdout (or, with
`--output-format json`, the run record). Ctrl-C stops every task; the run stays resumable.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from aimon_core.agent import AgentEvent, ApprovalRefused, Turn
    from aimon_core.runtime import AgentAssembly, RuntimeFlags
    from aimon_core.workflow import RunRecord, WorkflowBudget

    Start = Callable[[AgentAssembly, Turn], Awaitable[RunRecord]]

workflow_app = typer.Typer(add_completion=False, rich_markup_mode=None,
                           help="Run workflows, and list, show and resume their runs.",
                           context_settings={"help_option_names": ["-h", "--help"]})

JsonFlag = Annotated[bool, typer.Option("--json", help="One JSON document, for scripts.")]
Provider = Annotated[str | None, typer.Option("--provider", help="anthropic or openai.")]
Model = Annotated[str | None, typer.Option("--model", help="The model to use.")]
BaseURL = Annotated[str | None, typer.Option("--base-url", help="An endpoint of your own.")]
Allowed = Annotated[list[str] | None, typer.Option(
    "--allowed-tools", "--allowedTools", help="Rules that allow tool calls (no questions).")]
Disallowed = Annotated[list[str] | None, typer.Option(
    "--disallowed-tools", "--disallowedTools", help="Rules that deny tool calls.")]
Mode = Annotated[str | None, typer.Option("--permission-mode", help="default, acceptEdits, "
                                                                    "plan, bypassPermissions.")]
Sandbox = Annotated[bool, typer.Option("--sandbox", help="Run commands in the OS sandbox.")]
Format = Annotated[str, typer.Option("--output-format", help="text (the final outputs) or json "
                                                             "(the run record).")]
Tokens = Annotated[str | None, typer.Option("--tokens", help="Token budget of the run (200k).")]
Cost = Annotated[str | None, typer.Option("--cost", help="Cost budget of the run, in dollars.")]
Time = Annotated[str | None, typer.Option("--time", help="Time budget of the run (30m).")]
Concurrency = Annotated[int, typer.Option("--concurrency", min=1,
                                          help="How many tasks may run at once.")]
EXIT_INTERRUPTED = 130


def _fail(message: str, code: int = 1) -> typer.Exit:
    sys.stderr.write(f"aimon: {message}\n")
    return typer.Exit(code)


@workflow_app.callback()
def _workflow() -> None:
    """Run workflows, and list, show and resume their runs."""


@dataclass(slots=True, kw_only=True)
class _Options:
    """What `run` and `resume` share: how to build the runtime, the output, the budget."""

    flags: RuntimeFlags
    output_format: str
    budget: WorkflowBudget | None
    concurrency: int
    refused: list[ApprovalRefused] = field(default_factory=list)
    run_id: str = ""


def _options(provider: str | None, model: str | None, base_url: str | None,
             allowed: list[str] | None, disallowed: list[str] | None, mode: str | None,
             sandbox: bool, output_format: str, tokens: str | None, cost: str | None,
             time: str | None, concurrency: int) -> _Options:
    from aimon_cli._commands import _split_rules
    from aimon_core.runtime import RuntimeFlags
    from aimon_core.workflow import WorkflowDefinitionError, parse_budget

    if output_format not in ("text", "json"):
        raise _fail(f"--output-format is text or json, not {output_format!r}", 2)
    budget = None
    if tokens is not None or cost is not None or time is not None:
        try:
            budget = parse_budget(tokens=tokens, cost=cost, time=time, source="--budget")
        except WorkflowDefinitionError as exc:
            raise _fail(f"--{exc.where}: {exc.reason}", 2) from None
    flags = RuntimeFlags(provider=provider, model=model, base_url=base_url,
                         allowed=tuple(_split_rules(allowed)),
                         disallowed=tuple(_split_rules(disallowed)), permission_mode=mode,
                         sandbox=sandbox)
    return _Options(flags=flags, output_format=output_format, budget=budget,
                    concurrency=concurrency)


@workflow_app.command("run")
def run_workflow(
    name: Annotated[str, typer.Argument(help="The workflow (aimon workflow list).")],
    inputs: Annotated[list[str] | None, typer.Option("--input", "-i",
                                                     help="An input: key=value.")] = None,
    output_format: Format = "text", provider: Provider = None, model: Model = None,
    base_url: BaseURL = None, allowed_tools: Allowed = None, disallowed_tools: Disallowed = None,
    permission_mode: Mode = None, sandbox: Sandbox = False, tokens: Tokens = None,
    cost: Cost = None, time: Time = None, concurrency: Concurrency = 4,
) -> None:
    """Run a workflow of this project and print its final outputs."""
    from aimon_core.command import CommandError, parse_inputs

    try:
        given = parse_inputs(list(inputs or ()))
    except CommandError as exc:
        raise _fail(f"--input: {exc}", 2) from None
    options = _options(provider, model, base_url, allowed_tools, disallowed_tools,
                       permission_mode, sandbox, output_format, tokens, cost, time, concurrency)

    async def start(assembly: AgentAssembly, turn: Turn) -> RunRecord:
        assert assembly.workflows is not None
        library = await asyncio.to_thread(assembly.workflows.library)
        pipeline = library.get(name)
        if pipeline is None:
            known = ", ".join(library.names()) or "none (add .aimon/workflows/NAME.yaml)"
            raise _fail(f"no workflow named {name!r}; workflows: {known}", 2)
        if options.budget is not None:
            pipeline = replace(pipeline, budget=options.budget)
        return await assembly.workflows.runner.run(pipeline, project_root=assembly.project_root,
                                                   inputs=given, parent=turn)

    raise typer.Exit(_drive(options, start))


@workflow_app.command("resume")
def resume_workflow(
    run_id: Annotated[str, typer.Argument(help="The run (its id, or the end of it).")],
    output_format: Format = "text", provider: Provider = None, model: Model = None,
    base_url: BaseURL = None, allowed_tools: Allowed = None, disallowed_tools: Disallowed = None,
    permission_mode: Mode = None, sandbox: Sandbox = False, tokens: Tokens = None,
    cost: Cost = None, time: Time = None, concurrency: Concurrency = 4,
) -> None:
    """Run again every task of a run that did not complete (completed ones are kept)."""
    options = _options(provider, model, base_url, allowed_tools, disallowed_tools,
                       permission_mode, sandbox, output_format, tokens, cost, time, concurrency)
    wanted = _find(run_id)

    async def start(assembly: AgentAssembly, turn: Turn) -> RunRecord:
        assert assembly.workflows is not None
        return await assembly.workflows.runner.resume_run(
            wanted, parent=turn, budget=options.budget, project_root=assembly.project_root)

    raise typer.Exit(_drive(options, start))


def _drive(options: _Options, start: Start) -> int:
    """Build the project's runtime, run `start` on it, and write what happened."""
    from aimon_cli._commands import notice
    from aimon_core.agent import Turn
    from aimon_core.runtime import Application, RuntimeSetupError
    from aimon_core.workflow import RunStoreError, WorkflowError

    root = Path.cwd().resolve()

    async def go() -> tuple[RunRecord, AgentAssembly]:
        async with Application(max_workflow_tasks=options.concurrency) as app:
            assembly = await app.runtimes(root, options.flags, on_notice=notice).get()
            pending = assembly.settings.pending_trust
            if pending is not None:
                notice("this folder's settings are not trusted yet, so these are held back: "
                       + "; ".join(pending.what) + ". Run aimon interactively here once to "
                       "trust them.")
            turn = Turn(emit=lambda event: _on_event(event, options))
            return await start(assembly, turn), assembly

    try:
        record, assembly = asyncio.run(go())
    except (WorkflowError, RunStoreError) as exc:
        raise _fail(str(exc)) from None
    except RuntimeSetupError as exc:
        raise _fail(str(exc), 2) from None
    except KeyboardInterrupt:
        again = f" (resume it: aimon workflow resume {options.run_id})" if options.run_id else ""
        sys.stderr.write(f"aimon: interrupted: every task was stopped{again}\n")
        return EXIT_INTERRUPTED
    return _report(record, assembly, options)


def _on_event(event: AgentEvent, options: _Options) -> None:
    """Note refusals; tell each task's change of state (and warnings) on stderr."""
    from aimon_cli._workflow_view import progress_line
    from aimon_core.agent import ApprovalRefused, Notice, WorkflowRunChanged, WorkflowTaskChanged

    match event:
        case ApprovalRefused():
            options.refused.append(event)
        case WorkflowRunChanged() | WorkflowTaskChanged():
            if isinstance(event, WorkflowRunChanged):
                options.run_id = event.run_id
            line = progress_line(event)
            if line is not None and options.output_format == "text":
                sys.stderr.write(f"aimon: {line}\n")
        case Notice(text=text, level=level) if level != "info" or "check" in text:
            sys.stderr.write(f"aimon: {text}\n")
        case _:
            pass


def _report(record: RunRecord, assembly: AgentAssembly, options: _Options) -> int:
    from aimon_cli._print import refusal_summary
    from aimon_core.agent import RunState
    from aimon_core.workflow import final_outputs, record_json

    if options.output_format == "json":
        data = record_json(record)
        data["permission_denials"] = [
            {"tool_name": r.tool_name, "tool_use_id": r.tool_use_id,
             "tool_input": dict(r.tool_input)} for r in options.refused]
        sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
    elif (outputs := final_outputs(record)):
        sys.stdout.write(outputs.rstrip() + "\n")
    if record.state is not RunState.COMPLETED:
        sys.stderr.write(f"aimon: run {record.id} {record.state.value}: {record.reason}\n"
                         f"aimon: see it with: aimon workflow show {record.id}; go on with: "
                         f"aimon workflow resume {record.id}\n")
    if options.refused:
        sys.stderr.write(refusal_summary(options.refused, assembly.runtime.tools,
                                         assembly.policy))
    return 0 if record.state is RunState.COMPLETED else 1


def _find(text: str) -> str:
    from aimon_core.workflow import RunNotFoundError, default_run_store, find_run

    try:
        return find_run(default_run_store(), text, str(Path.cwd().resolve()))
    except RunNotFoundError as exc:
        raise _fail(str(exc), 2) from None


@workflow_app.command("list")
def list_workflows(as_json: JsonFlag = False) -> None:
    """List the workflows of this project (and your own): name, layer, inputs, stages."""
    from aimon_core.workflow import load_workflows

    library = load_workflows(Path.cwd().resolve())
    if as_json:
        typer.echo(json.dumps({
            "workflows": [{"name": e.pipeline.name, "description": e.pipeline.description,
                           "layer": e.layer, "path": str(e.path),
                           "inputs": [{"name": i.name, "default": i.default}
                                      for i in e.pipeline.inputs],
                           "stages": [s.name for s in e.pipeline.stages]}
                          for e in library.entries()],
            "failures": [{"path": str(f.path), "layer": f.layer, "message": f.message}
                         for f in library.failures]}, indent=2))
        return
    if not library.entries():
        typer.echo("No workflows yet: add one as .aimon/workflows/NAME.yaml.")
    for entry in library.entries():
        pipeline = entry.pipeline
        inputs = ", ".join(i.name + ("" if i.default is None else f"={i.default}")
                           for i in pipeline.inputs)
        typer.echo(f"{pipeline.name:<20} {entry.layer:<8} {entry.path}")
        about = " ".join(pipeline.description.split())
        stages = " → ".join(s.name for s in pipeline.stages)
        typer.echo(f"    {about + ' · ' if about else ''}stages: {stages}"
                   + (f" · inputs: {inputs}" if inputs else ""))
    for failure in library.failures:
        typer.echo(f"not loaded: {failure.path}: {failure.message}", err=True)


@workflow_app.command("runs")
def list_runs(
    as_json: JsonFlag = False,
    all_projects: Annotated[bool, typer.Option("--all", help="Runs of every project.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1)] = 20,
) -> None:
    """List recent runs of this project (newest first)."""
    from aimon_core.workflow import default_run_store, runs_lines

    root = None if all_projects else str(Path.cwd().resolve())
    runs = default_run_store().list_runs(root, limit)
    if as_json:
        typer.echo(json.dumps([{
            "id": s.id, "workflow": s.workflow, "project": s.project_root,
            "state": s.state.value, "reason": s.reason, "created_at": s.created_at.isoformat(),
            "updated_at": s.updated_at.isoformat(), "tasks": s.tasks,
            "completed": s.completed, "cost_usd": round(s.cost_usd, 6)} for s in runs],
            indent=2))
        return
    if not runs:
        typer.echo("No workflow runs yet." if all_projects else
                   "No workflow runs in this project yet (try --all).")
    for line in runs_lines(runs):
        typer.echo(line)


@workflow_app.command("show")
def show_run(
    run_id: Annotated[str, typer.Argument(help="The run (its id, or the end of it).")],
    as_json: JsonFlag = False,
) -> None:
    """Show a run: its stages and tasks with state, time, cost, and each worktree's diff."""
    from aimon_core.workflow import (
        RunLockedError,
        RunStoreError,
        default_run_store,
        merge_command,
        record_json,
        run_tree,
        unmerged_branches,
    )

    store = default_run_store()
    wanted = _find(run_id)
    try:
        record = store.load(wanted)  # type: ignore[arg-type]
    except RunStoreError as exc:
        raise _fail(str(exc)) from None
    try:
        with store.acquire(record.id, "aimon workflow show"):
            held = False
    except RunLockedError:
        held = True
    if as_json:
        typer.echo(json.dumps({**record_json(record), "running_now": held}, ensure_ascii=False,
                              indent=2, default=str))
        return
    typer.echo(run_tree(record, held=held))
    for warning in record.load_warnings:
        typer.echo(f"warning: {warning}", err=True)
    branches = unmerged_branches(record)
    if branches:
        typer.echo("\nTo apply a task's changes yourself, in the project:")
        for branch in branches:
            typer.echo(f"  {merge_command(branch)}")
