"""MCPServers: the MCP servers of one runtime, started in the background, their tools joining late.

Each server has a supervisor task: it connects (the SDK is imported off the event loop), adds
the server's tools to the runtime's `ToolRegistry` and its prompts as slash commands, and when
a connected server goes away it removes them, tells the user, and reconnects with backoff.
Nothing here blocks the caller: `start()` returns at once, a slow or broken server only shows
up in `statuses()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aimon_core.mcp._auth import SignIn, login_timeout
from aimon_core.mcp._connection import (
    MCPConnection,
    MCPConnectionError,
    RemoteTool,
    ServerOffer,
    import_sdk,
)
from aimon_core.mcp._convert import CHARS_PER_TOKEN, call_result, tool_name
from aimon_core.shell import SecretPairs, redact
from aimon_core.tools import Tool, ToolContext, ToolInput, ToolRegistry, ToolResult

if TYPE_CHECKING:
    from aimon_core.agent import Turn
    from aimon_core.config import MCPServerConfig

log = logging.getLogger(__name__)

# JSON-RPC codes the SDK raises for a closed connection and for a request it stopped awaiting.
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001


class ServerPhase(enum.Enum):
    """Where a server is: starting (or restarting), connected, or failed."""

    STARTING = "starting"
    CONNECTED = "connected"
    FAILED = "failed"


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerStatus:
    """One server as `/mcp` shows it."""

    name: str
    transport: str
    target: str
    phase: ServerPhase
    tools: int = 0
    prompts: int = 0
    resources: bool = False
    error: str = ""
    stderr: str = ""
    restarts: int = 0


def _env_seconds(env: Mapping[str, str], name: str, default: float) -> float:
    # Claude Code reads these in milliseconds.
    try:
        value = float(env[name]) / 1000
    except (KeyError, ValueError):
        return default
    return value if value > 0 else default


@dataclass(frozen=True, slots=True, kw_only=True)
class MCPOptions:
    """Timeouts, the output limit and the restart policy (see `from_env`)."""

    connect_timeout: float = 30.0
    tool_timeout: float = 300.0
    max_output_tokens: int = 25_000
    ping_interval: float = 10.0
    backoff: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)
    max_restarts: int = 5

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> MCPOptions:
        """Read MCP_TIMEOUT / MCP_TOOL_TIMEOUT (ms) and MAX_MCP_OUTPUT_TOKENS, as Claude Code."""
        default = cls()
        tokens = env.get("MAX_MCP_OUTPUT_TOKENS", "")
        return cls(
            connect_timeout=_env_seconds(env, "MCP_TIMEOUT", default.connect_timeout),
            tool_timeout=_env_seconds(env, "MCP_TOOL_TIMEOUT", default.tool_timeout),
            max_output_tokens=int(tokens) if tokens.isdigit() and int(tokens) > 0
            else default.max_output_tokens,
        )


@dataclass(slots=True, kw_only=True)
class _Server:
    name: str
    config: MCPServerConfig
    phase: ServerPhase = ServerPhase.STARTING
    connection: MCPConnection | None = None
    task: asyncio.Task[None] | None = None
    offer: ServerOffer | None = None
    error: str = ""
    stderr: str = ""
    restarts: int = 0
    tool_names: list[str] = field(default_factory=list)
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    up: asyncio.Event = field(default_factory=asyncio.Event)
    # The calls in flight (tool name and the caller's Turn): whom an elicitation asks.
    calls: list[tuple[str, Turn | None]] = field(default_factory=list)


Sleep = Callable[[float], Awaitable[None]]
Notify = Callable[[str], None]
ServerListener = Callable[[str, ServerOffer | None], None]
"""Called with a server's name and its offer when it connects, None when it goes away."""


