"""Slash commands: parsing, the registry, suggestions, and each system command on a real
LiveSession (memory stores, a scripted model) with the REPL as its host."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from aimon_cli._complete import PromptCompleter
from aimon_cli._replhost import ReplCommandHost
from aimon_cli.repl import ReplOptions, ReplSession, run_repl
from aimon_core.agent import AgentRuntime, Environment, StopCause, parse_agent
from aimon_core.command import (
    CommandError,
    CommandHost,
    CommandNameError,
    CommandOutcome,
    CommandRegistry,
    SlashCommand,
    default_registry,
    parse_count,
    parse_duration,
    parse_slash,
)
from aimon_core.filesystem import LocalFileSystem
from aimon_core.live import LiveSession, LiveSessionOptions
from aimon_core.llm import LLMClient, reply, script
from aimon_core.session import (
    BudgetOverride,
    MemorySessionLeaseStore,
    MemorySessionRecordStore,
    SessionStore,
)
from aimon_core.shell import LocalShell
from aimon_core.tools import Tool, ToolContext, ToolInput, ToolRegistry, ToolResult
from aimon_core.tools._state import ToolState

AGENT = parse_agent("---\nname: tester\nmaxIterations: 9\n---\nTest agent.\n")
ENV = Environment(cwd=Path("/p"), platform="test", date="2026-01-01")


async def _noop(args: str, host: CommandHost) -> CommandOutcome:
    return CommandOutcome.message(f"ran with {args!r}")


def command(name: str, **kwargs: Any) -> SlashCommand:
    return SlashCommand(name=name, description=f"the {name} command", run=_noop, **kwargs)


async def _again(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
    return ToolResult.ok("again")


AGAIN = Tool(name="Again", description="Again", run=_again,
             input_schema={"type": "object", "properties": {"n": {"type": "integer"}},
                           "additionalProperties": False})


@contextlib.asynccontextmanager
async def repl_host(tmp_path: Path, client: LLMClient, store: SessionStore | None = None
                    ) -> AsyncIterator[tuple[ReplCommandHost, StringIO]]:
    """Yield the REPL (not reading keys) as a command host over memory stores, and its output."""
    store = store or SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
    runtime = AgentRuntime(agent=AGENT, client=client, model="scripted",
                           tools=ToolRegistry((AGAIN,)))
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)

    async def open_session(session_id: str | None) -> LiveSession:
        ctx = ToolContext(project_root=project, cwd=project, fs=LocalFileSystem(project),
                          shell=LocalShell(), state=ToolState())
        return await LiveSession.open(runtime, store, ctx, session_id=session_id,
                                      options=LiveSessionOptions(environment=ENV))

    out = StringIO()
    console = Console(file=out, width=120, force_terminal=False, color_system=None)
    options = ReplOptions(project_root=project, store=store, open_session=open_session,
                          history_file=tmp_path / "history")
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        repl = ReplSession(options, console=console)
        try:
            yield repl.host, out
        finally:
            await repl.aclose()


def run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(test())


# ── parsing, registry, suggestions ──────────────────────────────────────────────────────


def test_parse_slash() -> None:
    assert parse_slash("/budget iterations 20") == ("budget", "iterations 20")
    assert parse_slash("  /Status  ") == ("status", "")
    assert parse_slash("/help\n  budget ") == ("help", "budget")
    assert parse_slash("/") == ("", "")
    assert parse_slash("fix the /status command") is None
    assert parse_slash("/usr/bin/env is broken") is None


def test_system_commands_win_and_custom_ones_cannot_shadow_them() -> None:
    registry = default_registry()
    registry.register(command("review", origin="skill review"))
    assert registry.get("review") is not None and not registry.is_system("review")
    for taken in ("status", "quit"):
        with pytest.raises(CommandNameError, match="system command"):
            registry.register(command(taken))
    with pytest.raises(CommandNameError, match="lowercase"):
        registry.register(command("Bad Name"))
    exit_command = registry.get("quit")
    assert exit_command is not None and exit_command.name == "exit"
    assert {"help", "commands", "version", "status", "clear", "compact", "budget", "sessions",
            "resume", "exit", "quit", "review", "pending", "approve", "deny", "permissions", "mode",
            "revoke", "trust", "sandbox", "mcp", "undo", "rewind", "diff",
            "model", "profile", "artifacts", "export", "copy", "cost", "trace"
            } == set(registry.names())
    registry.register(command("review", origin="project"))
    assert [c.origin for c in registry.custom()] == ["project"]
    assert registry.unregister("review") and registry.get("review") is None
    with pytest.raises(CommandNameError):
        CommandRegistry([command("same"), command("same")])


def test_suggestions_for_mistyped_commands() -> None:
    registry = default_registry()
    assert registry.suggest("stauts") == "status"
    assert registry.suggest("stat") == "status"
    assert registry.suggest("quti") == "exit"
    assert registry.suggest("budgte") == "budget"
    assert registry.suggest("xyzzy") is None
    assert registry.unknown_message("stauts") == "Unknown command /stauts. Did you mean /status?"
    assert registry.unknown_message("xyzzy") == \
        "Unknown command /xyzzy. Type /help to see the commands."


def test_run_reports_unknown_commands_and_bad_arguments(tmp_path: Path) -> None:
    async def bad(args: str, host: CommandHost) -> CommandOutcome:
        raise CommandError(f"{args!r} is not a color.")

    async def test() -> None:
        async with repl_host(tmp_path, script()) as (host, _):
            registry = host.commands
            registry.register(SlashCommand(name="paint", description="Paint", run=bad,
                                           usage="/paint COLOR"))
            unknown = await registry.run("/stauts", host)
            assert unknown.is_error and unknown.text.endswith("Did you mean /status?")
            painted = await registry.run("/paint plaid", host)
            assert painted == CommandOutcome.error("'plaid' is not a color.\nUsage: /paint COLOR")
    run(test)


def test_help_lists_commands_and_keys(tmp_path: Path) -> None:
    async def test() -> None:
        async with repl_host(tmp_path, script()) as (host, _):
            host.commands.register(command("review", origin="skill review"))
            text = (await host.commands.run("/help", host)).text
            for expected in ("/status", "/budget", "/clear", "/exit", "Enter", "send",
                             "Esc-Enter, Alt-Enter", "new line", "Ctrl-C", "interrupt",
                             "Ctrl-D", "… and 1 skill", "Shift-Tab", "Ctrl-O", "Ctrl-R",
                             "Ctrl-G", "Ctrl-Z", "@path", "!command"):
                assert expected in text
            one = (await host.commands.run("/help budget", host)).text
            assert one.startswith("/budget [iterations N | tokens N | time 90s|5m | reset]")
            host.commands.register(command("notes", origin="command .aimon"))
            listing = (await host.commands.run("/commands", host)).text
            assert "\n\nSkills\n  /review" in listing
            assert "\n\nYour commands (.aimon/commands, .claude/commands)\n  /notes" in listing
            version = (await host.commands.run("/version", host)).text
            assert version.startswith("aimon ")
    run(test)


# ── /budget ──────────────────────────────────────────────────────────────────────────────


def test_durations_and_counts() -> None:
    assert parse_duration("90s") == 90 and parse_duration("90") == 90
    assert parse_duration("5m") == 300 and parse_duration("1m30s") == 90
    assert parse_duration("1.5h") == 5400 and parse_duration("2 min") == 120
    for bad in ("soon", "5 parsecs", "0s", "-1m", ""):
        with pytest.raises(CommandError):
            parse_duration(bad)
    assert parse_count("20", "x") == 20 and parse_count("50k", "x") == 50_000
    assert parse_count("1.5m", "x") == 1_500_000 and parse_count("200_000", "x") == 200_000
    for bad in ("0", "many", "1.5", "-3"):
        with pytest.raises(CommandError):
            parse_count(bad, "x")


def test_budget_is_stored_on_the_record_and_limits_the_next_turn(tmp_path: Path) -> None:
    loop_forever = [reply("", ("Again", {"n": n})) for n in range(5)]

    async def test() -> None:
        store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
        async with repl_host(tmp_path, script(*loop_forever), store) as (host, _):
            run_command = host.commands.run
            shown = await run_command("/budget", host)
            assert "at most 9 iterations · no token limit · no time limit" in shown.text
            assert "Session override: none" in shown.text
            done = await run_command("/budget iterations 2", host)
            assert done.text.startswith("Budget set: each turn gets at most 2 iterations")
            await run_command("/budget tokens 50k", host)
            await run_command("/budget time 5m", host)
            live = await host.live_session()
            wanted = BudgetOverride(max_iterations=2, max_tokens=50_000, max_seconds=300.0)
            assert live.record.budget_override == wanted
            result = await live.submit("go")  # a new session is stored with its first prompt
            assert store.records.load(live.record.id).budget_override == wanted
            assert result.stop is StopCause.ITERATION_LIMIT and result.iterations == 2
            bad = await run_command("/budget iterations zero", host)
            assert bad.is_error and "Usage: /budget [iterations N" in bad.text
            assert (await run_command("/budget speed 3", host)).is_error
            await run_command("/budget reset", host)
            assert live.record.budget_override is None
            assert store.records.load(live.record.id).budget_override is None
    run(test)


# ── /status, /sessions, /clear, /resume, /exit ──────────────────────────────────────────


def test_status_shows_model_session_totals_and_budget(tmp_path: Path) -> None:
    async def test() -> None:
        async with repl_host(tmp_path, script(reply("hello"))) as (host, _):
            live = await host.live_session()
            await live.submit("hi")
            await host.commands.run("/budget iterations 7", host)
            text = (await host.commands.run("/status", host)).text
            lines = dict(line.split(None, 1) for line in text.splitlines())
            assert lines["Model"] == "scripted · scripted"
            assert lines["Agent"] == "tester"
            assert lines["Session"] == f"{live.id} (2 messages)"
            assert lines["Project"] == str(tmp_path / "proj")
            assert lines["Totals"] == "1 turn · 1 iteration"
            assert lines["Tokens"] == "10 in · 5 out"
            assert lines["Cost"] == "$0.0000"
            assert lines["Budget"].startswith("at most 7 iterations")
            assert lines["Override"] == "iterations 7"
            assert (await host.commands.run("/status now", host)).is_error
    run(test)


def test_clear_starts_a_new_session_and_resume_brings_the_old_one_back(tmp_path: Path) -> None:
    async def test() -> None:
        async with repl_host(tmp_path, script(reply("first answer"))) as (host, out):
            first = await host.live_session()
            await first.submit("first question")
            cleared = await host.commands.run("/clear", host)
            second = await host.live_session()
            assert second.id != first.id
            assert cleared.text == (f"Started a new session {second.id}. "
                                    f"The previous one is kept: /resume {first.id}")
            listing = (await host.commands.run("/sessions", host)).text
            # The new session has no prompt yet, so it is not stored (nor listed) yet.
            assert second.id not in listing and f"  {first.id}" in listing
            assert "2 messages  first question" in listing
            resumed = await host.commands.run(f"/resume {first.id[-6:]}", host)
            assert resumed.text == ""  # the replay says it, once
            live = await host.live_session()
            assert live.id == first.id and live.record.transcript.messages[-1].text == \
                "first answer"
            assert f"Resumed session {first.id} (2 messages); the last 3 prompts:" in \
                out.getvalue()
            assert "› first question" in out.getvalue() and "──" not in out.getvalue()
            same = await host.commands.run(f"/resume {first.id}", host)
            assert same.text == f"Already in session {first.id}."
    run(test)


def test_resume_errors_are_clear(tmp_path: Path) -> None:
    async def test() -> None:
        async with repl_host(tmp_path, script()) as (host, _):
            await host.live_session()
            missing = await host.commands.run("/resume 20200101-000000-abcdef", host)
            assert missing.is_error and missing.text.startswith(
                "Cannot resume 20200101-000000-abcdef:")
            nothing = await host.commands.run("/resume zzz", host)
            assert nothing.is_error and "no session of this project matches 'zzz'" in \
                nothing.text
            listing = await host.commands.run("/resume", host)
            assert listing.text == "No other session of this project to resume."
    run(test)


def test_exit_and_quit_ask_the_host_to_leave(tmp_path: Path) -> None:
    async def test() -> None:
        for name in ("/exit", "/quit"):
            async with repl_host(tmp_path, script()) as (host, _):
                assert await host.commands.run(name, host) == CommandOutcome()
                assert host.exit_requested
    run(test)


# ── the REPL around the commands ─────────────────────────────────────────────────────────


def test_slash_completion_offers_matching_commands() -> None:
    completer = PromptCompleter(default_registry(), Path("/nonexistent"))

    def names(text: str) -> list[str]:
        return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]

    assert names("/st") == ["/status"]
    assert names("/") == ["/" + n for n in default_registry().names()]
    assert names("/q") == ["/quit"]
    assert names("/status now") == [] and names("st") == []


def test_run_repl_ends_and_reraises_when_the_first_session_cannot_open(tmp_path: Path) -> None:
    async def cannot_open(session_id: str | None) -> LiveSession:
        raise RuntimeError("no model configured: set ANTHROPIC_API_KEY")

    async def test() -> None:
        options = ReplOptions(
            project_root=tmp_path, open_session=cannot_open, history_file=tmp_path / "history",
            store=SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore()))
        out = StringIO()
        with (create_pipe_input() as pipe,
              create_app_session(input=pipe, output=DummyOutput()),
              pytest.raises(RuntimeError, match="no model configured")):
            await run_repl(options, console=Console(file=out, color_system=None))
        assert "Resume this session" not in out.getvalue()
    run(test)
