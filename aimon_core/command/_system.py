"""The system slash commands: help, status, budget, sessions, clear, resume, exit, the
permission commands of `_permissions`, and skills, agents, skill, task (given a catalog)."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from aimon_core.command._artifacts import artifact_commands
from aimon_core.command._checkpoint import checkpoint_commands
from aimon_core.command._export import export_commands
from aimon_core.command._format import (
    describe_budget,
    describe_override,
    format_cost,
    format_tokens,
    format_when,
    parse_count,
    parse_duration,
    plural,
)
from aimon_core.command._model import model_commands
from aimon_core.command._observe import observe_commands
from aimon_core.command._permissions import permission_commands
from aimon_core.command._profile import profile_commands
from aimon_core.command._registry import (
    CANCELLED,
    CommandError,
    CommandHost,
    CommandOutcome,
    CommandRegistry,
    SlashCommand,
    pick,
)
from aimon_core.command._sandbox import sandbox_commands
from aimon_core.command._workflow import WorkflowCatalog, workflow_commands

if TYPE_CHECKING:
    from aimon_core.live import LiveSession
    from aimon_core.session import BudgetOverride, SessionSummary

# The REPL's keys, as /help lists them (and README's table).
KEYS = (
    ("Enter", "send"),
    ("Esc-Enter, Alt-Enter", "new line (pasted text keeps its lines)"),
    ("Shift-Tab", "switch the permission mode: default → acceptEdits → plan"),
    ("Ctrl-C", "interrupt the running turn or command; at an empty prompt, twice to exit"),
    ("Esc", "interrupt the running turn or command"),
    ("Esc Esc", "at an empty prompt: /rewind (take the files or the conversation back)"),
    ("Ctrl-O", "show the last shortened tool result whole"),
    ("Ctrl-R", "search the prompt history"),
    ("Ctrl-G", "edit the prompt in $EDITOR"),
    ("Ctrl-V", "paste an image from the clipboard (a pasted image or PDF path attaches it)"),
    ("Ctrl-Z", "suspend aimon (fg brings it back)"),
    ("Ctrl-D", "exit (at an empty prompt)"),
    ("Tab", "complete a /command, its argument, or an @file"),
    ("@path", "attach a file (@file.py#L10-40: those lines) or a folder's listing"),
    ("!command", "run a shell command; it and its output join the conversation"),
    ("1-4 or o/y/a/n", "answer an approval at once (e edits the command first)"),
)

BUDGET_USAGE = "/budget [iterations N | tokens N | time 90s|5m | reset]"
SESSIONS_SHOWN = 10


def _table(rows: list[tuple[str, str]], indent: int = 2) -> str:
    width = max(len(key) for key, _ in rows)
    return "\n".join(f"{' ' * indent}{key:<{width}}  {value}" for key, value in rows)


async def _help(args: str, host: CommandHost) -> CommandOutcome:
    registry = host.commands
    if args:
        command = registry.get(args.lstrip("/"))
        if command is None:
            raise CommandError(registry.unknown_message(args.lstrip("/")))
        aliases = "".join(f"\nAlso: /{alias}" for alias in command.aliases)
        return CommandOutcome.message(f"{command.synopsis}\n  {command.description}{aliases}")
    commands = [(f"/{c.name}", c.description) for c in registry.system()]
    groups = [f"{plural(len(members), noun)}" for noun, members in _groups(registry.custom())]
    if groups:
        commands.append(("/commands", "… and " + ", ".join(groups)))
    keys = _table(list(KEYS))
    return CommandOutcome.message(
        f"Commands\n{_table(commands)}\n\nKeys\n{keys}\n\n"
        "Type /help NAME for a command's arguments.")


# The kinds of custom command, by where they come from (`SlashCommand.origin`).
_KINDS = (("skill", "skill"), ("MCP server", "MCP prompt"), ("", "command of your own"))
_HEADINGS = {"skill": "Skills", "MCP prompt": "MCP prompts",
             "command of your own": "Your commands (.aimon/commands, .claude/commands)"}


def _groups(custom: tuple[SlashCommand, ...]) -> list[tuple[str, list[SlashCommand]]]:
    """Return the custom commands by kind: skills, MCP prompts, the user's own commands."""
    groups: dict[str, list[SlashCommand]] = {}
    for command in custom:
        noun = next(noun for prefix, noun in _KINDS if command.origin.startswith(prefix))
        groups.setdefault(noun, []).append(command)
    return [(noun, groups[noun]) for _, noun in _KINDS if noun in groups]


