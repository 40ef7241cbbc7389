"""`aimon knowledge add PATH|URL... | index | search QUERY | list`: the project's knowledge."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated

import typer

from aimon_core.knowledge import IndexReport, KnowledgeBase, project_knowledge

knowledge_app = typer.Typer(add_completion=False, rich_markup_mode=None,
                            help="Index project documentation and notes; search them.",
                            context_settings={"help_option_names": ["-h", "--help"]})


def _base() -> KnowledgeBase:
    return project_knowledge(Path.cwd())


def _report(report: IndexReport) -> None:
    typer.echo(f"Indexed {report.documents} documents, {report.passages} passages.")
    for note in report.skipped:
        typer.echo(f"  skipped {note}", err=True)


@knowledge_app.command("add")
def add(sources: Annotated[list[str], typer.Argument(help="Files, folders or URLs.")]) -> None:
    """Add files, folders or URLs to this project's knowledge and index them."""
    _report(asyncio.run(_base().add(tuple(sources))))


@knowledge_app.command("index")
def index() -> None:
    """Read every source again (none added: README, docs/ and .aimon/wiki/)."""
    _report(asyncio.run(_base().index()))


@knowledge_app.command("search")
def search(query: Annotated[list[str], typer.Argument(help="Words to look for.")],
           limit: Annotated[int, typer.Option("--limit", "-n", min=1)] = 5,
           as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """Show the passages KnowledgeSearch would give the model."""
    found = _base().store.search(" ".join(query), limit)
    if as_json:
        typer.echo(json.dumps([{"source": p.source, "line": p.line, "text": p.text}
                               for p in found], indent=2))
        return
    for passage in found:
        typer.echo(f"{passage.source}:{passage.line}\n{passage.text}\n")
    if not found:
        typer.echo("No passage matches.")


@knowledge_app.command("list")
def list_sources() -> None:
    """List the sources added and the documents indexed."""
    base = _base()
    typer.echo("Added: " + (", ".join(base.recorded()) or "(none: index reads the defaults)"))
    for source in base.store.sources():
        typer.echo(f"  {source}")
