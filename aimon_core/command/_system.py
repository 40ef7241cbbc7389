"""The system slash commands: help, status, budget, sessions, clear, resume, exit, the
permission commands of `_permissions`, and skills, agents, skill, task (given a catalog)."""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from aimon_core.command._artifacts import artifact_commands
from aimon_core.command._checkpoint import checkpoint_commands
from aimon_core.command._model import model_commands
from aimon_core.command._permissions import permission_commands
from aimon_core.command._profile import profile_commands
from aimon_core.command._registry import (
    CommandError,
    CommandHost,
    CommandOutcome,
    CommandRegistry,
    SlashCommand,
)
from aimon_core.command._sandbox import sandbox_commands
from aimon_core.command._workflow import WorkflowCatalog, workflow_commands

if TYPE_CHECKING:
    from aimon_core.agent import ExecutionBudget
    from aimon_core.live import LiveSession
    from aimon_core.session import BudgetOverride, SessionSummary

KEYS = (
    ("Enter", "send"),
    ("Esc-Enter, Alt-Enter", "new line (pasted text keeps its lines)"),
    ("Ctrl-C", "interrupt the running turn; at an empty prompt, press twice to exit"),
    ("Esc", "interrupt the running turn"),
    ("Esc Esc", "at an empty prompt: /rewind (take the files or the conversation back)"),
    ("Ctrl-D", "exit (at an empty prompt)"),
    ("Tab", "complete a /command"),
    ("Enter/o, y, a, n", "answer an approval: allow this turn, this session, this agent; deny"),
)

BUDGET_USAGE = "/budget [iterations N | tokens N | time 90s|5m | reset]"
SESSIONS_SHOWN = 10


def format_tokens(count: int) -> str:
    """Return a token count the short way: 340, 1.2k, 56k, 1.3M."""
    if count < 1000:
        return str(count)
    if count < 10_000:
        return f"{count / 1000:.1f}k"
    if count < 1_000_000:
        return f"{count // 1000}k"
    return f"{count / 1_000_000:.1f}M"


def format_cost(cost_usd: float) -> str:
    """Return a cost in dollars: four decimals under a dollar, two above."""
    return f"${cost_usd:.4f}" if cost_usd < 1 else f"${cost_usd:.2f}"


def format_seconds(seconds: float) -> str:
    """Return a duration as 45s, 5m, 1m 30s, 2h or 1h 5m."""
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h"] if hours else []
    if minutes:
        parts.append(f"{minutes}m")
    if secs or not parts:
        parts.append(f"{secs}s")
    return " ".join(parts)


def format_ago(moment: datetime, now: datetime | None = None) -> str:
    """Return how long ago `moment` was: "just now", "5 min ago", "3 h ago", "2 days ago"."""
    seconds = ((now or datetime.now(UTC)) - moment).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86_400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86_400)
    return "yesterday" if days == 1 else f"{days} days ago"


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def format_when(moment: datetime, now: datetime | None = None) -> str:
    """Return when `moment` was in local time: "14:05" today, "Nov 28 14:05" on another day of
    this year, "Nov 28 2025 14:05" in another year (session listings).

    `now` (aware) sets both today and the time zone; default: the local time now. Month names
    are English whatever the locale, like the rest of aimon's text.
    """
    now = now or datetime.now(UTC).astimezone()
    local = moment.astimezone(now.tzinfo)
    clock = f"{local.hour:02d}:{local.minute:02d}"
    if local.date() == now.date():
        return clock
    day = f"{_MONTHS[local.month - 1]} {local.day}"
    return f"{day} {clock}" if local.year == now.year else f"{day} {local.year} {clock}"


def describe_budget(budget: ExecutionBudget) -> str:
    """Return a turn's limits in words."""
    parts = [
        "no iteration limit" if budget.max_iterations is None
        else f"at most {budget.max_iterations} iterations",
        "no token limit" if budget.max_tokens is None
        else f"at most {format_tokens(budget.max_tokens)} tokens",
        "no time limit" if budget.max_seconds is None
        else f"at most {format_seconds(budget.max_seconds)}",
    ]
    return " · ".join(parts)


