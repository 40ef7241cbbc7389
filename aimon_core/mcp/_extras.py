"""What MCP servers offer beyond tools: resources (two tools, `@server:uri`), prompts (commands).

`bind_extras` keeps them in step with the servers: the resource tools are in the registry while
a connected server offers resources; each server prompt is a slash command
`/mcp__<server>__<prompt>` while its server is connected.
"""

from __future__ import annotations

import asyncio
import re
import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING

from aimon_core.llm import TextBlock
from aimon_core.mcp._connection import MCPConnectionError, RemotePrompt, ServerOffer
from aimon_core.mcp._convert import (
    CHARS_PER_TOKEN,
    prompt_command,
    prompt_text,
    redacted,
    resource_blocks,
    truncate,
)
from aimon_core.shell import redact
from aimon_core.tools import (
    ServerSubject,
    Tool,
    ToolContext,
    ToolInput,
    ToolRegistry,
    ToolResult,
)

if TYPE_CHECKING:
    from aimon_core.command import CommandHost, CommandOutcome, CommandRegistry, SlashCommand
    from aimon_core.mcp._servers import MCPServers

LIST_RESOURCES = "ListMcpResources"
READ_RESOURCE = "ReadMcpResource"
_MENTION = re.compile(r"(?<![\w@])@([A-Za-z0-9_-]+):(\S+)")


def resource_tools(servers: MCPServers) -> tuple[Tool, Tool]:
    """Return the ListMcpResources and ReadMcpResource tools over `servers`."""

    async def list_run(tool_input: ToolInput, context: ToolContext) -> ToolResult:
        wanted = tool_input.opt_string("server")
        lines: list[str] = []
        for name, offer in servers.connected():
            if not offer.resources or wanted not in (None, name):
                continue
            try:
                listed = await servers.session_of(name).list_resources()
            except Exception as exc:
                lines.append(f"{name}: cannot list resources ({exc})")
                continue
            lines.extend(f"{name}: {r.uri} — {r.name}"
                         + (f" ({r.mime_type})" if r.mime_type else "")
                         + (f": {r.description}" if r.description else "")
                         for r in listed.resources)
        text = "\n".join(lines) or "No MCP server offers resources."
        return ToolResult.ok(redact(text, servers.secrets))

    async def read_run(tool_input: ToolInput, context: ToolContext) -> ToolResult:
        server, uri = tool_input.string("server"), tool_input.string("uri")
        try:
            result = await servers.session_of(server).read_resource(uri)
        except MCPConnectionError as exc:
            return ToolResult.error(str(exc))
        except Exception as exc:
            return ToolResult.error(redact(f"cannot read {uri} from MCP server {server}: {exc}",
                                           servers.secrets))
        blocks = redacted((b for c in result.contents for b in resource_blocks(c)),
                          servers.secrets)
        limit = servers.options.max_output_tokens * CHARS_PER_TOKEN
        return ToolResult(content=truncate(blocks or (TextBlock(text="(empty)"),), limit))

    listing = Tool(
        name=LIST_RESOURCES,
        description="List the resources (files, documents, records) that connected MCP servers "
                    "offer. Give `server` to list one server's only. Read one with "
                    f"{READ_RESOURCE}.",
        input_schema={"type": "object", "properties": {"server": {"type": "string"}},
                      "additionalProperties": False},
        run=list_run, read_only=True, subject=ServerSubject(param="server"))
    reading = Tool(
        name=READ_RESOURCE,
        description="Read one resource of an MCP server by its URI (as ListMcpResources shows).",
        input_schema={"type": "object", "properties": {
            "server": {"type": "string"}, "uri": {"type": "string"}},
            "required": ["server", "uri"], "additionalProperties": False},
        run=read_run, read_only=True, subject=ServerSubject(param="server"))
    return listing, reading


def bind_extras(servers: MCPServers, tools: ToolRegistry,
                registries: Callable[[], tuple[CommandRegistry, ...]]) -> None:
    """Keep the resource tools and the prompt commands in step with the servers."""
    listing, reading = resource_tools(servers)
    commands: dict[str, list[str]] = {}

    def changed(name: str, offer: ServerOffer | None) -> None:
        has_resources = any(o.resources for _, o in servers.connected())
        for tool in (listing, reading):
            if has_resources and tool.name not in tools:
                tools.add(tool)
            elif not has_resources:
                tools.remove(tool.name)
        for registry in registries():
            for old in commands.get(name, ()):
                registry.unregister(old)
        made = [prompt_slash_command(servers, name, p) for p in (offer.prompts if offer else ())]
        commands[name] = [c.name for c in made]
        for registry in registries():
            for command in made:
                registry.register(command)

    servers.listen(changed)


