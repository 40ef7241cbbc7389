"""`aimon mcp list|get|add|remove|login|logout`: the MCP servers of the settings and `.mcp.json`.

Scopes, as Claude Code's: `local` (this project, only you: .aimon/settings.local.json, the
default), `project` (shared with the team: .mcp.json), `user` (every project: the user
settings.json). Each edit re-reads the file and changes only its `mcpServers` entry.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from aimon_core.config import (
    LOCAL_SETTINGS_FILE,
    MCP_JSON_FILE,
    PROJECT_DIR,
    SETTINGS_FILE,
    MCPServerConfig,
    SettingsError,
    check_server,
)
from aimon_core.filesystem import write_atomic

mcp_app = typer.Typer(add_completion=False, rich_markup_mode=None,
                      help="List, add and remove MCP servers.",
                      context_settings={"help_option_names": ["-h", "--help"]})


class Scope(StrEnum):
    """Where a server entry is written."""

    LOCAL = "local"
    PROJECT = "project"
    USER = "user"


def scope_file(scope: Scope, project_root: Path) -> Path:
    """Return the file that holds the servers of `scope`."""
    from aimon_core.session import user_config_dir

    match scope:
        case Scope.LOCAL:
            return project_root / PROJECT_DIR / LOCAL_SETTINGS_FILE
        case Scope.PROJECT:
            return project_root / MCP_JSON_FILE
        case Scope.USER:
            return user_config_dir() / SETTINGS_FILE


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return {}
    data = json.loads(text) if text.strip() else {}
    if not isinstance(data, dict):
        raise typer.BadParameter(f"{path} does not hold a JSON object")
    return data


def _servers_of(path: Path) -> dict[str, Any]:
    servers = _read(path).get("mcpServers", {})
    return servers if isinstance(servers, dict) else {}


def _entries(root: Path) -> list[tuple[Scope, str, MCPServerConfig]]:
    found: list[tuple[Scope, str, MCPServerConfig]] = []
    for scope in (Scope.USER, Scope.PROJECT, Scope.LOCAL):
        path = scope_file(scope, root)
        for name, entry in _servers_of(path).items():
            try:
                found.append((scope, name, check_server(entry, key=f"mcpServers.{name}",
                                                        path=path, display=str(path))))
            except SettingsError as exc:
                typer.echo(f"warning: {exc}", err=True)
    return found


def _edit(path: Path, change: Any) -> None:
    # Re-read right before writing: other tools edit these files too; keep every other key.
    data = _read(path)
    servers = data.get("mcpServers")
    if not isinstance(servers, dict):
        servers = {}
    change(servers)
    data["mcpServers"] = servers
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())


@mcp_app.command("list")
def list_servers() -> None:
    """List the configured MCP servers and where each is set."""
    entries = _entries(Path.cwd())
    if not entries:
        typer.echo("No MCP servers configured. Add one: aimon mcp add NAME -- COMMAND ARGS...")
        return
    for scope, name, config in entries:
        typer.echo(f"{name}  ({scope.value}, {config.transport})  {config.describe()}")


@mcp_app.command("get")
def get_server(name: str) -> None:
    """Show one server's entry."""
    matches = [(s, c) for s, n, c in _entries(Path.cwd()) if n == name]
    if not matches:
        typer.echo(f"No MCP server named {name!r}.", err=True)
        raise typer.Exit(1)
    for scope, config in matches:
        typer.echo(f"{name}:\n  scope: {scope.value} ({scope_file(scope, Path.cwd())})\n"
                   f"  transport: {config.transport}")
        typer.echo("  " + json.dumps(config.to_json(), indent=2).replace("\n", "\n  "))