async def _commands(args: str, host: CommandHost) -> CommandOutcome:
    registry = host.commands
    rows = [(c.synopsis, c.description) for c in registry.system()]
    lines = f"System commands\n{_table(rows)}"
    groups = _groups(registry.custom())
    for noun, members in groups:
        rows = [(c.synopsis, c.description) for c in members]
        lines += f"\n\n{_HEADINGS[noun]}\n{_table(rows)}"
    if not groups:
        lines += "\n\nNo skills or commands of your own (see README: Skills)."
    return CommandOutcome.message(lines)


async def _version(args: str, host: CommandHost) -> CommandOutcome:
    from aimon_core import __version__

    return CommandOutcome.message(f"aimon {__version__}")


def status_text(live: LiveSession) -> str:
    """Return what /status shows about a LiveSession."""
    status = live.status()
    totals = status.totals
    tokens = f"{format_tokens(totals.input_tokens)} in · {format_tokens(totals.output_tokens)} out"
    if totals.cache_read_tokens or totals.cache_write_tokens:
        tokens += (f" · cache {format_tokens(totals.cache_read_tokens)} read, "
                   f"{format_tokens(totals.cache_write_tokens)} written")
    rows = [
        ("Model", f"{status.model} · {live.runtime.client.provider}"),
        ("Agent", status.agent),
        ("Session", f"{status.session_id} ({plural(status.message_count, 'message')})"),
        ("Project", str(live.project_root)),
        ("Totals", f"{plural(totals.turns, 'turn')} · {plural(totals.iterations, 'iteration')}"),
        ("Tokens", tokens),
        ("Cost", format_cost(totals.cost_usd)),
        ("Context", _context(status.context_tokens, status.context_window)),
        ("Budget", describe_budget(status.budget) + " per turn"),
        ("Override", describe_override(status.budget_override)),
    ]
    # The command asking runs as a turn in print mode: that one is not "a turn running".
    running = live.turn_running()
    if running or status.queued:
        rows.append(("Now", f"{'a turn is running' if running else 'idle'} · "
                            f"{status.queued} queued"))
    return _table(rows, indent=0)


def _context(tokens: int, window: int) -> str:
    if window <= 0:
        return "unknown"
    share = round(100 * tokens / window)
    return (f"about {format_tokens(tokens)} of {format_tokens(window)} tokens ({share}%); "
            "/compact frees it")


async def _status(args: str, host: CommandHost) -> CommandOutcome:
    if args:
        raise CommandError("/status takes no arguments.")
    return CommandOutcome.message(status_text(await host.live_session()))


async def _clear(args: str, host: CommandHost) -> CommandOutcome:
    if args:
        raise CommandError("/clear takes no arguments.")
    old = host.live
    live = await host.new_session()
    kept = ""
    if old is not None and old.record.transcript.messages:
        kept = f" The previous one is kept: /resume {old.id}"
    return CommandOutcome.message(f"Started a new session {live.id}.{kept}")


