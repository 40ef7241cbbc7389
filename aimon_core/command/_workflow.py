"""`/workflow` and `/goal`: run the project's workflows, and goals, in the session.

    /workflow                         the workflows this project has
    /workflow NAME [key=value ...]    run one (also: /workflow run NAME ...)
    /workflow runs                    the project's recent runs
    /workflow show RUN                one run: stages, tasks, state, cost, diffs
    /workflow resume RUN              run again what did not complete
    /goal --until "CHECK" GOAL        work toward GOAL until CHECK passes (or the budget ends)

A run belongs to the session's current turn: typed at the prompt, the command runs as a turn
of the session, so Ctrl-C (or Esc) stops every task, as it stops a turn. Its tasks ask their
questions in the session; their progress is on the session's event stream
(`WorkflowTaskChanged`). The workflow package is loaded only when one of these runs.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from aimon_core.command._registry import CommandError, CommandHost, CommandOutcome, SlashCommand

if TYPE_CHECKING:
    from aimon_core.live import LiveSession
    from aimon_core.workflow import RunRecord, WorkflowLibrary, WorkflowRunner

WORKFLOW_USAGE = "/workflow [NAME [key=value ...] | runs | show RUN | resume RUN]"
GOAL_USAGE = ('/goal --until "CHECK COMMAND" [--rounds N] [--tokens N] [--cost USD] '
              "[--time 30m] [--agent NAME] [--worktree] GOAL")
_WORDS = ("list", "run", "runs", "show", "resume")


class WorkflowCatalog(Protocol):
    """A runtime's workflows, as the commands use them (`runtime.RuntimeWorkflows`)."""

    @property
    def runner(self) -> WorkflowRunner:
        """Return the runtime's workflow runner."""
        ...

    def library(self) -> WorkflowLibrary:
        """Load the workflows there are now (blocking)."""
        ...


def workflow_commands(catalog: WorkflowCatalog) -> tuple[SlashCommand, ...]:
    """Return /workflow and /goal over a runtime's workflows."""

    async def workflow(args: str, host: CommandHost) -> CommandOutcome:
        words = _split(args)
        if not words or words[0] == "list":
            return await _list(catalog)
        match words:
            case ["runs", *rest]:
                return await _runs(catalog, host, rest)
            case ["show", run_id]:
                return await _show(catalog, host, run_id)
            case ["resume", run_id]:
                return await _in_turn(host, f"/workflow resume {run_id}",
                                      lambda live: _resume(catalog, live, run_id))
            case ["run", name, *pairs] | [name, *pairs] if name not in _WORDS:
                inputs = parse_inputs(pairs)
                return await _in_turn(host, f"/workflow {args}",
                                      lambda live: _run(catalog, live, name, inputs))
            case _:
                raise CommandError(f"cannot read {args!r}")

    async def goal(args: str, host: CommandHost) -> CommandOutcome:
        from aimon_core.workflow import GoalUsageError, parse_goal

        try:
            request = parse_goal(args)
        except GoalUsageError as exc:
            raise CommandError(str(exc)) from None

        async def go(live: LiveSession) -> CommandOutcome:
            return await _outcome_of(catalog.runner.run(
                request.pipeline(), project_root=live.project_root,
                inputs={"goal": request.goal}, parent=live.command_turn()))

        return await _in_turn(host, f"/goal {args}", go)

    return (
        SlashCommand(name="workflow", description="Run a workflow; list, show or resume runs",
                     run=workflow, usage=WORKFLOW_USAGE, aliases=("workflows",)),
        SlashCommand(name="goal", description="Work toward a goal until its check passes",
                     run=goal, usage=GOAL_USAGE),
    )


def _split(args: str) -> list[str]:
    try:
        return shlex.split(args)
    except ValueError as exc:
        raise CommandError(f"cannot read the arguments: {exc}") from None


def parse_inputs(pairs: list[str]) -> dict[str, str]:
    """Return `key=value` words as inputs; CommandError for a word without `=`."""
    inputs: dict[str, str] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise CommandError(f"inputs are key=value, not {pair!r}")
        inputs[key.strip()] = value
    return inputs