@mcp_app.command("add")
def add_server(
    name: str,
    command_or_url: Annotated[list[str], typer.Argument(help="COMMAND ARGS... or the URL")],
    transport: Annotated[str, typer.Option("--transport", "-t",
                                           help="stdio, http or sse")] = "stdio",
    scope: Annotated[Scope, typer.Option("--scope", "-s")] = Scope.LOCAL,
    env: Annotated[list[str] | None, typer.Option("--env", "-e", help="KEY=VALUE")] = None,
    header: Annotated[list[str] | None, typer.Option("--header", "-H",
                                                     help="'Name: value'")] = None,
    client_id: Annotated[str | None, typer.Option(
        "--client-id", help="a registered OAuth client to sign in as (http, sse)")] = None,
    client_secret: Annotated[str | None, typer.Option(
        "--client-secret", help="its secret; write ${VAR} to keep it out of the file")] = None,
    callback_port: Annotated[int | None, typer.Option(
        "--callback-port", help="the loopback port its redirect address names")] = None,
) -> None:
    """Add a server: `add NAME -- COMMAND ARGS...` or `add --transport http NAME URL`."""
    entry: dict[str, Any]
    if transport == "stdio":
        entry = {"command": command_or_url[0], "args": command_or_url[1:]}
        if env:
            entry["env"] = dict(item.partition("=")[::2] for item in env)
    elif transport in ("http", "sse") and len(command_or_url) == 1:
        entry = {"type": transport, "url": command_or_url[0]}
        if header:
            entry["headers"] = {k.strip(): v.strip()
                                for k, _, v in (h.partition(":") for h in header)}
        oauth = {"clientId": client_id, "clientSecret": client_secret,
                 "callbackPort": callback_port}
        if any(value is not None for value in oauth.values()):
            entry["oauth"] = {k: v for k, v in oauth.items() if v is not None}
    else:
        raise typer.BadParameter("give --transport stdio|http|sse; http and sse take one URL")
    path = scope_file(scope, Path.cwd())
    try:
        config = check_server(entry, key=f"mcpServers.{name}", path=path, display=str(path))
    except SettingsError as exc:
        typer.echo(f"aimon: {exc}", err=True)
        raise typer.Exit(2) from None
    _edit(path, lambda servers: servers.__setitem__(name, config.to_json()))
    typer.echo(f"Added MCP server {name} ({scope.value}: {path}): {config.describe()}")


@mcp_app.command("remove")
def remove_server(
    name: str,
    scope: Annotated[Scope | None, typer.Option("--scope", "-s")] = None,
) -> None:
    """Remove a server (from the one scope that has it, or the --scope given)."""
    root = Path.cwd()
    scopes = [scope] if scope is not None else [
        s for s in Scope if name in _servers_of(scope_file(s, root))]
    if not scopes or name not in _servers_of(scope_file(scopes[0], root)):
        typer.echo(f"No MCP server named {name!r}.", err=True)
        raise typer.Exit(1)
    if len(scopes) > 1:
        typer.echo(f"{name!r} is in several scopes ({', '.join(s.value for s in scopes)}); "
                   "pick one with --scope.", err=True)
        raise typer.Exit(1)
    path = scope_file(scopes[0], root)
    _edit(path, lambda servers: servers.pop(name, None))
    typer.echo(f"Removed MCP server {name} from {path}")


def _remote(name: str) -> MCPServerConfig:
    matches = [config for _, n, config in _entries(Path.cwd()) if n == name]
    if not matches:
        typer.echo(f"No MCP server named {name!r} (aimon mcp list shows them).", err=True)
        raise typer.Exit(1)
    return matches[-1]  # the narrowest scope wins, as when aimon connects


@mcp_app.command("login")
def login_server(name: str) -> None:
    """Sign in to a remote server: the authorization page opens in a browser (or is printed)."""
    import asyncio
    import os

    from aimon_core.mcp import MCPConnectionError, login, login_timeout

    config = _remote(name)

    def notify(text: str) -> None:
        typer.echo(text, err=True)

    try:
        said = asyncio.run(login(name, config, env=os.environ, notify=notify,
                                 seconds=login_timeout(os.environ)))
    except MCPConnectionError as exc:
        typer.echo(f"aimon: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(said)


@mcp_app.command("logout")
def logout_server(name: str) -> None:
    """Forget the sign-in to a server (its tokens and registered client)."""
    from aimon_core.mcp import logout

    removed = logout(name)
    typer.echo(f"Signed out of MCP server {name}." if removed
               else f"aimon kept no sign-in for MCP server {name}.")
