"""One connection to one MCP server, on the official `mcp` SDK (imported only here, lazily).

The SDK's transports and session are anyio context managers that must be entered and left in
the same task, so a connection lives in one task (`MCPConnection.run`): it connects, reports
what the server offers, then pings until it is closed or the server goes away. Calls from other
tasks go through the open session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TextIO, cast

from aimon_core.config import HTTPServerConfig, MCPServerConfig, StdioServerConfig, expand
from aimon_core.mcp._auth import SignIn, oauth_provider
from aimon_core.shell import is_secret

log = logging.getLogger(__name__)

_STDERR_TAIL = 2000
# What a stdio server inherits from aimon's environment: where things are, how to print and
# how to reach the network (proxies, certificate authorities), never a credential. Anything
# else it needs, its entry's `env` names. The MCP SDK's own default is the first six; Claude
# Code's desktop app passes a similar short list.
_INHERITED = frozenset({
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LANGUAGE", "TZ", "TMPDIR",
    "TMP", "TEMP", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy",
    "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
})
_INHERITED_PREFIXES = ("LC_", "XDG_")


class MCPConnectionError(Exception):
    """A server could not be reached, or went away; `stderr` holds its last words."""

    def __init__(self, server: str, reason: str, stderr: str = "") -> None:
        super().__init__(f"MCP server {server!r}: {reason}")
        self.server = server
        self.reason = reason
        self.stderr = stderr


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    read_only_hint: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RemotePrompt:
    """A prompt template as the server lists it; `arguments` are (name, required) pairs."""

    name: str
    description: str
    arguments: tuple[tuple[str, bool], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerOffer:
    """What a server offers once connected."""

    tools: tuple[RemoteTool, ...]
    prompts: tuple[RemotePrompt, ...]
    resources: bool


def server_env(environ: Mapping[str, str], config: StdioServerConfig,
               project_root: Path | None = None) -> dict[str, str]:
    """Return a stdio server's environment: a safe part of `environ`, then its entry's `env`.

    The entry's values are `${VAR}`-expanded from `environ`: naming a variable there is how a
    credential is handed to a server. The project folder is in AIMON_PROJECT_DIR and
    CLAUDE_PROJECT_DIR, as Claude Code sets it.
    """
    env = {name: value for name, value in environ.items()
           if (name in _INHERITED or name.startswith(_INHERITED_PREFIXES))
           and not value.startswith("()") and not is_secret(name, value)}
    if project_root is not None:
        env["AIMON_PROJECT_DIR"] = env["CLAUDE_PROJECT_DIR"] = str(project_root)
    env.update((name, expand(value, environ)) for name, value in config.env)
    return env


async def import_sdk() -> None:
    """Import the SDK off the event loop, where it cannot stall the prompt.

    `python -X importtime -c "import mcp"` measured 0.9 s warm and up to 2.1 s on the loaded
    2-core CI machine (mcp 2.3.0): far too long to hold the REPL's event loop.
    """
    import importlib

    await asyncio.to_thread(importlib.import_module, "mcp.client.session")


class MCPConnection:
    """A live session with one server; `run` owns it from connect to close."""

    def __init__(self, name: str, config: MCPServerConfig, *, roots: Callable[[], Sequence[Path]],
                 env: Mapping[str, str], connect_timeout: float, ping_interval: float,
                 sign_in: SignIn | None = None) -> None:
        self.name = name
        self.config = config
        self._roots = roots
        self._env = env
        self._connect_timeout = connect_timeout
        self._ping_interval = ping_interval
        self._sign_in = sign_in or SignIn()
        self._session: Any = None
        self._stop = asyncio.Event()
        self._stderr: IO[str] | None = None
        self._lost = ""
        # The last HTTP status that refused aimon (401, 403), for the reason given.
        self._refused = 0
        self.on_list_changed: Callable[[], None] = lambda: None
        # Answers the server's elicitation requests (the SDK's params -> ElicitResult).
        self.on_elicit: Callable[[Any], Awaitable[Any]] | None = None

    def stderr_tail(self) -> str:
        """Return the end of what the server wrote on stderr (stdio servers)."""
        if self._stderr is None or self._stderr.closed:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.flush()
            size = self._stderr.seek(0, os.SEEK_END)
            self._stderr.seek(max(0, size - _STDERR_TAIL))
            return self._stderr.read().strip()
        return ""

    def close(self) -> None:
        """Ask `run` to disconnect."""
        self._stop.set()

    def lose(self, reason: str) -> None:
        """Tell `run` the server went away (a call saw the connection close)."""
        self._lost = reason
        self._stop.set()

    async def run(self, ready: Callable[[ServerOffer], None]) -> None:
        """Connect, call `ready` with the offer, and stay connected until closed.

        Raises MCPConnectionError when the server cannot be reached or goes away.
        """
        # stderr goes to a temporary file, read back for the tail when the server fails.
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            self._stderr = errlog
            try:
                await self._connect_and_stay(ready)
            except asyncio.CancelledError:
                raise
            except MCPConnectionError:
                raise
            except Exception as exc:
                # anyio wraps what failed in exception groups; the first leaf says what it was.
                reason = (f"no answer within {self._connect_timeout:g} s"
                          if isinstance(_leaf(exc), TimeoutError)
                          else _auth_reason(self.name, exc, self._refused) or _reason(exc))
                raise MCPConnectionError(self.name, reason, self.stderr_tail()) from exc
            finally:
                self._session = None

    async def _connect_and_stay(self, ready: Callable[[ServerOffer], None]) -> None:
        from mcp import ClientSession

        async with contextlib.AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(self._transport())
            session = await stack.enter_async_context(ClientSession(
                read, write, list_roots_callback=self._list_roots,
                message_handler=self._on_message,
                elicitation_callback=self._elicit if self.on_elicit is not None else None))
            offer = await asyncio.wait_for(self._handshake(session), self._connect_timeout)
            self._session = session
            ready(offer)
            await self._stay(session)

    async def _handshake(self, session: Any) -> ServerOffer:
        init = await session.initialize()
        caps = init.capabilities
        tools = (await session.list_tools()).tools if caps.tools is not None else []
        prompts = (await session.list_prompts()).prompts if caps.prompts is not None else []
        return ServerOffer(
            tools=tuple(_remote_tool(t) for t in tools),
            prompts=tuple(RemotePrompt(
                name=p.name, description=p.description or "",
                arguments=tuple((a.name, bool(a.required)) for a in p.arguments or ()))
                for p in prompts),
            resources=caps.resources is not None,
        )

    async def _stay(self, session: Any) -> None:
        # A server that exits leaves no event to wait on: a ping notices within one interval.
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self._ping_interval)
                if self._lost:
                    raise MCPConnectionError(self.name, self._lost, self.stderr_tail())
                return
            try:
                await asyncio.wait_for(session.send_ping(), self._connect_timeout)
            except TimeoutError:
                raise MCPConnectionError(self.name, "stopped answering pings",
                                         self.stderr_tail()) from None
            except Exception as exc:
                raise MCPConnectionError(self.name, f"went away ({_reason(exc)})",
                                         self.stderr_tail()) from exc

    @contextlib.asynccontextmanager
    async def _transport(self) -> Any:
        config = self.config
        match config:
            case StdioServerConfig():
                from mcp import StdioServerParameters
                from mcp.client.stdio import stdio_client

                params = StdioServerParameters(
                    command=expand(config.command, self._env),
                    args=[expand(a, self._env) for a in config.args],
                    env=server_env(self._env, config, next(iter(self._roots()), None)),
                    cwd=expand(config.cwd, self._env) if config.cwd else None)
                errlog = cast(TextIO, self._stderr or sys.stderr)
                async with stdio_client(params, errlog=errlog) as streams:
                    yield streams[0], streams[1]
            case HTTPServerConfig(transport="sse"):
                from mcp.client.sse import sse_client

                async with sse_client(expand(config.url, self._env),
                                      headers=self._headers(config),
                                      auth=oauth_provider(self.name, config, self._env,
                                                          self._sign_in),
                                      httpx_client_factory=self._http_client) as streams:
                    yield streams[0], streams[1]
            case HTTPServerConfig():
                from mcp.client.streamable_http import streamable_http_client

                auth = oauth_provider(self.name, config, self._env, self._sign_in)
                async with (self._http_client(headers=self._headers(config),
                                              auth=auth) as client,
                            streamable_http_client(expand(config.url, self._env),
                                                   http_client=client) as streams):
                    yield streams[0], streams[1]

    def _http_client(self, headers: dict[str, str] | None = None, timeout: Any = None,
                     auth: Any = None) -> Any:
        """Return the SDK's HTTP client, noting a refusal (401, 403) the SDK does not report."""
        from mcp.shared._httpx_utils import create_mcp_http_client

        client = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)

        async def seen(response: Any) -> None:
            if response.status_code in (401, 403):
                self._refused = response.status_code

        client.event_hooks["response"].append(seen)
        return client

    def _headers(self, config: HTTPServerConfig) -> dict[str, str]:
        return {k: expand(v, self._env) for k, v in config.headers}

    async def _list_roots(self, context: Any) -> Any:
        from mcp import types

        return types.ListRootsResult(roots=[
            types.Root(uri=path.resolve().as_uri(), name=path.name)  # type: ignore[arg-type]
            for path in self._roots()])

    async def _elicit(self, context: Any, params: Any) -> Any:
        assert self.on_elicit is not None
        return await self.on_elicit(params)

    async def _on_message(self, message: Any) -> None:
        from mcp import types

        changed = types.ToolListChangedNotification | types.PromptListChangedNotification
        if isinstance(message, changed):
            self.on_list_changed()

    def session(self) -> Any:
        """Return the open SDK session; MCPConnectionError when not connected."""
        if self._session is None:
            raise MCPConnectionError(self.name, "not connected")
        return self._session

    async def refresh(self) -> ServerOffer:
        """List the server's tools and prompts again."""
        return await asyncio.wait_for(self._handshake(self.session()), self._connect_timeout)