def describe_override(override: BudgetOverride | None) -> str:
    """Return the session's budget override in words ("none" when the agent's limits apply)."""
    if override is None:
        return "none (the agent's limits apply)"
    parts = []
    if override.max_iterations is not None:
        parts.append(f"iterations {override.max_iterations}")
    if override.max_tokens is not None:
        parts.append(f"tokens {format_tokens(override.max_tokens)}")
    if override.max_seconds is not None:
        parts.append(f"time {format_seconds(override.max_seconds)}")
    return ", ".join(parts) or "none (the agent's limits apply)"


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
    if registry.custom():
        commands.append(("/commands", f"… and {len(registry.custom())} custom commands"))
    keys = _table(list(KEYS))
    return CommandOutcome.message(
        f"Commands\n{_table(commands)}\n\nKeys\n{keys}\n\n"
        "Type /help NAME for a command's arguments.")


async def _commands(args: str, host: CommandHost) -> CommandOutcome:
    registry = host.commands
    rows = [(c.synopsis, c.description) for c in registry.system()]
    lines = f"System commands\n{_table(rows)}"
    custom = registry.custom()
    if custom:
        rows = [(c.synopsis, c.description + (f" ({c.origin})" if c.origin else ""))
                for c in custom]
        lines += f"\n\nCustom commands\n{_table(rows)}"
    else:
        lines += "\n\nNo custom commands (skills add them)."
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
        ("Session", f"{status.session_id} ({status.message_count} messages)"),
        ("Project", str(live.project_root)),
        ("Totals", f"{totals.turns} turns · {totals.iterations} iterations"),
        ("Tokens", tokens),
        ("Cost", format_cost(totals.cost_usd)),
        ("Context", _context(status.context_tokens, status.context_window)),
        ("Budget", describe_budget(status.budget) + " per turn"),
        ("Override", describe_override(status.budget_override)),
    ]
    if status.running_turn is not None or status.queued:
        running = "a turn is running" if status.running_turn is not None else "idle"
        rows.append(("Now", f"{running} · {status.queued} queued"))
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


_UNITS = {"": 1, "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1, "m": 60, "min": 60,
          "mins": 60, "minute": 60, "minutes": 60, "h": 3600, "hour": 3600, "hours": 3600}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)")


def parse_duration(text: str) -> float:
    """Parse 90, 90s, 5m, 1.5h or 1m30s into seconds; raise CommandError otherwise."""
    compact = text.strip().lower().replace(" ", "")
    parts = _DURATION_PART.findall(compact)
    if not compact or "".join(n + u for n, u in parts) != compact:
        raise CommandError(f"{text!r} is not a duration: write e.g. 90s, 5m or 1h.")
    seconds = 0.0
    for number, unit in parts:
        if unit not in _UNITS:
            raise CommandError(f"unknown time unit {unit!r} in {text!r}: use s, m or h.")
        seconds += float(number) * _UNITS[unit]
    if seconds <= 0:
        raise CommandError("the time limit must be more than 0 seconds.")
    return seconds