def budget_override(args: str, current: BudgetOverride | None) -> BudgetOverride | None:
    """Return the override `/budget ARGS` asks for, starting from `current`."""
    from aimon_core.session import BudgetOverride

    words = args.split()
    if words == ["reset"]:
        return None
    if len(words) != 2:
        raise CommandError(f"expected a limit and a value, not {args!r}.")
    kind, value = words[0].lower(), words[1]
    base = current or BudgetOverride()
    if kind in ("iterations", "iteration"):
        return dataclasses.replace(base, max_iterations=parse_count(value, "iterations"))
    if kind in ("tokens", "token"):
        return dataclasses.replace(base, max_tokens=parse_count(value, "tokens"))
    if kind in ("time", "seconds"):
        return dataclasses.replace(base, max_seconds=parse_duration(value))
    raise CommandError(f"unknown limit {kind!r}: use iterations, tokens, time or reset.")


async def _budget(args: str, host: CommandHost) -> CommandOutcome:
    live = await host.live_session()
    if not args:
        return CommandOutcome.message(
            f"Each turn gets {describe_budget(live.budget())}.\n"
            f"Session override: {describe_override(live.record.budget_override)}.\n"
            f"Change it with {BUDGET_USAGE}")
    override = budget_override(args, live.record.budget_override)
    live.set_budget_override(override)
    later = " It applies from the next turn." if live.turn_running() else ""
    what = "Budget reset to the agent's limits" if args.split() == ["reset"] else "Budget set"
    return CommandOutcome.message(
        f"{what}: each turn gets {describe_budget(live.budget())}. It is stored with the "
        f"session.{later}")


def sessions_text(summaries: tuple[SessionSummary, ...], current: str | None,
                  now: datetime | None = None) -> str:
    """Return the listing /sessions shows (`*` marks the current session)."""
    times = [format_when(item.updated_at, now) for item in summaries]
    width = max(map(len, times), default=0)
    rows = []
    for item, at in zip(summaries, times, strict=True):
        mark = "*" if item.id == current else " "
        title = item.title or "(no prompt yet)"
        count = plural(item.message_count, "message")
        rows.append(f"{mark} {item.id}  {at:>{width}}  {count:>13}  {title}")
    return "\n".join(rows)


async def _sessions(args: str, host: CommandHost) -> CommandOutcome:
    limit = parse_count(args, "the number of sessions") if args else SESSIONS_SHOWN
    summaries = await host.list_sessions(limit)
    if not summaries:
        return CommandOutcome.message("No sessions in this project yet.")
    current = host.live.id if host.live is not None else None
    return CommandOutcome.message(
        f"Recent sessions in this project (newest first; * is this one):\n"
        f"{sessions_text(summaries, current)}\n\nResume one with /resume ID.")


def session_choices(live: LiveSession | None) -> tuple[tuple[str, str], ...]:
    """Return the project's recent sessions with messages, as /resume's choices (blocking)."""
    if live is None:
        return ()
    found = live.store.records.list_sessions(str(live.project_root.resolve()), SESSIONS_SHOWN)
    return tuple((item.id, f"{format_when(item.updated_at)} · "
                           f"{plural(item.message_count, 'message')} · "
                           f"{item.title or '(no prompt yet)'}")
                 for item in found if item.message_count and item.id != live.id)


async def _resume(args: str, host: CommandHost) -> CommandOutcome:
    from aimon_core.session import SessionError

    if not args:
        choices = await asyncio.to_thread(session_choices, host.live)
        if not choices:
            return CommandOutcome.message("No other session of this project to resume.")
        picked = await pick(host, "Resume which session?", choices)
        if picked is None:
            listing = await _sessions("", host)
            return CommandOutcome.message(listing.text)
        if picked == CANCELLED:
            return CommandOutcome()
        args = picked
    if len(args.split()) != 1:
        raise CommandError("/resume takes one session id.")
    wanted = await _full_id(args, host)
    if host.live is not None and host.live.id == wanted:
        return CommandOutcome.message(f"Already in session {wanted}.")
    try:
        await host.resume(wanted)
    except SessionError as exc:
        return CommandOutcome.error(f"Cannot resume {wanted}: {exc}")
    return CommandOutcome()  # the replay says which session it is


