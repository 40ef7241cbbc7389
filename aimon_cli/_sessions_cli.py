"""`aimon sessions list|show|delete` and the helpers that find sessions for --resume."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from aimon_cli._store import default_store, resolve_session_id
from aimon_core.command import format_when, plural
from aimon_core.session import (
    SessionError,
    SessionStore,
    SessionSummary,
    parse_session_id,
)

sessions_app = typer.Typer(add_completion=False, rich_markup_mode=None,
                           help="List, show and delete stored sessions.",
                           context_settings={"help_option_names": ["-h", "--help"]})
WHEN_WIDTH = len("Nov 28 2025 14:05")


def summary_line(item: SessionSummary, now: datetime | None = None) -> str:
    """Return one listing line (the time as `format_when` writes it)."""
    title = item.title or "(no prompt yet)"
    at = format_when(item.updated_at, now)
    count = f"{item.message_count} message{'s' * (item.message_count != 1)}"
    return f"{item.id}  {at:>{WHEN_WIDTH}}  {count:>13}  {title}"


@sessions_app.command("list")
def list_sessions(
    all_projects: Annotated[bool, typer.Option("--all", help="Sessions of every project.")] = False,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1)] = 20,
) -> None:
    """List recent sessions of this project (newest first)."""
    store = default_store()
    root = None if all_projects else str(Path.cwd().resolve())
    items = store.records.list_sessions(root, limit=limit)
    if not items:
        typer.echo("No sessions yet." if all_projects else
                   "No sessions in this project yet (try --all).")
        return
    for item in items:
        line = summary_line(item)
        typer.echo(f"{line}  [{item.project_root}]" if all_projects else line)


@sessions_app.callback(invoke_without_command=True)
def _sessions(ctx: typer.Context) -> None:
    """List, show and delete stored sessions (alone: list this project's)."""
    if ctx.invoked_subcommand is None:
        list_sessions(all_projects=False, limit=20)


@sessions_app.command("show")
def show_session(session_id: str) -> None:
    """Print a session's transcript."""
    from aimon_cli._print import message_json

    store = default_store()
    try:
        record = store.records.load(parse_session_id(_full_id(store, session_id)))
    except SessionError as exc:
        sys.stderr.write(f"aimon: {exc}\n")
        raise typer.Exit(1) from None
    totals = record.totals
    typer.echo(f"session {record.id}  agent {record.agent_ref}  project {record.project_root}")
    typer.echo(f"{plural(totals.turns, 'turn')}, {plural(totals.iterations, 'iteration')}, "
               f"{totals.input_tokens + totals.output_tokens:,} tokens, ${totals.cost_usd:.4f}")
    for warning in record.load_warnings:
        typer.echo(f"warning: {warning}", err=True)
    for message in record.transcript.messages:
        for block in message_json(message)["content"]:
            typer.echo(_block_line(message.role, block))


def _full_id(store: SessionStore, text: str) -> str:
    """Return the id a short id names (as /resume takes it); exit 2 with the near ones."""
    try:
        return resolve_session_id(store, text, Path.cwd())
    except ValueError as exc:
        sys.stderr.write(f"aimon: {exc}\n")
        raise typer.Exit(2) from None


def _block_line(role: str, block: dict[str, object]) -> str:
    kind = block.get("type")
    if kind == "text":
        return f"\n{role}> {block['text']}"
    if kind == "tool_use":
        return f"  [tool {block['name']}] {json.dumps(block['input'], ensure_ascii=False)[:200]}"
    if kind == "tool_result":
        text = str(block.get("content", ""))
        first = text.splitlines()[0][:160] if text else ""
        mark = "error" if block.get("is_error") else "result"
        return f"  [{mark}] {first}" + (" …" if len(text) > len(first) else "")
    if kind == "thinking":
        return "  [thinking]"
    return f"  [{kind}]"


@sessions_app.command("delete")
def delete_session(session_id: str) -> None:
    """Delete a stored session (refused while another aimon holds it)."""
    store = default_store()
    try:
        sid = parse_session_id(_full_id(store, session_id))
        record = store.records.load(sid)
        with store.leases.acquire(sid, "aimon sessions delete") as lease:
            store.records.delete(sid, lease=lease)
    except SessionError as exc:
        sys.stderr.write(f"aimon: {exc}\n")
        raise typer.Exit(1) from None
    from aimon_core.checkpoint import delete_session_checkpoints
    from aimon_core.session import user_data_dir

    had = delete_session_checkpoints(user_data_dir(), Path(record.project_root), sid)
    typer.echo(f"Deleted session {sid}{' and its checkpoints' if had else ''}.")
