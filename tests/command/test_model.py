"""/model: list the provider's models, switch the session's model, keep it on resume."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from aimon_core.agent import AgentRuntime, Environment, StopCause, parse_agent
from aimon_core.command import default_registry, known_name
from aimon_core.filesystem import LocalFileSystem
from aimon_core.hook import HookRegistry
from aimon_core.live import LiveSession, LiveSessionOptions
from aimon_core.live._host import SessionCommandHost
from aimon_core.llm import ModelSettings, ScriptedLLMClient, ScriptStep, reply
from aimon_core.runtime import AgentAssembly, RuntimeFlags, RuntimeParts, build_runtime
from aimon_core.session import (
    FileSessionLeaseStore,
    FileSessionRecordStore,
    MemorySessionLeaseStore,
    MemorySessionRecordStore,
    ModelChoice,
    SessionStore,
)
from aimon_core.shell import LocalShell
from aimon_core.tools import Tool, ToolContext, ToolInput, ToolRegistry, ToolResult, ToolState

AGENT = parse_agent("---\nname: tester\n---\nTest agent.\n")
ENV = Environment(cwd=Path("/p"), platform="test", date="2026-01-01")


@pytest.fixture(autouse=True)
def _no_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@contextlib.asynccontextmanager
async def session(tmp_path: Path, client: ScriptedLLMClient, model: str, *,
                  store: SessionStore | None = None, session_id: str | None = None,
                  tools: tuple[Tool, ...] = ()) -> AsyncIterator[LiveSession]:
    store = store or SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
    runtime = AgentRuntime(agent=AGENT, client=client, model=model, tools=ToolRegistry(tools))
    ctx = ToolContext(project_root=tmp_path, cwd=tmp_path, fs=LocalFileSystem(tmp_path),
                      shell=LocalShell(), state=ToolState())
    live = await LiveSession.open(runtime, store, ctx, session_id=session_id,
                                  options=LiveSessionOptions(environment=ENV,
                                                             commands=default_registry()))
    try:
        yield live
    finally:
        await live.close()


def anthropic(*steps: ScriptStep) -> ScriptedLLMClient:
    return ScriptedLLMClient(steps=list(steps), provider="anthropic")


def test_model_lists_the_providers_models_and_marks_the_current_one(tmp_path: Path) -> None:
    async def test() -> None:
        async with session(tmp_path, anthropic(), "claude-sonnet-4-5") as live:
            shown = await live.submit("/model")
            assert shown.stop is StopCause.COMMAND
            lines = shown.text.splitlines()
            assert lines[0] == "Models aimon knows for anthropic (* is this session's):"
            assert "* claude-sonnet-4-5" in lines and "  claude-opus-4-8" in lines
            assert not any(line.lstrip(" *").startswith("gpt-") for line in lines)
            assert "  claude" not in lines  # the catch-all of unknown Claudes is no model
        async with session(tmp_path, anthropic(), "claude-haiku-4-5-20251001") as live:
            lines = (await live.submit("/model")).text.splitlines()
            assert lines[1] == "* claude-haiku-4-5-20251001"
    asyncio.run(test())


def test_switching_applies_to_the_next_request_and_survives_resume(tmp_path: Path) -> None:
    # The file store: the choice goes through the transcript's codec.
    store = SessionStore(FileSessionRecordStore(tmp_path / "home"),
                         FileSessionLeaseStore(tmp_path / "home"))

    async def test() -> None:
        client = anthropic(reply("one"), reply("two"))
        async with session(tmp_path, client, "claude-sonnet-4-5", store=store) as live:
            switched = await live.submit("/model claude-opus-4-8")  # before the first message
            assert switched.stop is StopCause.COMMAND, switched.text
            assert switched.text == ("Model: claude-opus-4-8 (was claude-sonnet-4-5); it is "
                                     "stored with the session from its first prompt.")
            await live.submit("hello")
            await live.submit("/model claude-sonnet-4-5")
            again = await live.submit("/model claude-opus-4-8")
            assert again.text == ("Model: claude-opus-4-8 (was claude-sonnet-4-5); the "
                                  "session keeps it when resumed.")
            assert live.status().model == "claude-opus-4-8"
            await live.submit("again")
            assert [r.model for r in client.requests] == ["claude-opus-4-8", "claude-opus-4-8"]
            session_id = live.id
        resumed_client = anthropic(reply("three"))
        async with session(tmp_path, resumed_client, "claude-sonnet-4-5", store=store,
                           session_id=session_id) as live:
            assert live.runtime.model == "claude-opus-4-8"
            await live.submit("and again")
            assert resumed_client.requests[0].model == "claude-opus-4-8"
            # /budget reset drops the limits, not the model.
            await live.submit("/budget iterations 5")
            await live.submit("/budget reset")
            assert live.record.budget_override is None
            assert live.record.model_choice == ModelChoice(model="claude-opus-4-8",
                                                           provider="anthropic")
        # Resumed with another provider, the stored model does not apply.
        other = ScriptedLLMClient(steps=[], provider="openai")
        async with session(tmp_path, other, "gpt-5.4", store=store,
                           session_id=session_id) as live:
            assert live.runtime.model == "gpt-5.4"
    asyncio.run(test())


def test_unknown_models_are_refused_with_near_matches(tmp_path: Path) -> None:
    async def test() -> None:
        async with session(tmp_path, anthropic(), "claude-sonnet-4-5") as live:
            typo = await live.submit("/model claude-opus-4-9")
            assert typo.stop is StopCause.COMMAND_FAILED
            assert typo.text.startswith("Unknown model 'claude-opus-4-9' for anthropic. "
                                        "Did you mean claude-opus-4-8")
            other = await live.submit("/model gpt-5.4")
            assert other.stop is StopCause.COMMAND_FAILED
            assert "gpt-5.4 is an openai model" in other.text
            assert "--provider openai --model gpt-5.4" in other.text
            assert live.runtime.model == "claude-sonnet-4-5"
            assert live.record.model_choice is None
    asyncio.run(test())


def test_an_openai_compatible_endpoint_takes_any_model_name(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    async def test() -> None:
        openai = ScriptedLLMClient(steps=[reply("ok")], provider="openai")
        async with session(tmp_path, openai, "gpt-5.4") as live:
            refused = await live.submit("/model llama3.2:3b")
            assert refused.stop is StopCause.COMMAND_FAILED
            monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
            listing = (await live.submit("/model")).text
            assert "http://127.0.0.1:11434/v1 is an OpenAI-compatible endpoint" in listing
            switched = await live.submit("/model llama3.2:3b")
            assert switched.stop is StopCause.COMMAND, switched.text
            assert "aimon does not know this model" in switched.text
            await live.submit("hi")
            assert openai.requests[0].model == "llama3.2:3b"
    asyncio.run(test())


def test_a_switch_during_a_turn_applies_from_the_next_turn(tmp_path: Path) -> None:
    entered, release = asyncio.Event(), asyncio.Event()

    async def wait(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        entered.set()
        await release.wait()
        return ToolResult.ok("done")

    waiter = Tool(name="Wait", description="Wait", run=wait, read_only=True,
                  input_schema={"type": "object", "properties": {}})

    async def test() -> None:
        client = anthropic(reply("", ("Wait", {})), reply("first done"), reply("second"))
        async with session(tmp_path, client, "claude-sonnet-4-5", tools=(waiter,)) as live:
            turn = live.submit_async("work")
            await entered.wait()
            assert live.commands is not None
            ran = await live.commands.run("/model claude-haiku-4-5",
                                          SessionCommandHost(live, live.commands))
            assert "It applies from the next turn." in ran.text
            release.set()
            await turn
            await live.submit("next")
            assert [r.model for r in client.requests] == [
                "claude-sonnet-4-5", "claude-sonnet-4-5", "claude-haiku-4-5"]
    asyncio.run(test())


def test_known_name() -> None:
    known = ("claude-haiku-4-5", "gpt-4o")
    assert known_name("claude-haiku-4-5", known) == "claude-haiku-4-5"
    assert known_name("Claude-Haiku-4-5-20251001", known) == "claude-haiku-4-5-20251001"
    assert known_name("gpt-4o-2024-08-06", known) == "gpt-4o-2024-08-06"
    assert known_name("claude-haiku-4-5x", known) is None
    assert known_name("gpt-4o-mini-turbo", known) is None


def test_a_model_flag_beats_the_resumed_sessions_choice(tmp_path: Path) -> None:
    store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())

    def assembly(flag: str | None, client: ScriptedLLMClient) -> AgentAssembly:
        return build_runtime(tmp_path, flags=RuntimeFlags(model=flag), parts=RuntimeParts(
            client=client, model=flag or "claude-sonnet-4-5", agent_definition=AGENT))

    async def test() -> None:
        first = await asyncio.to_thread(assembly, None, anthropic(reply("one")))
        live = await first.open_session(store)
        await live.submit("/model claude-opus-4-8")
        await live.submit("hello")
        session_id = live.id
        await live.close()
        await first.aclose()
        for flag, expected in ((None, "claude-opus-4-8"),
                               ("claude-haiku-4-5", "claude-haiku-4-5")):
            again = await asyncio.to_thread(assembly, flag, anthropic())
            live = await again.open_session(store, session_id=session_id)
            assert live.runtime.model == expected, flag
            await live.close()
            await again.aclose()
    asyncio.run(test())


def test_aliases_name_the_newest_model_of_a_family_and_typos_get_them_suggested(
        tmp_path: Path) -> None:
    async def test() -> None:
        async with session(tmp_path, anthropic(), "claude-sonnet-4-5") as live:
            assert (await live.submit("/model opus")).text.startswith(
                "Model: claude-opus-5-5 (was claude-sonnet-4-5)")
            assert (await live.submit("/model sonnet")).text.startswith(
                "Model: claude-sonnet-5-5 (was claude-opus-5-5)")
            typo = await live.submit("/model sonet")
            assert typo.stop is StopCause.COMMAND_FAILED
            assert typo.text.startswith("Unknown model 'sonet' for anthropic. Did you mean "
                                        "sonnet")
        async with session(tmp_path, ScriptedLLMClient(steps=[], provider="openai"),
                           "llama3.1:8b") as live:  # a server's own names are its to read
            assert (await live.submit("/model opus")).text.startswith("Model: opus")
    asyncio.run(test())


@pytest.mark.parametrize(("provider", "parent", "wanted", "sent"), [
    ("openai", "gpt-5.4", "deepseek-chat", "deepseek-chat"),
    ("openai", "qwen3-coder", "llama3.1:8b", "llama3.1:8b"),
    ("openai", "gpt-5.4", "gpt-5.4-mini", "gpt-5.4-mini"),
    ("openai", "gpt-5.4", "claude-opus-4-8", "gpt-5.4"),
    ("anthropic", "claude-sonnet-5-5", "haiku", "claude-haiku-5-5"),
    ("anthropic", "claude-sonnet-5-5", "claude-opus-4-8", "claude-opus-4-8"),
    ("anthropic", "claude-sonnet-5-5", "gpt-5.4", "claude-sonnet-5-5"),
    ("anthropic", "claude-sonnet-5-5", "inherit", "claude-sonnet-5-5"),
])
def test_a_subagents_model_is_sent_when_the_provider_may_serve_it(
        tmp_path: Path, provider: str, parent: str, wanted: str, sent: str) -> None:
    from aimon_core.permission import PermissionMode, PermissionPolicy, PermissionRules
    from aimon_core.runtime._fork import ForkBase, fork_runtime

    agent = parse_agent(f"---\nname: helper\nmodel: {wanted}\n---\nHelp.\n")
    base = ForkBase(project_root=tmp_path, client=ScriptedLLMClient(steps=[], provider=provider),
                    model=parent, settings=ModelSettings(),
                    policy=PermissionPolicy(PermissionRules(), PermissionMode.DEFAULT, tmp_path),
                    hooks=HookRegistry([]), permission_mode=lambda: "default",
                    restrictions={}, agent_name="default")
    assert fork_runtime(base, agent).model == sent