async def login(name: str, config: MCPServerConfig, *, env: Mapping[str, str],
                notify: Callable[[str], None], seconds: float) -> str:
    """Sign in to remote server `name` now (`aimon mcp login`); return what happened.

    Tokens kept from an earlier sign-in are dropped first, so this always asks again (another
    account, more access). Raises MCPConnectionError when the server cannot be reached or the
    sign-in fails.
    """
    from aimon_core.mcp._auth import TokenFile, auth_file

    if not isinstance(config, HTTPServerConfig):
        return f"MCP server {name} is a program aimon starts: it needs no sign-in."
    url = expand(config.url, env)
    store = TokenFile(auth_file(name, url), url)
    store.forget_tokens()
    await import_sdk()
    connection = MCPConnection(name, config, roots=lambda: (), env=env, connect_timeout=seconds,
                               ping_interval=3600.0,
                               sign_in=SignIn(login=True, notify=notify, timeout=seconds))
    await connection.run(lambda offer: connection.close())
    if not store.has_tokens():
        return f"MCP server {name} did not ask anyone to sign in: nothing to keep."
    return f"Signed in to MCP server {name}; the tokens are kept in {store.path}"


def _remote_tool(tool: Any) -> RemoteTool:
    hint = tool.annotations.read_only_hint if tool.annotations is not None else None
    return RemoteTool(name=tool.name, description=tool.description or tool.title or "",
                      input_schema=dict(tool.input_schema or {"type": "object"}),
                      read_only_hint=bool(hint))


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _auth_reason(name: str, exc: BaseException, refused: int) -> str | None:
    """Say what a refused or failed sign-in means, and what to do; None for other failures.

    `refused`: the HTTP status (401, 403) the server last answered with, 0 if none.
    """
    from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError

    leaf = _leaf(exc)
    if isinstance(leaf, OAuthFlowError | OAuthRegistrationError | OAuthTokenError):
        return f"signing in failed: {_reason(leaf)}; `aimon mcp login {name}` tries again"
    if refused:
        what = "wants you to sign in" if refused == 401 else "refused this sign-in's access"
        return (f"the server {what} (HTTP {refused}): run `aimon mcp login {name}` (its "
                "entry's `oauth` can name a registered client)")
    return None


def _reason(exc: BaseException) -> str:
    exc = _leaf(exc)
    text = str(exc) or type(exc).__name__
    return text if len(text) < 300 else text[:297] + "..."