async def _full_id(text: str, host: CommandHost) -> str:
    """Return the id `text` names: itself, or the one recent session it uniquely ends or starts."""
    if re.fullmatch(r"[0-9]{8}-[0-9]{6}-[0-9a-f]{6}", text):
        return text
    found = [s.id for s in await host.list_sessions(50)
             if s.id.endswith(text) or s.id.startswith(text)]
    if len(found) == 1:
        return found[0]
    if found:
        raise CommandError(f"{text!r} matches {len(found)} sessions: give more of the id.")
    raise CommandError(f"no session of this project matches {text!r}: see /sessions.")


async def _compact(args: str, host: CommandHost) -> CommandOutcome:
    live = await host.live_session()
    done = await live.compact(args or None)
    text = done.text if done.advice is None else f"{done.text}\n{done.advice}"
    if not done.summarised and done.tokens_after >= done.tokens_before:
        return CommandOutcome.error(text)
    return CommandOutcome.message(text)


async def _exit(args: str, host: CommandHost) -> CommandOutcome:
    host.request_exit()
    return CommandOutcome()


class MCPStatus(Protocol):
    """A runtime's MCP servers as /mcp sees them (`aimon_core.mcp.MCPServers`)."""

    def names(self) -> tuple[str, ...]:
        """Return the configured servers' names."""
        ...

    def status_text(self) -> str:
        """Return each server's state, transport and tool count."""
        ...

    async def reconnect_text(self, name: str) -> str:
        """Connect the server again; return its new state in words."""
        ...


NO_MCP_SERVERS = ("No MCP servers are configured. Add one with `aimon mcp add NAME -- COMMAND "
                  "ARGS...`, in .mcp.json, or under mcpServers in .aimon/settings.json.")


async def _mcp(args: str, host: CommandHost) -> CommandOutcome:
    # Hosts with MCP servers (the REPL, SessionCommandHost) expose them as `mcp_servers`.
    servers: MCPStatus | None = getattr(host, "mcp_servers", None)
    words = args.split()
    if not words:
        return CommandOutcome.message(servers.status_text() if servers else NO_MCP_SERVERS)
    if words[0] != "reconnect" or len(words) != 2:
        return CommandOutcome.error("usage: /mcp [reconnect NAME]")
    if servers is None or words[1] not in servers.names():
        return CommandOutcome.error(f"no MCP server named {words[1]!r}")
    return CommandOutcome.message(await servers.reconnect_text(words[1]))


def system_commands() -> tuple[SlashCommand, ...]:
    """Return the system commands, in the order /help lists them."""
    return (
        SlashCommand(name="help", description="Show the commands and keys", run=_help,
                     usage="/help [COMMAND]"),
        SlashCommand(name="commands", description="List every command, custom ones too",
                     run=_commands),
        SlashCommand(name="status", description="Show the model, session, totals and budget",
                     run=_status),
        *model_commands(),
        *profile_commands(),
        *artifact_commands(),
        SlashCommand(name="budget", description="Show or set this session's limits per turn",
                     run=_budget, usage=BUDGET_USAGE),
        SlashCommand(name="sessions", description="List recent sessions in this project",
                     run=_sessions, usage="/sessions [N]"),
        SlashCommand(name="resume", description="Switch to a stored session (pick one)",
                     run=_resume, usage="/resume [ID]", choices=session_choices),
        SlashCommand(name="clear", description="Start a new session (this one stays stored)",
                     run=_clear),
        SlashCommand(name="compact", description="Summarise the conversation to free context",
                     run=_compact, usage="/compact [what the summary should focus on]"),
        *permission_commands(),
        *sandbox_commands(),
        *observe_commands(),
        *checkpoint_commands(),
        *export_commands(),
        SlashCommand(name="mcp", description="Show the MCP servers: state, transport, tools",
                     run=_mcp, usage="/mcp [reconnect NAME]"),
        SlashCommand(name="version", description="Show aimon's version", run=_version),
        SlashCommand(name="exit", description="Leave aimon (the session stays resumable)",
                     run=_exit, aliases=("quit",)),
    )