async def _in_turn(host: CommandHost, text: str,
                   work: Callable[[LiveSession], Awaitable[CommandOutcome]]) -> CommandOutcome:
    """Do `work` in a turn of the session: now, if a turn runs (print mode, a turn's own
    command); else as a new turn of `text`, which the session's interrupt (Ctrl-C) stops."""
    live = await host.live_session()
    if live.status().running_turn is not None:
        return await work(live)
    turn = live.submit_async(text)
    try:
        result = await turn
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if current is not None and current.cancelling():
            raise
        return CommandOutcome.error("Interrupted: every task of the run was stopped (resume "
                                    "it with /workflow resume RUN; /workflow runs lists them).")
    from aimon_core.agent import StopCause

    return CommandOutcome(text=result.text, is_error=result.stop is StopCause.COMMAND_FAILED)


async def _list(catalog: WorkflowCatalog) -> CommandOutcome:
    library = await asyncio.to_thread(catalog.library)
    lines = []
    for entry in library.entries():
        pipeline = entry.pipeline
        inputs = " ".join(f"{i.name}=…" if i.default is None else f"[{i.name}=…]"
                          for i in pipeline.inputs)
        lines.append(f"  {pipeline.name:<20} {entry.layer:<8} "
                     f"{' '.join(pipeline.description.split()) or entry.path}"
                     + (f"\n      inputs: {inputs}" if inputs else ""))
    lines.extend(f"  not loaded: {f.path}: {f.message}" for f in library.failures)
    if not library.entries():
        lines.insert(0, "No workflows in this project yet: add one as .aimon/workflows/NAME.yaml "
                        "(see the README's Workflows section).")
    else:
        lines.insert(0, f"{len(library.entries())} workflows (run one with /workflow NAME):")
    return CommandOutcome.message("\n".join(lines))


async def _runs(catalog: WorkflowCatalog, host: CommandHost, rest: list[str]
                ) -> CommandOutcome:
    from aimon_core.workflow import runs_lines

    limit = int(rest[0]) if rest and rest[0].isdigit() else 10
    live = await host.live_session()
    store = catalog.runner.store
    runs = await asyncio.to_thread(store.list_runs, str(live.project_root), limit)
    if not runs:
        return CommandOutcome.message("No workflow runs in this project yet.")
    return CommandOutcome.message("\n".join(["Recent runs (newest first):", *runs_lines(runs)]))


async def _show(catalog: WorkflowCatalog, host: CommandHost, run_id: str) -> CommandOutcome:
    from aimon_core.workflow import RunStoreError, find_run, run_tree

    store = catalog.runner.store
    live = await host.live_session()
    try:
        wanted = await asyncio.to_thread(find_run, store, run_id, str(live.project_root))
        record = await asyncio.to_thread(store.load, wanted)
    except RunStoreError as exc:
        return CommandOutcome.error(str(exc))
    held = any(h.id == record.id for h in catalog.runner.running())
    return CommandOutcome.message(run_tree(record, held=held or None))


async def _run(catalog: WorkflowCatalog, live: LiveSession, name: str,
               inputs: dict[str, str]) -> CommandOutcome:
    library = await asyncio.to_thread(catalog.library)
    pipeline = library.get(name)
    if pipeline is None:
        known = ", ".join(library.names()) or "none"
        return CommandOutcome.error(f"No workflow named {name!r}. Workflows: {known}.")
    return await _outcome_of(catalog.runner.run(
        pipeline, project_root=live.project_root, inputs=inputs, parent=live.command_turn()))


async def _resume(catalog: WorkflowCatalog, live: LiveSession, run_id: str) -> CommandOutcome:
    from aimon_core.workflow import RunStoreError, find_run

    try:
        wanted = await asyncio.to_thread(find_run, catalog.runner.store, run_id,
                                         str(live.project_root))
    except RunStoreError as exc:
        return CommandOutcome.error(str(exc))
    return await _outcome_of(catalog.runner.resume_run(wanted, parent=live.command_turn(),
                                                       project_root=live.project_root))


async def _outcome_of(running: Awaitable[RunRecord]) -> CommandOutcome:
    """Wait for a run; return its tree and final outputs, or why it could not start."""
    from aimon_core.agent import RunState
    from aimon_core.workflow import RunStoreError, WorkflowError, final_outputs, run_tree

    try:
        record = await running
    except (WorkflowError, RunStoreError) as exc:
        return CommandOutcome.error(str(exc))
    tree = run_tree(record, diffs=False)
    outputs = final_outputs(record)
    text = f"{tree}\n\n{outputs}" if outputs else tree
    return CommandOutcome(text=text, is_error=record.state is not RunState.COMPLETED)