class MCPServers:
    """The MCP servers of one runtime: their connections, tools and state."""

    def __init__(self, servers: Mapping[str, MCPServerConfig], *, tools: ToolRegistry,
                 roots: Callable[[], Sequence[Path]], options: MCPOptions | None = None,
                 env: Mapping[str, str] | None = None, notify: Notify = lambda text: None,
                 allow: Callable[[str], bool] = lambda name: True, sleep: Sleep = asyncio.sleep,
                 secrets: SecretPairs | None = None) -> None:
        """`env` is what `${VAR}` in the entries expands from (default: aimon's environment);
        a stdio server inherits only a safe part of it (`server_env`). `secrets` are redacted
        from everything a server sends that reaches the model (default: the credentials of
        `env` and those the entries hand their servers)."""
        self._servers = {name: _Server(name=name, config=c) for name, c in servers.items()}
        self._registry = tools
        self._roots = roots
        self._env = dict(os.environ if env is None else env)
        if secrets is None:
            from aimon_core.config import servers_secrets

            secrets = servers_secrets(servers, self._env)
        self.secrets = secrets
        self.options = options or MCPOptions.from_env(self._env)
        self.notify = notify
        self._allow = allow
        self._sleep = sleep
        self._listeners: list[ServerListener] = []
        self._started = False
        self._closed = False

    def __len__(self) -> int:
        return len(self._servers)

    def names(self) -> tuple[str, ...]:
        """Return the configured servers' names."""
        return tuple(self._servers)

    def listen(self, listener: ServerListener) -> None:
        """Call `listener` whenever a server connects or goes away."""
        self._listeners.append(listener)

    def start(self) -> None:
        """Start every server in the background (call once, inside the event loop)."""
        if self._started or self._closed:
            return
        self._started = True
        for server in self._servers.values():
            self._launch(server)

    def _launch(self, server: _Server) -> None:
        server.settled = asyncio.Event()
        server.task = asyncio.get_running_loop().create_task(
            self._supervise(server), name=f"mcp server {server.name}")

    async def wait_ready(self, seconds: float) -> None:
        """Wait until every server connected or failed, at most `seconds`."""
        waits = [s.settled.wait() for s in self._servers.values()]
        if waits:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*waits), seconds)

    def statuses(self) -> tuple[ServerStatus, ...]:
        """Return every server's state, in configuration order."""
        return tuple(self._status(s) for s in self._servers.values())

    def _status(self, server: _Server) -> ServerStatus:
        offer = server.offer
        config = server.config
        return ServerStatus(
            name=server.name, transport=config.transport, target=config.describe(),
            phase=server.phase, tools=len(server.tool_names),
            prompts=len(offer.prompts) if offer else 0,
            resources=bool(offer and offer.resources), error=server.error,
            stderr=server.stderr, restarts=server.restarts)

    async def reconnect(self, name: str) -> ServerStatus:
        """Drop the server's connection and connect again; KeyError if there is no such server."""
        server = self._servers[name]
        await self._stop(server)
        server.restarts, server.error, server.stderr = 0, "", ""
        self._launch(server)
        await self.wait_one(server)
        return self._status(server)

    async def reconnect_text(self, name: str) -> str:
        """Reconnect the server (for `/mcp reconnect NAME`); return its new state in words."""
        status = await self.reconnect(name)
        text = f"MCP server {status.name}: {status.phase.value}, {status.tools} tools"
        return text + (f" ({status.error})" if status.error else "")

    def status_text(self) -> str:
        """Return what `/mcp` shows: each server's state, transport and tool count."""
        from aimon_core.mcp._extras import status_text

        return status_text(self)

    async def wait_one(self, server: _Server) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.settled.wait(), self.options.connect_timeout + 1)

    async def aclose(self) -> None:
        """Disconnect every server (stdio servers exit when their stdin closes)."""
        self._closed = True
        await asyncio.gather(*(self._stop(s) for s in self._servers.values()))

    async def _stop(self, server: _Server) -> None:
        task, server.task = server.task, None
        if server.connection is not None:
            server.connection.close()
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), 5)
            except TimeoutError:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        self._drop_tools(server)

    # ── the supervisor ───────────────────────────────────────────────────────────────────

    async def _supervise(self, server: _Server) -> None:
        await import_sdk()
        failures = 0
        while not self._closed:
            server.phase = ServerPhase.STARTING
            connected = False

            def ready(offer: ServerOffer) -> None:
                nonlocal connected
                connected = True
                self._connected(server, offer)

            connection = MCPConnection(
                server.name, server.config, roots=self._roots, env=self._env,
                connect_timeout=self.options.connect_timeout,
                ping_interval=self.options.ping_interval,
                sign_in=SignIn(notify=lambda text: self.notify(text),
                               timeout=login_timeout(self._env)))
            connection.on_list_changed = lambda: self._refresh_soon(server)
            connection.on_elicit = lambda params: self._elicit(server, params)
            server.connection = connection
            try:
                await connection.run(ready)
                return  # closed on purpose
            except MCPConnectionError as exc:
                self._failed(server, exc)
            failures = 1 if connected else failures + 1
            if (not connected and server.restarts == 0) or failures > self.options.max_restarts:
                self._drop_tools(server)
                what = "keeps failing" if server.restarts else f"failed ({server.error})"
                self.notify(f"MCP server {server.name} {what}; /mcp shows why, "
                            f"/mcp reconnect {server.name} tries again")
                return  # never connected, or keeps dying: /mcp reconnect tries again
            delay = self.options.backoff[min(failures, len(self.options.backoff)) - 1]
            server.restarts += 1
            self.notify(f"MCP server {server.name} stopped ({server.error}); "
                        f"restarting in {delay:g} s")
            await self._sleep(delay)

    def _connected(self, server: _Server, offer: ServerOffer) -> None:
        first = server.restarts == 0
        server.offer, server.phase, server.error = offer, ServerPhase.CONNECTED, ""
        self._set_tools(server, offer.tools)
        server.settled.set()
        server.up.set()
        if not first:
            self.notify(f"MCP server {server.name} is back ({len(server.tool_names)} tools)")
        self._tell(server.name, offer)

    def _failed(self, server: _Server, exc: MCPConnectionError) -> None:
        server.phase, server.error, server.stderr = ServerPhase.FAILED, exc.reason, exc.stderr
        server.offer = None
        server.up.clear()
        # Its tools stay while it restarts (a call waits for it); they go if it gives up.
        server.settled.set()
        log.info("MCP server %s failed: %s", server.name, exc.reason)
        self._tell(server.name, None)

    def _tell(self, name: str, offer: ServerOffer | None) -> None:
        for listener in self._listeners:
            try:
                listener(name, offer)
            except Exception:  # a listener's bug must not take the server down with it
                log.exception("MCP listener failed for %s", name)

    def _refresh_soon(self, server: _Server) -> None:
        async def refresh() -> None:
            connection = server.connection
            if connection is None or server.phase is not ServerPhase.CONNECTED:
                return
            with contextlib.suppress(MCPConnectionError, TimeoutError):
                offer = await connection.refresh()
                server.offer = offer
                self._set_tools(server, offer.tools)
                self._tell(server.name, offer)

        task = asyncio.get_running_loop().create_task(refresh())
        task.add_done_callback(_log_failure)

    # ── tools ────────────────────────────────────────────────────────────────────────────

    def _set_tools(self, server: _Server, remote: Sequence[RemoteTool]) -> None:
        self._drop_tools(server)
        for item in remote:
            tool = self._tool(server.name, item)
            problem = _schema_problem(tool.input_schema)
            if problem is not None:
                self.notify(f"MCP tool {tool.name} skipped: its input schema is invalid "
                            f"({problem})")
            elif tool.name in self._registry:
                self.notify(f"MCP tool {tool.name} skipped: another tool has that name")
            elif self._allow(tool.name):
                self._registry.add(tool)
                server.tool_names.append(tool.name)

    def _drop_tools(self, server: _Server) -> None:
        for name in server.tool_names:
            self._registry.remove(name)
        server.tool_names.clear()

    def _tool(self, server: str, remote: RemoteTool) -> Tool:
        async def run(tool_input: ToolInput, context: ToolContext) -> ToolResult:
            return await self.call_tool(server, remote.name, dict(tool_input.raw),
                                        turn=context.turn)

        # A readOnlyHint is the server's claim, not a fact: the policy asks unless a rule allows.
        description = redact(remote.description, self.secrets)
        return Tool(name=tool_name(server, remote.name),
                    description=description or f"The {remote.name} tool of {server}.",
                    input_schema=remote.input_schema, run=run, read_only=False)

    def session_of(self, server: str) -> Any:
        """Return the open SDK session of a connected server; MCPConnectionError otherwise."""
        item = self._servers.get(server)
        if item is None:
            raise MCPConnectionError(server, f"no such server (configured: "
                                             f"{', '.join(self._servers) or 'none'})")
        if item.connection is None or item.phase is not ServerPhase.CONNECTED:
            raise MCPConnectionError(server, f"not connected ({item.phase.value})")
        return item.connection.session()

    def connected(self) -> tuple[tuple[str, ServerOffer], ...]:
        """Return the connected servers and what they offer."""
        return tuple((s.name, s.offer) for s in self._servers.values()
                     if s.phase is ServerPhase.CONNECTED and s.offer is not None)

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any], *,
                        turn: Turn | None = None) -> ToolResult:
        """Call a server's tool; failures become error results the model can act on.

        A call to a server that is restarting waits for it (MCP_TIMEOUT at most). Input the
        server asks for during the call is asked of whoever answers for `turn`'s session.
        """
        await self._wait_restart(server)
        item = self._servers.get(server)
        call = (tool_name(server, tool), turn)
        if item is not None:
            item.calls.append(call)
        try:
            session = self.session_of(server)
            result = await asyncio.wait_for(
                session.call_tool(tool, arguments,
                                  read_timeout_seconds=self.options.tool_timeout),
                self.options.tool_timeout + 1)
        except TimeoutError:
            return self._timed_out(server, tool)
        except MCPConnectionError as exc:
            return ToolResult.error(f"{exc}; the user can check it with /mcp")
        except Exception as exc:
            return self._call_failed(server, tool, exc)
        finally:
            if item is not None:
                item.calls.remove(call)
        return call_result(result, max_chars=self.options.max_output_tokens * CHARS_PER_TOKEN,
                           secrets=self.secrets)

    async def _elicit(self, server: _Server, params: Any) -> Any:
        """Answer a server's request for input: ask for its latest call in flight."""
        from aimon_core.mcp._elicit import elicit

        tool, turn = server.calls[-1] if server.calls else (f"mcp__{server.name}", None)
        return await elicit(server.name, tool, params, turn, server.config.elicitation,
                            self.notify)

    async def _wait_restart(self, server: str) -> None:
        item = self._servers.get(server)
        if (item is None or item.phase is ServerPhase.CONNECTED or item.task is None
                or item.task.done()):
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(item.up.wait(), self.options.connect_timeout)

    def _timed_out(self, server: str, tool: str) -> ToolResult:
        return ToolResult.error(
            f"{tool} on MCP server {server} did not answer within "
            f"{self.options.tool_timeout:g} s (MCP_TOOL_TIMEOUT); try again or another way")

    def _call_failed(self, server: str, tool: str, exc: Exception) -> ToolResult:
        from mcp.shared.exceptions import MCPError

        if isinstance(exc, MCPError) and exc.code == _REQUEST_TIMEOUT:
            return self._timed_out(server, tool)
        if isinstance(exc, MCPError) and exc.code != _CONNECTION_CLOSED:
            return ToolResult.error(redact(f"{tool} on MCP server {server} failed: {exc.message}",
                                           self.secrets))
        item = self._servers[server]
        if item.connection is not None and item.phase is ServerPhase.CONNECTED:
            # Mark it at once: the next call waits for the restart instead of failing too.
            item.phase = ServerPhase.STARTING
            item.up.clear()
            item.connection.lose("the connection closed during a call")
        return ToolResult.error(f"MCP server {server} went away during the call; aimon is "
                                "restarting it, try again in a moment")


def _schema_problem(schema: Mapping[str, Any]) -> str | None:
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(dict(schema))
    except jsonschema.SchemaError as exc:
        return str(exc.message)
    return None


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("MCP refresh failed", exc_info=task.exception())
