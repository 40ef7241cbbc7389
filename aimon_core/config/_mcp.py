"""MCP server entries as users write them (`mcpServers` in settings, Claude Code's `.mcp.json`).

An entry is either a program aimon starts (``{"command", "args", "env", "cwd"}``, type
``stdio``) or a server it connects to (``{"type": "http" | "sse", "url", "headers"}``). Only
the shape is checked here; `aimon_core.mcp` starts and talks to the servers.

A remote server may say how aimon signs in to it (`oauth`; without it aimon registers itself
with the server's authorization server when you run `aimon mcp login NAME`):

    "oauth": {"clientId": "aimon-at-acme", "clientSecret": "${ACME_SECRET}",
              "callbackPort": 8765, "scope": "read write",
              "grant": "authorization_code" | "client_credentials",
              "privateKeyFile": "~/.keys/acme.pem", "signingAlgorithm": "RS256",
              "issuer": "https://auth.acme.example",
              "clientMetadataUrl": "https://acme.example/aimon-client.json"}

(`clientMetadataUrl`: where a client metadata document for aimon is published; an
authorization server that reads such documents takes the URL as the client id, others get a
dynamic registration.)

and any server what aimon answers when it asks the user for input (`elicitation`): "ask" (the
default: asked where someone can answer, declined in print mode), "acceptDefaults" (asked where
someone can answer, else the form's defaults are sent), or "decline".
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast
from urllib.parse import urlsplit

from aimon_core.config._settings import SettingsError, key_path

MCP_JSON_FILE = ".mcp.json"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_NAME = re.compile(r"[A-Za-z0-9_-]{1,48}")
_STDIO_KEYS = ("type", "command", "args", "env", "cwd", "elicitation")
_HTTP_KEYS = ("type", "url", "headers", "oauth", "elicitation")
_OAUTH_KEYS = ("clientId", "clientSecret", "callbackPort", "scope", "grant", "privateKeyFile",
               "signingAlgorithm", "issuer", "clientMetadataUrl")
# Keys Claude Code and other clients write that aimon does not use; they are not errors.
_IGNORED_KEYS = ("disabled", "description", "timeout", "alwaysAllow", "autoApprove")
HTTPTransport = Literal["http", "sse"]
Elicitation = Literal["ask", "acceptDefaults", "decline"]
ELICITATION = ("ask", "acceptDefaults", "decline")
OAuthGrant = Literal["authorization_code", "client_credentials"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OAuthConfig:
    """How aimon signs in to a remote server; every field None: dynamic registration.

    `client_secret` may hold ${VAR}, expanded when aimon connects. A `client_credentials`
    grant signs in as the program itself (no browser): with the secret, or with a private
    key (`private_key_file`, a PEM file) that signs a JWT assertion.
    """

    client_id: str | None = None
    client_secret: str | None = None
    callback_port: int | None = None
    scope: str | None = None
    grant: OAuthGrant = "authorization_code"
    private_key_file: str | None = None
    signing_algorithm: str = "RS256"
    issuer: str | None = None
    client_metadata_url: str | None = None

    def to_json(self) -> dict[str, Any]:
        """Return the entry's `oauth` object (the keys given)."""
        data = {"clientId": self.client_id, "clientSecret": self.client_secret,
                "callbackPort": self.callback_port, "scope": self.scope,
                "privateKeyFile": self.private_key_file, "issuer": self.issuer,
                "clientMetadataUrl": self.client_metadata_url}
        out: dict[str, Any] = {k: v for k, v in data.items() if v is not None}
        if self.grant != "authorization_code":
            out["grant"] = self.grant
        if self.private_key_file is not None:
            out["signingAlgorithm"] = self.signing_algorithm
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class StdioServerConfig:
    """An MCP server aimon starts as a program and talks to over its stdin and stdout."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    elicitation: Elicitation = "ask"

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
        if self.elicitation != "ask":
            data["elicitation"] = self.elicitation
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class HTTPServerConfig:
    """A remote MCP server: streamable HTTP (``http``) or the legacy SSE transport."""

    url: str
    transport: HTTPTransport = "http"
    # Values may hold ${VAR}: expanded from the environment when aimon connects.
    headers: tuple[tuple[str, str], ...] = ()
    oauth: OAuthConfig | None = None
    elicitation: Elicitation = "ask"

    def describe(self) -> str:
        """Return the URL, for listings and the trust question."""
        return self.url

    def to_json(self) -> dict[str, Any]:
        """Return the entry in its settings-file shape."""
        data: dict[str, Any] = {"type": self.transport, "url": self.url}
        if self.headers:
            data["headers"] = dict(self.headers)
        if self.oauth is not None:
            data["oauth"] = self.oauth.to_json()
        if self.elicitation != "ask":
            data["elicitation"] = self.elicitation
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
    if isinstance(config, HTTPServerConfig) and config.oauth and config.oauth.client_secret:
        pairs = (*pairs, ("OAUTH_CLIENT_SECRET", config.oauth.client_secret))
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
                                                 path, display),
                                oauth=_oauth(entry.get("oauth"), key_path(key, "oauth"), path,
                                             display),
                                elicitation=_elicitation(entry, key, path, display))
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
                                          path, display),
                             elicitation=_elicitation(entry, key, path, display))


def _elicitation(entry: Mapping[str, Any], key: str, path: Path | None, display: str
                 ) -> Elicitation:
    value = entry.get("elicitation", "ask")
    if value not in ELICITATION:
        raise _fail(display, path, key_path(key, "elicitation"),
                    f"expected one of {', '.join(ELICITATION)}")
    return cast(Elicitation, value)


def _oauth(value: Any, key: str, path: Path | None, display: str) -> OAuthConfig | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise _fail(display, path, key, "expected an object")
    _known_keys(value, _OAUTH_KEYS, key, path, display)
    texts: dict[str, str | None] = {}
    for name in ("clientId", "clientSecret", "scope", "privateKeyFile", "signingAlgorithm",
                 "issuer", "clientMetadataUrl"):
        item = value.get(name)
        if item is not None and (not isinstance(item, str) or not item.strip()):
            raise _fail(display, path, key_path(key, name), "expected a non-empty string")
        texts[name] = item
    port = value.get("callbackPort")
    if port is not None and (isinstance(port, bool) or not isinstance(port, int)
                             or not 1 <= port <= 65535):
        raise _fail(display, path, key_path(key, "callbackPort"), "expected a port number")
    grant = value.get("grant", "authorization_code")
    if grant not in ("authorization_code", "client_credentials"):
        raise _fail(display, path, key_path(key, "grant"),
                    "expected authorization_code or client_credentials")
    if grant == "client_credentials" and (
            texts["clientId"] is None
            or (texts["clientSecret"] is None) == (texts["privateKeyFile"] is None)):
        raise _fail(display, path, key, "a client_credentials grant needs clientId and either "
                                        "clientSecret or privateKeyFile")
    return OAuthConfig(client_id=texts["clientId"], client_secret=texts["clientSecret"],
                       callback_port=port, scope=texts["scope"], grant=grant,
                       private_key_file=texts["privateKeyFile"],
                       signing_algorithm=texts["signingAlgorithm"] or "RS256",
                       issuer=texts["issuer"], client_metadata_url=_https(
                           texts["clientMetadataUrl"], key_path(key, "clientMetadataUrl"),
                           path, display))


def _https(url: str | None, key: str, path: Path | None, display: str) -> str | None:
    if url is not None and (urlsplit(url).scheme != "https" or urlsplit(url).path in ("", "/")):
        raise _fail(display, path, key, "expected an https:// URL with a path")
    return url


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
