"""`aimon skills list [--json]`, `aimon agents list [--json]`: what a project loads, and where."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from aimon_core.skill import ListingEntry, LoadFailure

_SETTINGS = {"help_option_names": ["-h", "--help"]}
skills_app = typer.Typer(add_completion=False, rich_markup_mode=None, context_settings=_SETTINGS,
                         help="List the skills this project loads.")
agents_app = typer.Typer(add_completion=False, rich_markup_mode=None, context_settings=_SETTINGS,
                         help="List the subagents this project loads.")



@skills_app.callback()
def _skills() -> None:
    """List the skills this project loads."""  # a group, so that `list` is a subcommand


@agents_app.callback()
def _agents() -> None:
    """List the subagents this project loads."""


JsonFlag = Annotated[bool, typer.Option("--json", help="One JSON document, for scripts.")]


def _entry_json(entry: ListingEntry) -> dict[str, object]:
    return {"name": entry.name, "description": entry.description, "layer": entry.layer.value,
            "path": str(entry.path), "disabled": entry.disabled,
            "warnings": list(entry.warnings), "shadows": [str(p) for p in entry.shadows]}


def _failure_json(failure: LoadFailure) -> dict[str, object]:
    return {"path": str(failure.path), "layer": failure.layer.value, "message": failure.message}


def _show(kind: str, entries: tuple[ListingEntry, ...], failures: tuple[LoadFailure, ...],
          as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps({kind: [_entry_json(e) for e in entries],
                               "failures": [_failure_json(f) for f in failures]}, indent=2))
        return
    from aimon_core.runtime import listing_text

    typer.echo(listing_text(kind, entries, failures))


@skills_app.command("list")
def list_skills(as_json: JsonFlag = False) -> None:
    """List the skills of this project: name, layer, path and warnings."""
    from aimon_core.skill import BUNDLED_DIR, default_roots, load_skills

    root = Path.cwd().resolve()
    # Listing never writes: the built-ins are read from the last copy, or from the package.
    bundled = root / BUNDLED_DIR
    registry = load_skills(default_roots(root, bundled_dir=bundled if bundled.is_dir() else None))
    _show("skills", registry.listing(), registry.failures, as_json)


@agents_app.command("list")
def list_agents(as_json: JsonFlag = False) -> None:
    """List the subagents of this project: name, layer, path and warnings."""
    from aimon_core.subagent import default_agent_roots, load_agents

    registry = load_agents(default_agent_roots(Path.cwd().resolve()))
    _show("agents", registry.listing(), registry.failures, as_json)