def prompt_slash_command(servers: MCPServers, server: str, prompt: RemotePrompt) -> SlashCommand:
    """Return the slash command that runs a server prompt as the next turn."""
    from aimon_core.command import CommandOutcome, SlashCommand

    names = [n for n, _ in prompt.arguments]

    async def run(args: str, host: CommandHost) -> CommandOutcome:
        denied = _denied_server(server, host)
        if denied is not None:
            return CommandOutcome.error(f"/{name} is not run: {denied}")
        try:
            values = _prompt_args(args, prompt)
            session = servers.session_of(server)
            result = await asyncio.wait_for(session.get_prompt(prompt.name, values),
                                            servers.options.connect_timeout)
        except ValueError as exc:
            return CommandOutcome.error(str(exc))
        except Exception as exc:
            return CommandOutcome.error(redact(
                f"MCP prompt {prompt.name} of {server} failed: {exc}", servers.secrets))
        return CommandOutcome.submit(prompt_text(result, servers.secrets))

    usage = " ".join(f"<{n}>" if req else f"[{n}]" for n, req in prompt.arguments)
    name = prompt_command(server, prompt.name)
    return SlashCommand(name=name, description=prompt.description or f"MCP prompt of {server}",
                        run=run, usage=f"/{name} {usage}".rstrip() if names else "",
                        origin=f"MCP server {server}")


def _denied_server(server: str, host: CommandHost) -> str | None:
    """Say why the runtime's rules deny reaching `server` (a whole-server deny rule), or None."""
    from aimon_core.permission import Verdict, decide_server

    policy = host.policy
    decision = decide_server(server, policy.rules) if policy is not None else None
    return decision.reason if decision is not None and decision.verdict is Verdict.DENY else None


def _prompt_args(args: str, prompt: RemotePrompt) -> dict[str, str]:
    words = shlex.split(args)
    values: dict[str, str] = {}
    positional = [w for w in words if "=" not in w]
    for word in words:
        key, sep, value = word.partition("=")
        if sep and key in dict(prompt.arguments):
            values[key] = value
    free = [n for n, _ in prompt.arguments if n not in values]
    values.update(zip(free, positional, strict=False))
    missing = [n for n, req in prompt.arguments if req and n not in values]
    if missing:
        raise ValueError(f"missing argument(s): {', '.join(missing)} "
                         f"(give them in order, or as name=value)")
    return values


async def attach_resources(servers: MCPServers, prompt: str,
                           refused: Callable[[str], str | None] = lambda server: None
                           ) -> tuple[str, list[str]]:
    """Append the resources a prompt mentions as `@server:uri`; return it and problems.

    `refused(server)` says why a server may not be reached (a rule denies it), or None.
    Known credentials (`servers.secrets`) are redacted from what is attached: it becomes part
    of the prompt, which is stored, shown and sent.
    """
    problems: list[str] = []
    attached: list[str] = []
    for server, uri in _MENTION.findall(prompt):
        if server not in servers.names():
            continue
        why = refused(server)
        if why is not None:
            problems.append(f"@{server}:{uri}: {why}")
            continue
        try:
            result = await servers.session_of(server).read_resource(uri)
        except Exception as exc:
            problems.append(redact(f"@{server}:{uri}: {exc}", servers.secrets))
            continue
        text = redact("\n".join(b.text for c in result.contents for b in resource_blocks(c)
                                if isinstance(b, TextBlock)), servers.secrets)
        attached.append(f'<resource server="{server}" uri="{uri}">\n{text}\n</resource>')
    if not attached:
        return prompt, problems
    return prompt + "\n\n" + "\n\n".join(attached), problems


def status_text(servers: MCPServers | None) -> str:
    """Return what `/mcp` shows: each server's state, transport and tool count."""
    if servers is None or not len(servers):
        return ("No MCP servers are configured. Add one with `aimon mcp add NAME -- COMMAND "
                "ARGS...`, in .mcp.json, or under mcpServers in .aimon/settings.json.")
    lines = []
    statuses = servers.statuses()
    name_width = max(len(s.name) for s in statuses)
    phase_width = max(len(s.phase.value) for s in statuses)
    for status in statuses:
        line = (f"  {status.name:<{name_width}}  {status.phase.value:<{phase_width}}  "
                f"{status.transport:<5}  {status.tools} tool{'s' if status.tools != 1 else ''}")
        if status.prompts:
            line += f", {status.prompts} prompt{'s' if status.prompts != 1 else ''}"
        if status.resources:
            line += ", resources"
        lines.append(line + f"  ({status.target})")
        if status.error:
            lines.append(f"      error: {status.error}")
        lines.extend(f"      stderr: {tail}" for tail in status.stderr.splitlines()[-5:])
    return "MCP servers:\n" + "\n".join(lines) + "\n/mcp reconnect NAME connects again."