class ExtensionCatalog(Protocol):
    """The skills and subagents of a runtime, as the system commands use them."""

    def skills_text(self, name: str = "") -> str:
        """Return the listing of skills (or of the one called `name`): layer, path, warnings."""
        ...

    def agents_text(self, name: str = "") -> str:
        """Return the listing of subagents (or of the one called `name`)."""
        ...

    def listed(self, kind: str) -> tuple[tuple[str, str], ...]:
        """Return the user-invocable "skills" or the "agents", as (name, description)."""
        ...

    async def run_skill_command(self, name: str, args: str, host: CommandHost
                                ) -> CommandOutcome:
        """Run the skill `name` as `/name args` would."""
        ...

    async def run_task_command(self, agent_name: str, goal: str, host: CommandHost
                               ) -> CommandOutcome:
        """Run the subagent `agent_name` on `goal`; its final answer is the outcome."""
        ...


SKILL_USAGE = "/skill [NAME [ARGUMENTS]]"
TASK_USAGE = "/task [AGENT GOAL]"


def extension_commands(catalog: ExtensionCatalog) -> tuple[SlashCommand, ...]:
    """Return /skills, /agents, /skill and /task over a runtime's skills and subagents.

    /skill and /task without a name offer a picker; the one chosen is put in the input box
    (`/review `, `/task explore `) for its arguments.
    """

    def skills_listed(live: LiveSession | None) -> tuple[tuple[str, str], ...]:
        return catalog.listed("skills")

    def agents_listed(live: LiveSession | None) -> tuple[tuple[str, str], ...]:
        return catalog.listed("agents")

    async def picked(host: CommandHost, kind: str, question: str, draft: str
                     ) -> CommandOutcome:
        choices = catalog.listed(kind)
        name = await pick(host, question, choices) if choices else None
        if name is None:
            text = catalog.skills_text() if kind == "skills" else catalog.agents_text()
            return CommandOutcome.message(text)
        return CommandOutcome(draft=draft.format(name=name) if name else None)

    async def skills(args: str, host: CommandHost) -> CommandOutcome:
        return CommandOutcome.message(catalog.skills_text(args.strip().lstrip("/")))

    async def agents(args: str, host: CommandHost) -> CommandOutcome:
        return CommandOutcome.message(catalog.agents_text(args.strip()))

    async def skill(args: str, host: CommandHost) -> CommandOutcome:
        name, _, rest = args.partition(" ")
        if not name:
            return await picked(host, "skills", "Run which skill?", "/{name} ")
        return await catalog.run_skill_command(name.lstrip("/"), rest.strip(), host)

    async def task(args: str, host: CommandHost) -> CommandOutcome:
        name, _, goal = args.partition(" ")
        if not name:
            return await picked(host, "agents", "Run which subagent?", "/task {name} ")
        if not goal.strip():
            raise CommandError(f"give {name} a goal: /task {name} GOAL.")
        return await catalog.run_task_command(name, goal.strip(), host)

    return (
        SlashCommand(name="skills", description="List the skills loaded and where from",
                     run=skills, usage="/skills [NAME]", choices=skills_listed),
        SlashCommand(name="agents", description="List the subagents loaded and where from",
                     run=agents, usage="/agents [NAME]", choices=agents_listed),
        SlashCommand(name="skill", description="Run a skill (also /NAME); pick one", run=skill,
                     usage=SKILL_USAGE, choices=skills_listed),
        SlashCommand(name="task", description="Run a subagent on a goal; show its answer",
                     run=task, usage=TASK_USAGE, choices=agents_listed),
    )


def default_registry(catalog: ExtensionCatalog | None = None,
                     workflows: WorkflowCatalog | None = None) -> CommandRegistry:
    """Return a registry holding the system commands (and /skills, /agents, /skill, /task;
    /workflow and /goal)."""
    extra = extension_commands(catalog) if catalog is not None else ()
    flows = workflow_commands(workflows) if workflows is not None else ()
    return CommandRegistry((*system_commands(), *extra, *flows))
