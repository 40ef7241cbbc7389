"""`aimon memory list|add|accept|edit|rm [--json]`: what aimon remembers for this project."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from aimon_core.memory import MemoryBook, MemoryScope, Observation, default_store, owner_for

memory_app = typer.Typer(add_completion=False, rich_markup_mode=None,
                         help="List, add, accept and forget what aimon remembers.",
                         context_settings={"help_option_names": ["-h", "--help"]})

AgentOption = Annotated[str, typer.Option("--agent", help="Whose agent-scope memory.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON.")]


def _book(agent: str) -> MemoryBook:
    return MemoryBook(default_store(), owner_for(Path.cwd().resolve(), agent))


def _value(entry: Observation) -> dict[str, Any]:
    return {k: (v.value if hasattr(v, "value") else v)
            for k, v in dataclasses.asdict(entry).items()}


def _say(entries: tuple[Observation, ...], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps([_value(e) for e in entries], indent=2))
        return
    for e in entries:
        typer.echo(f"{e.id}  {e.status.value:<8}  {e.scope.value:<7}  {e.source.value:<9}  "
                   f"{e.text}")


@memory_app.command("list")
def list_memory(agent: AgentOption = "default", as_json: JsonOption = False,
                inbox: Annotated[bool, typer.Option("--inbox", help="Proposals only.")] = False
                ) -> None:
    """List what is remembered for this project (every scope) and the proposals."""
    book = _book(agent)
    entries = book.inbox() if inbox else book.store.list(book.owner)
    if not entries and not as_json:
        typer.echo("Nothing remembered yet.")
        return
    _say(entries, as_json)


@memory_app.command("add")
def add_memory(text: Annotated[list[str], typer.Argument(help="What to remember.")],
               scope: Annotated[str, typer.Option("--scope", help="project, user or agent")
                                ] = "project",
               agent: AgentOption = "default", as_json: JsonOption = False) -> None:
    """Remember TEXT (accepted: you wrote it)."""
    try:
        entry = _book(agent).remember(" ".join(text), MemoryScope(scope))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    _say((entry,), as_json)


@memory_app.command("accept")
def accept_memory(ids: Annotated[list[str], typer.Argument(help="Proposal ids, or all.")],
                  agent: AgentOption = "default", as_json: JsonOption = False) -> None:
    """Accept proposals: from now on they are in the model's context."""
    book = _book(agent)
    wanted = [o.id for o in book.inbox()] if ids == ["all"] else ids
    done = tuple(o for i in wanted if (o := book.accept(i)) is not None)
    _say(done, as_json)
    missing = sorted(set(wanted) - {o.id for o in done})
    if missing:
        typer.echo(f"aimon: no proposal {', '.join(missing)}", err=True)
        raise typer.Exit(1)


@memory_app.command("edit")
def edit_memory(observation_id: str, text: list[str], agent: AgentOption = "default") -> None:
    """Replace the text of one observation."""
    book = _book(agent)
    if book.store.update(book.owner, observation_id, text=" ".join(text)) is None:
        typer.echo(f"aimon: nothing remembered as {observation_id}", err=True)
        raise typer.Exit(1)


@memory_app.command("rm")
def remove_memory(ids: list[str], agent: AgentOption = "default",
                  as_json: JsonOption = False) -> None:
    """Forget observations (accepted or proposed)."""
    book = _book(agent)
    missing = [i for i in ids if not book.store.remove(book.owner, i)]
    if as_json:
        typer.echo(json.dumps({"removed": [i for i in ids if i not in missing],
                               "missing": missing}))
    if missing:
        typer.echo(f"aimon: nothing remembered as {', '.join(missing)}", err=True)
        raise typer.Exit(1)
