"""`aimon store info|migrate`: which store holds the sessions, and moving them to another."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from aimon_core.service import SessionInbox
    from aimon_core.stores import StoreBackend, StoreChoice

store_app = typer.Typer(add_completion=False, rich_markup_mode=None,
                        help="Where sessions are stored, and copying them to another store.",
                        context_settings={"help_option_names": ["-h", "--help"]})


@store_app.command("info")
def info() -> None:
    """Say which store is in use (--store, AIMON_STORE_URL, or settings' store.url)."""
    from aimon_core.stores import store_url

    choice = store_url()
    for problem in choice.problems:
        typer.echo(f"aimon: {problem}", err=True)
    typer.echo(f"store: {choice.name}")
    backend = _open(choice)
    try:
        sessions = backend.store.records.list_sessions(None, limit=2**31 - 1)
        typer.echo(f"sessions: {len(sessions)}")
    finally:
        backend.close()


@store_app.command("migrate")
def migrate(
    to: Annotated[str, typer.Option("--to", metavar="URL",
                                    help="the store to copy into (postgresql://..., file:///dir)")],
    source: Annotated[str | None, typer.Option(
        "--from", metavar="URL", help="the store to copy from (default: the one in use)")] = None,
) -> None:
    """Copy every session into another store, and check each copy by reading it back."""
    from aimon_core.service import ServicePathError
    from aimon_core.session import SessionError
    from aimon_core.stores import (
        CopyMismatchError,
        StoreChoice,
        StoreError,
        copy_sessions,
        move_inbox,
        store_url,
    )

    choice = StoreChoice(url=source) if source is not None else store_url()
    target_choice = StoreChoice(url=to)
    if choice.name == target_choice.name:
        typer.echo("aimon: --to names the store sessions are copied from", err=True)
        raise typer.Exit(2)
    origin = _open(choice)
    try:
        target = _open(target_choice)
    except typer.Exit:
        origin.close()
        raise
    try:
        report = copy_sessions(origin.store.records, target.store.records,
                               on_copied=lambda session_id: typer.echo(f"copied {session_id}"))
        moved = move_inbox(_inbox(origin, target=False), _inbox(target, target=True))
    except (SessionError, CopyMismatchError, StoreError, ServicePathError) as exc:
        typer.echo(f"aimon: {exc}", err=True)
        raise typer.Exit(1) from None
    finally:
        target.close()
        origin.close()
    typer.echo(f"{len(report.copied)} sessions copied ({report.messages} messages), checked; "
               f"{len(report.skipped)} already there and equal; {moved} inbox items not run "
               f"yet moved; from {choice.name} to {target_choice.name}")


def _open(choice: StoreChoice) -> StoreBackend:
    """Open a store, or tell why not and leave with status 1."""
    from aimon_core.stores import StoreError, open_backend

    try:
        return open_backend(choice)
    except StoreError as exc:
        typer.echo(f"aimon: {exc}", err=True)
        raise typer.Exit(1) from None


def _inbox(backend: StoreBackend, *, target: bool) -> SessionInbox:
    """Return a store's inbox: its own, or the embedded service's SQLite one (made for a
    target; none yet on the source side means nothing waits there)."""
    from aimon_core.service import MemoryInbox, ServicePaths, SQLiteInbox

    if backend.service is not None:
        return backend.service.inbox
    paths = ServicePaths.default()
    if target:
        paths.prepare()
    elif not paths.database.is_file():
        return MemoryInbox()
    return SQLiteInbox(paths.database)