def parse_count(text: str, what: str) -> int:
    """Parse a positive count such as 20, 50k, 1.5m or 200_000; raise CommandError otherwise."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([km]?)", text.strip().lower().replace("_", "")
                         .replace(",", ""))
    if match is None:
        raise CommandError(f"{what} must be a whole number (e.g. 20, 50k), not {text!r}.")
    value = float(match.group(1)) * {"": 1, "k": 1000, "m": 1_000_000}[match.group(2)]
    if value != int(value) or value < 1:
        raise CommandError(f"{what} must be a whole number of at least 1, not {text!r}.")
    return int(value)


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
        rows.append(f"{mark} {item.id}  {at:>{width}}  {item.message_count:>4} messages  {title}")
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


async def _resume(args: str, host: CommandHost) -> CommandOutcome:
    from aimon_core.session import SessionError

    if not args:
        listing = await _sessions("", host)
        return CommandOutcome.message(f"{listing.text}\n\nUsage: /resume ID")
    if len(args.split()) != 1:
        raise CommandError("/resume takes one session id.")
    wanted = await _full_id(args, host)
    if host.live is not None and host.live.id == wanted:
        return CommandOutcome.message(f"Already in session {wanted}.")
    try:
        live = await host.resume(wanted)
    except SessionError as exc:
        return CommandOutcome.error(f"Cannot resume {wanted}: {exc}")
    return CommandOutcome.message(
        f"Resumed session {live.id} ({len(live.record.transcript.messages)} messages).")


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
    if not done.summarised and done.tokens_after == done.tokens_before:
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
        SlashCommand(name="resume", description="Switch to a stored session", run=_resume,
                     usage="/resume ID"),
        SlashCommand(name="clear", description="Start a new session (this one stays stored)",
                     run=_clear),
        SlashCommand(name="compact", description="Summarise the conversation to free context",
                     run=_compact, usage="/compact [what the summary should focus on]"),
        *permission_commands(),
        *sandbox_commands(),
        *checkpoint_commands(),
        SlashCommand(name="mcp", description="Show the MCP servers: state, transport, tools",
                     run=_mcp, usage="/mcp [reconnect NAME]"),
        SlashCommand(name="version", description="Show aimon's version", run=_version),
        SlashCommand(name="exit", description="Leave aimon (the session stays resumable)",
                     run=_exit, aliases=("quit",)),
    )


class ExtensionCatalog(Protocol):
    """The skills and subagents of a runtime, as the system commands use them."""

    def skills_text(self) -> str:
        """Return the listing of skills: name, layer, path, warnings."""
        ...

    def agents_text(self) -> str:
        """Return the listing of subagents: name, layer, path, warnings."""
        ...

    async def run_skill_command(self, name: str, args: str, host: CommandHost
                                ) -> CommandOutcome:
        """Run the skill `name` as `/name args` would."""
        ...

    async def run_task_command(self, agent_name: str, goal: str, host: CommandHost
                               ) -> CommandOutcome:
        """Run the subagent `agent_name` on `goal`; its final answer is the outcome."""
        ...


SKILL_USAGE = "/skill NAME [ARGUMENTS]"
TASK_USAGE = "/task AGENT GOAL"


def extension_commands(catalog: ExtensionCatalog) -> tuple[SlashCommand, ...]:
    """Return /skills, /agents, /skill and /task over a runtime's skills and subagents."""

    async def skills(args: str, host: CommandHost) -> CommandOutcome:
        return CommandOutcome.message(catalog.skills_text())

    async def agents(args: str, host: CommandHost) -> CommandOutcome:
        return CommandOutcome.message(catalog.agents_text())

    async def skill(args: str, host: CommandHost) -> CommandOutcome:
        name, _, rest = args.partition(" ")
        if not name:
            raise CommandError("name the skill to run (see /skills).")
        return await catalog.run_skill_command(name.lstrip("/"), rest.strip(), host)

    async def task(args: str, host: CommandHost) -> CommandOutcome:
        name, _, goal = args.partition(" ")
        if not name or not goal.strip():
            raise CommandError("name a subagent (see /agents) and give it a goal.")
        return await catalog.run_task_command(name, goal.strip(), host)

    return (
        SlashCommand(name="skills", description="List the skills loaded and where from",
                     run=skills),
        SlashCommand(name="agents", description="List the subagents loaded and where from",
                     run=agents),
        SlashCommand(name="skill", description="Run a skill (also /NAME)", run=skill,
                     usage=SKILL_USAGE),
        SlashCommand(name="task", description="Run a subagent on a goal; show its answer",
                     run=task, usage=TASK_USAGE),
    )


def default_registry(catalog: ExtensionCatalog | None = None,
                     workflows: WorkflowCatalog | None = None) -> CommandRegistry:
    """Return a registry holding the system commands (and /skills, /agents, /skill, /task;
    /workflow and /goal)."""
    extra = extension_commands(catalog) if catalog is not None else ()
    flows = workflow_commands(workflows) if workflows is not None else ()
    return CommandRegistry((*system_commands(), *extra, *flows))
