"""/model with the REPL as its command host (memory stores, a scripted model)."""

from __future__ import annotations

import asyncio
from io import StringIO
from pathlib import Path

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from rich.console import Console

from aimon_cli.repl import ReplOptions, ReplSession
from aimon_core.agent import AgentRuntime, Environment, parse_agent
from aimon_core.filesystem import LocalFileSystem
from aimon_core.live import LiveSession, LiveSessionOptions
from aimon_core.llm import ScriptedLLMClient, reply
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore
from aimon_core.shell import LocalShell
from aimon_core.tools import ToolContext, ToolRegistry, ToolState

AGENT = parse_agent("---\nname: tester\n---\nTest agent.\n")
ENV = Environment(cwd=Path("/p"), platform="test", date="2026-01-01")


def test_the_repl_switches_the_model_for_the_next_prompt(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    client = ScriptedLLMClient(steps=[reply("hi")], provider="openai")
    store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
    runtime = AgentRuntime(agent=AGENT, client=client, model="gpt-5.4", tools=ToolRegistry(()))

    async def open_session(session_id: str | None) -> LiveSession:
        ctx = ToolContext(project_root=tmp_path, cwd=tmp_path, fs=LocalFileSystem(tmp_path),
                          shell=LocalShell(), state=ToolState())
        return await LiveSession.open(runtime, store, ctx, session_id=session_id,
                                      options=LiveSessionOptions(environment=ENV))

    async def test() -> None:
        console = Console(file=StringIO(), width=120, color_system=None)
        options = ReplOptions(project_root=tmp_path, store=store, open_session=open_session,
                              history_file=tmp_path / "history")
        with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
            repl = ReplSession(options, console=console)
            host = repl.host
            try:
                pipe.send_text("\x03")  # /model alone offers a picker: Ctrl-C cancels it
                kept = await host.commands.run("/model", host)
                assert kept.text == "Model unchanged: gpt-5.4."
                refused = await host.commands.run("/model gpt-5.9", host)
                assert refused.is_error and "Did you mean gpt-5.5" in refused.text
                done = await host.commands.run("/model gpt-5.4-mini", host)
                assert done.text.startswith("Model: gpt-5.4-mini (was gpt-5.4)"), done.text
                live = await host.live_session()
                await live.submit("hello")
                assert client.requests[0].model == "gpt-5.4-mini"
            finally:
                await repl.aclose()

    asyncio.run(test())
