"""`aimon mcp list|get|add|remove|login|logout`: the MCP servers of each scope.

Scopes, as Claude Code's: `local` (this project, only you: kept in your data, by project, and
trusted as your own; the default), `project` (shared with the team: .mcp.json, asked about
once), `user` (every project: the user settings.json). Each edit re-reads the file and
changes only its server entries. A name already taken in the scope is refused, never
replaced in silence. Servers a `.aimon/settings.local.json` holds (where older versions put
local ones) are listed too, and can be removed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from aimon_core.config import (
    LOCAL_SETTINGS_FILE,
    MCP_JSON_FILE,
    PROJECT_DIR,
    SETTINGS_FILE,
    MCPServerConfig,
    SettingsError,
    check_server,
    edit_local_servers,
    local_mcp_path,
    local_servers,
)
from aimon_core.filesystem import write_atomic

mcp_app = typer.Typer(add_completion=False, rich_markup_mode=None,
                      help="List, add and remove MCP servers.",
                      context_settings={"help_option_names": ["-h", "--help"]})


class _SpelledUsage(TyperCommand):
    """A command whose usage line is its `options_metavar`, as written: Typer would write a
    required argument as `{name}`."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """Return the usage line's pieces: the one spelled out."""
        return [self.options_metavar or ""]


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
            return local_mcp_path()
        case Scope.PROJECT:
            return project_root / MCP_JSON_FILE
        case Scope.USER:
            return user_config_dir() / SETTINGS_FILE


def _legacy_file(project_root: Path) -> Path:
    """Return where older versions kept local servers (a file the user must trust)."""
    return project_root / PROJECT_DIR / LOCAL_SETTINGS_FILE


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


def _scope_servers(scope: Scope, root: Path) -> dict[str, Any]:
    """Return the raw entries of a scope, by name (local: also the legacy file's)."""
    if scope is not Scope.LOCAL:
        return _servers_of(scope_file(scope, root))
    try:
        own = {name: config.to_json() for name, config in local_servers(root)}
    except SettingsError as exc:
        typer.echo(f"warning: {exc}", err=True)
        own = {}
    return {**_servers_of(_legacy_file(root)), **own}


def _entries(root: Path) -> list[tuple[Scope, str, MCPServerConfig]]:
    found: list[tuple[Scope, str, MCPServerConfig]] = []
    for scope in (Scope.USER, Scope.PROJECT, Scope.LOCAL):
        path = scope_file(scope, root)
        for name, entry in _scope_servers(scope, root).items():
            try:
                found.append((scope, name, check_server(entry, key=f"mcpServers.{name}",
                                                        path=path, display=str(path))))
            except SettingsError as exc:
                typer.echo(f"warning: {exc}", err=True)
    return found


def _edit(scope: Scope, root: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """Apply `change` to a scope's entries (by name); return the file written."""
    if scope is Scope.LOCAL:
        return edit_local_servers(root, change)
    # Re-read right before writing: other tools edit these files too; keep every other key.
    path = scope_file(scope, root)
    _edit_file(path, change)
    return path


def _edit_file(path: Path, change: Callable[[dict[str, Any]], None]) -> None:
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
    width = max(len(name) for _, name, _ in entries)
    where = max(len(f"({scope.value}, {config.transport})") for scope, _, config in entries)
    for scope, name, config in entries:
        typer.echo(f"{name:<{width}}  {f'({scope.value}, {config.transport})':<{where}}  "
                   f"{config.describe()}")


@mcp_app.command("get", cls=_SpelledUsage, options_metavar="NAME")
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


@mcp_app.command("add", cls=_SpelledUsage,
                 options_metavar="[OPTIONS] NAME (-- COMMAND [ARGS]... | URL)")
def add_server(
    name: str,
    command_or_url: Annotated[list[str], typer.Argument(help="COMMAND ARGS... or the URL")],
    transport: Annotated[str, typer.Option(
        "--transport", "-t", help="stdio, http or sse (default: http for a lone URL, "
                                  "else stdio)")] = "",
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
    root = Path.cwd()
    if not transport:  # a lone URL can only be a remote server: no program is called that
        lone_url = len(command_or_url) == 1 and command_or_url[0].startswith(
            ("http://", "https://"))
        transport = "http" if lone_url else "stdio"
    oauth = {"clientId": client_id, "clientSecret": client_secret,
             "callbackPort": callback_port}
    entry = _new_entry(transport, command_or_url, env, header,
                       {k: v for k, v in oauth.items() if v is not None})
    path = scope_file(scope, root)
    try:
        config = check_server(entry, key=f"mcpServers.{name}", path=path, display=str(path))
    except SettingsError as exc:
        typer.echo(f"aimon: {exc}", err=True)
        raise typer.Exit(2) from None
    if name in _scope_servers(scope, root):
        typer.echo(f"aimon: an MCP server named {name!r} is in the {scope.value} scope already "
                   f"({path}); remove it first: aimon mcp remove {name} -s {scope.value}",
                   err=True)
        raise typer.Exit(1)
    written = _edit(scope, root, lambda servers: servers.__setitem__(name, config.to_json()))
    typer.echo(f"Added MCP server {name} ({scope.value}: {written}): {config.describe()}")
    others = [s.value for s, n, _ in _entries(root) if n == name and s is not scope]
    if others:
        typer.echo(f"Note: {name!r} is also in the {', '.join(others)} scope; the later of "
                   "user < project < local wins.")


def _new_entry(transport: str, command_or_url: list[str], env: list[str] | None,
               header: list[str] | None, oauth: dict[str, Any]) -> dict[str, Any]:
    if transport == "stdio":
        entry: dict[str, Any] = {"command": command_or_url[0], "args": command_or_url[1:]}
        if env:
            entry["env"] = dict(item.partition("=")[::2] for item in env)
        return entry
    if transport in ("http", "sse") and len(command_or_url) == 1:
        entry = {"type": transport, "url": command_or_url[0]}
        if header:
            entry["headers"] = {k.strip(): v.strip()
                                for k, _, v in (h.partition(":") for h in header)}
        if oauth:
            entry["oauth"] = oauth
        return entry
    raise typer.BadParameter("give --transport stdio|http|sse; http and sse take one URL")


@mcp_app.command("remove", cls=_SpelledUsage, options_metavar="[OPTIONS] NAME")
def remove_server(
    name: str,
    scope: Annotated[Scope | None, typer.Option("--scope", "-s")] = None,
) -> None:
    """Remove a server (from the one scope that has it, or the --scope given)."""
    root = Path.cwd()
    scopes = [scope] if scope is not None else [
        s for s in Scope if name in _scope_servers(s, root)]
    if not scopes or name not in _scope_servers(scopes[0], root):
        typer.echo(f"No MCP server named {name!r}.", err=True)
        raise typer.Exit(1)
    if len(scopes) > 1:
        typer.echo(f"{name!r} is in several scopes ({', '.join(s.value for s in scopes)}); "
                   "pick one with --scope.", err=True)
        raise typer.Exit(1)
    path = _edit(scopes[0], root, lambda servers: servers.pop(name, None))
    if scopes[0] is Scope.LOCAL and name in _servers_of(_legacy_file(root)):
        path = _legacy_file(root)
        _edit_file(path, lambda servers: servers.pop(name, None))
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
