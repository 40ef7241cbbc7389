"""MCP server entries as users write them (`mcpServers` in settings, Claude Code's `.mcp.json`).

An entry is either a program aimon starts (``{"command", "args", "env", "cwd"}``, type
``stdio``) or a server it connects to (``{"type": "http" | "sse", "url", "headers"}``). Only
the shape is checked here; `aimon_core.mcp` starts and talks to the servers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from aimon_core.config._settings import SettingsError, key_path

MCP_JSON_FILE = ".mcp.json"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_NAME = re.compile(r"[A-Za-z0-9_-]{1,48}")
_STDIO_KEYS = ("type", "command", "args", "env", "cwd")
_HTTP_KEYS = ("type", "url", "headers")
# Keys Claude Code and other clients write that aimon does not use; they are not errors.
_IGNORED_KEYS = ("disabled", "description", "timeout", "alwaysAllow", "autoApprove", "oauth")
HTTPTransport = Literal["http", "sse"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StdioServerConfig:
    """An MCP server aimon starts as a program and talks to over its stdin and stdout."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None

    @property
    def transport(self) -> str:
        """Return the transport's name, for listings."""
        return "stdio"

    def describe(self) -> str:
        """Return the command line, for listings and the trust question."""
        import shlex

        return shlex.join((self.command, *self.args))

    def to_json(self) -> dict[str, Any]:
        """Return the entry in its settings-file shape."""
        data: dict[str, Any] = {"command": self.command, "args": list(self.args)}
        if self.env:
            data["env"] = dict(self.env)
        if self.cwd is not None:
            data["cwd"] = self.cwd
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class HTTPServerConfig:
    """A remote MCP server: streamable HTTP (``http``) or the legacy SSE transport."""

    url: str
    transport: HTTPTransport = "http"
    # Values may hold ${VAR}: expanded from the environment when aimon connects.
    headers: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        """Return the URL, for listings and the trust question."""
        return self.url

    def to_json(self) -> dict[str, Any]:
        """Return the entry in its settings-file shape."""
        data: dict[str, Any] = {"type": self.transport, "url": self.url}
        if self.headers:
            data["headers"] = dict(self.headers)
        return data


MCPServerConfig = StdioServerConfig | HTTPServerConfig


def expand(text: str, env: Mapping[str, str]) -> str:
    """Replace `${VAR}` and `${VAR:-default}` with values from `env` (missing: empty/default)."""
    return _VAR.sub(lambda m: env.get(m.group(1), m.group(2) or ""), text)


def server_credentials(config: MCPServerConfig, environ: Mapping[str, str]
                       ) -> tuple[tuple[str, str], ...]:
    """Return (name, value) of the credentials an entry hands its server, `${VAR}` expanded.

    A stdio server's `env` and an HTTP server's `headers`, by the credential rule: the server
    may use them, the model must not read them back. For a header such as `Authorization:
    Bearer T` the credential after the scheme counts on its own too.
    """
    from aimon_core.shell import MIN_SECRET_LENGTH, is_secret

    pairs = config.env if isinstance(config, StdioServerConfig) else config.headers
    found: list[tuple[str, str]] = []
    for name, raw in pairs:
        value = expand(raw, environ)
        if is_secret(name, value):
            scheme, _, credential = value.partition(" ")
            found += [(name, value), *([(name, credential.strip())] if scheme.isalpha() else [])]
    return tuple((name, value) for name, value in found if len(value) >= MIN_SECRET_LENGTH)


def _fail(display: str, path: Path | None, key: str | None, reason: str) -> SettingsError:
    return SettingsError(path=path, key=key, display=display, reason=reason)


def check_mcp_servers(value: Any, *, key: str, path: Path | None, display: str
                      ) -> tuple[tuple[str, MCPServerConfig], ...]:
    """Check an ``mcpServers`` object; raise SettingsError naming the first bad key."""
    if not isinstance(value, Mapping):
        raise _fail(display, path, key, "expected an object of server entries")
    servers: list[tuple[str, MCPServerConfig]] = []
    for name, entry in value.items():
        where = key_path(key, str(name))
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise _fail(display, path, where,
                        "a server name is 1-48 letters, digits, '_' or '-'")
        servers.append((name, check_server(entry, key=where, path=path, display=display)))
    return tuple(servers)


def check_server(entry: Any, *, key: str, path: Path | None, display: str) -> MCPServerConfig:
    """Check one server entry."""
    if not isinstance(entry, Mapping):
        raise _fail(display, path, key, "expected an object")
    kind = entry.get("type", "stdio" if "command" in entry else None)
    if kind in ("http", "streamable-http", "streamableHttp", "sse"):
        _known_keys(entry, _HTTP_KEYS, key, path, display)
        url = entry.get("url")
        parts = urlsplit(url) if isinstance(url, str) else None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise _fail(display, path, key_path(key, "url"), "expected an http:// or https:// URL")
        return HTTPServerConfig(url=str(url), transport="sse" if kind == "sse" else "http",
                                headers=_strings(entry.get("headers", {}), key_path(key, "headers"),
                                                 path, display))
    if kind != "stdio":
        raise _fail(display, path, key,
                    "expected 'command' (a program to start) or 'type': 'http' with a 'url'")
    _known_keys(entry, _STDIO_KEYS, key, path, display)
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip() or "\x00" in command:
        raise _fail(display, path, key_path(key, "command"), "expected the program to start")
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise _fail(display, path, key_path(key, "args"), "expected a list of strings")
    cwd = entry.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise _fail(display, path, key_path(key, "cwd"), "expected a folder")
    return StdioServerConfig(command=command, args=tuple(args), cwd=cwd,
                             env=_strings(entry.get("env", {}), key_path(key, "env"),
                                          path, display))


def _known_keys(entry: Mapping[str, Any], allowed: tuple[str, ...], key: str,
                path: Path | None, display: str) -> None:
    for name in entry:
        if name not in allowed and name not in _IGNORED_KEYS:
            raise _fail(display, path, key_path(key, str(name)),
                        f"unknown key; expected one of {', '.join(allowed)}")


def _strings(value: Any, key: str, path: Path | None, display: str
             ) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise _fail(display, path, key, "expected an object of string values")
    return tuple(value.items())


def read_mcp_json(project_root: Path) -> tuple[tuple[str, MCPServerConfig], ...]:
    """Read the project's `.mcp.json` (Claude Code's format); empty if there is none."""
    from aimon_core.filesystem import read_own

    path = Path(project_root) / MCP_JSON_FILE
    try:
        # Read as aimon reads its own files: no link out of the project, no special file.
        text = read_own(path, inside=Path(project_root), limit=4 << 20).decode("utf-8-sig")
    except (FileNotFoundError, NotADirectoryError):
        return ()
    except (OSError, UnicodeDecodeError) as error:
        raise _fail(MCP_JSON_FILE, path, None, f"cannot read: {error}") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as error:
        raise SettingsError(path=path, key=None, display=MCP_JSON_FILE, line=error.lineno,
                            column=error.colno, reason=f"invalid JSON: {error.msg}") from None
    if not isinstance(data, dict):
        raise _fail(MCP_JSON_FILE, path, None, "expected an object with 'mcpServers'")
    return check_mcp_servers(data.get("mcpServers", {}), key="mcpServers", path=path,
                             display=MCP_JSON_FILE)


def servers_json(servers: Mapping[str, MCPServerConfig]) -> dict[str, Any]:
    """Return servers in their settings-file shape (for hashing and editing)."""
    return {name: config.to_json() for name, config in servers.items()}
