"""Traces: a four-call turn as a span tree, in the local store and over OTLP/HTTP alike."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from aimon_core.llm import Usage, reply, script
from aimon_core.observe._spans import SpanRecord, find_trace, project_trace_store
from aimon_core.observe._tree import render_trace
from aimon_core.runtime import RuntimeParts, build_runtime
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore

from .conftest import Received, attributes, interrupt_after_text

USAGE = Usage(input_tokens=120, output_tokens=30, cache_read_tokens=50)


def four_calls() -> list[Any]:
    return [reply("looking", ("Glob", {"pattern": "*.py"}), usage=USAGE),
            reply("", ("Read", {"file_path": "a.py"}), ("Glob", {"pattern": "*.md"}),
                  usage=USAGE),
            reply("", ("Grep", {"pattern": "x"}), usage=USAGE),
            reply("done", usage=USAGE)]


async def run_turn(root: Path) -> str:
    (root / "a.py").write_text("x = 1\n")
    store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
    parts = RuntimeParts(client=script(*four_calls()), trust_all=True)
    async with build_runtime(root, parts=parts) as built, await built.open_session(store) as live:
        await live.submit("tell me about a.py")
        return live.id


def tree(spans: list[SpanRecord]) -> list[tuple[int, str]]:
    """Return (depth, name) in the order parents before children."""
    by_id = {s.span_id: s for s in spans}

    def depth(span: SpanRecord) -> int:
        return 0 if not span.parent_id else 1 + depth(by_id[span.parent_id])

    return [(depth(s), s.name) for s in spans]


EXPECTED = [
    (0, "invoke_agent default"),
    (1, "iteration 1"), (2, "chat scripted"), (2, "execute_tool Glob"),
    (1, "iteration 2"), (2, "chat scripted"), (2, "execute_tool Read"),
    (2, "execute_tool Glob"),
    (1, "iteration 3"), (2, "chat scripted"), (2, "execute_tool Grep"),
    (1, "iteration 4"), (2, "chat scripted"),
]


def test_the_local_store_keeps_the_turns_tree(tmp_path: Path) -> None:
    session_id = asyncio.run(run_turn(tmp_path))
    spans = list(find_trace(session_id))
    store = project_trace_store(tmp_path.resolve())
    assert spans == list(store.read(session_id))
    assert store.path(session_id).stat().st_mode & 0o777 == 0o600
    assert tree(spans) == EXPECTED
    root, chat = spans[0], spans[2]
    assert root.attributes["gen_ai.conversation.id"] == session_id
    assert root.attributes["aimon.stop"] == "answered"
    assert root.attributes["aimon.iterations"] == 4
    assert chat.attributes["gen_ai.usage.input_tokens"] == 170
    assert chat.attributes["gen_ai.usage.output_tokens"] == 30
    assert chat.attributes["gen_ai.usage.cache_read.input_tokens"] == 50
    assert "aimon.time_to_first_token_s" in chat.attributes
    tool = spans[3]
    assert tool.attributes["aimon.tool.decision"] == "allowed"
    assert tool.attributes["aimon.tool.decided_by"]
    assert all(s.start <= s.end for s in spans)
    assert all(s.trace_id == root.trace_id for s in spans)
    # Prompts and tool output are not kept unless tracing.includeContent says so.
    assert not any(k in s.attributes for s in spans
                   for k in ("aimon.prompt", "aimon.tool.output", "aimon.tool.input"))
    text = render_trace(spans)
    assert text.splitlines()[0].startswith("invoke_agent default")
    assert "├─ iteration 1" in text and "│  ├─ chat scripted" in text


def test_otlp_receives_the_same_tree_as_aimon_trace_json(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        otlp_receiver: tuple[str, Received]) -> None:
    endpoint, received = otlp_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    session_id = asyncio.run(run_turn(tmp_path))  # closing the runtime sends what is queued
    assert received.paths == ["/v1/traces"]
    assert received.resources[0]["service.name"] == "aimon"
    # `aimon trace --json` prints the stored spans: the same ids, names, parents, attributes.
    shown = subprocess.run([sys.executable, "-m", "aimon_cli.app", "trace", session_id,
                            "--json"], capture_output=True, text=True, cwd=tmp_path,
                           check=True, env=os.environ.copy())
    stored = json.loads(shown.stdout)
    got = {s.span_id.hex(): s for s in received.spans}
    assert len(got) == len(stored) == len(EXPECTED)
    for span in stored:
        otlp = got[span["span_id"]]
        assert otlp.trace_id.hex() == span["trace_id"]
        assert otlp.parent_span_id.hex() == span["parent_id"]
        assert otlp.name == span["name"]
        assert attributes(otlp.attributes) == span["attributes"]
        assert otlp.start_time_unix_nano == int(span["start"] * 1e9)


def test_with_tracing_off_no_opentelemetry_module_is_imported(tmp_path: Path) -> None:
    code = textwrap.dedent(f"""
        import asyncio, sys
        from pathlib import Path
        from aimon_core.llm import reply, script
        from aimon_core.runtime import RuntimeParts, build_runtime
        from aimon_core.session import (MemorySessionLeaseStore, MemorySessionRecordStore,
                                        SessionStore)

        async def main():
            store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
            parts = RuntimeParts(client=script(reply("", ("Glob", {{"pattern": "*"}})),
                                               reply("done")), trust_all=True)
            async with build_runtime(Path({str(tmp_path)!r}), parts=parts) as built:
                async with await built.open_session(store) as live:
                    await live.submit("hi")

        asyncio.run(main())
        print(sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry"))
    """)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True)
    assert out.stdout.strip() == "[]"


def test_trace_command_shows_the_sessions_tree(tmp_path: Path) -> None:
    async def main() -> str:
        store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
        parts = RuntimeParts(client=script(*four_calls()), trust_all=True)
        async with build_runtime(tmp_path, parts=parts) as built, \
                await built.open_session(store) as live:
            await live.submit("tell me")
            return (await live.submit("/trace")).text

    (tmp_path / "a.py").write_text("x = 1\n")
    text = asyncio.run(main())
    first, *tree_lines = text.splitlines()
    assert first.startswith("1 execution · ") and "model calls" in first
    assert tree_lines[0].startswith("invoke_agent default  ")
    assert sum("chat scripted" in line for line in tree_lines) == 4


def test_a_subagent_is_a_child_of_the_task_call_that_started_it(tmp_path: Path) -> None:
    task = ("Task", {"description": "look", "prompt": "Where is x?",
                     "subagent_type": "general-purpose"})
    client = script(reply("", task, usage=USAGE), reply("in a.py", usage=USAGE),
                    reply("done", usage=USAGE))

    async def main() -> str:
        store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
        parts = RuntimeParts(client=client, trust_all=True)
        async with build_runtime(tmp_path, parts=parts) as built, \
                await built.open_session(store) as live:
            await live.submit("find x")
            return live.id

    spans = list(find_trace(asyncio.run(main())))
    assert tree(spans) == [
        (0, "invoke_agent default"),
        (1, "iteration 1"), (2, "chat scripted"), (2, "execute_tool Task"),
        (3, "invoke_agent general-purpose"), (4, "iteration 1"), (5, "chat scripted"),
        (1, "iteration 2"), (2, "chat scripted"),
    ]
    fork = spans[4]
    assert fork.attributes["aimon.execution.kind"] == "fork"
    assert str(fork.attributes["aimon.execution.id"]).startswith("exec-")
    assert {s.trace_id for s in spans} == {spans[0].trace_id}


def test_a_hook_that_runs_is_a_span_under_its_tool_call(tmp_path: Path) -> None:
    from aimon_core.hook import HookEvent, HookInput, HookResult

    async def deny_glob(hook_input: HookInput) -> HookResult | None:
        return HookResult.deny("not now") if hook_input.match_subject() == "Glob" else None

    async def main() -> str:
        store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
        client = script(reply("", ("Glob", {"pattern": "*"})), reply("done"))
        async with build_runtime(tmp_path, parts=RuntimeParts(client=client, trust_all=True)
                                 ) as built:
            built.hooks.register(HookEvent.PRE_TOOL, deny_glob)
            async with await built.open_session(store) as live:
                await live.submit("go")
                return live.id

    spans = list(find_trace(asyncio.run(main())))
    assert tree(spans)[:5] == [(0, "invoke_agent default"), (1, "iteration 1"),
                               (2, "chat scripted"), (2, "execute_tool Glob"),
                               (3, "hook PreToolUse")]
    hook, tool = spans[4], spans[3]
    assert tool.error == "tool error"  # not its text: that is the tool's output
    assert hook.attributes["aimon.hook.outcome"] == "denied"
    assert tool.attributes["aimon.tool.decision"] == "not run"
    assert tool.attributes["aimon.tool.is_error"] is True


def test_an_asked_call_says_it_was_asked_and_what_was_answered(tmp_path: Path) -> None:
    from aimon_core.agent import ApprovalAnswer, ApprovalRequested

    async def main() -> str:
        store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
        client = script(reply("", ("Bash", {"command": "touch made.txt"})), reply("done"))
        async with build_runtime(tmp_path, parts=RuntimeParts(client=client, trust_all=True)
                                 ) as built, await built.open_session(store) as live:
            live.subscribe(lambda e: live.answer(e.request.id, ApprovalAnswer(allowed=True))
                           if isinstance(e, ApprovalRequested) else None, answers=True)
            await live.submit("make it")
            return live.id

    spans = list(find_trace(asyncio.run(main())))
    [tool] = [s for s in spans if s.name == "execute_tool Bash"]
    assert tool.attributes["aimon.tool.asked"] is True
    assert tool.attributes["aimon.tool.answer"] == "allowed for once"
    assert tool.attributes["aimon.tool.decision"] == "allowed"
    assert tool.attributes["aimon.tool.exit_status"] == 0
    assert "asked, allowed for once" in render_trace(spans)


def test_an_otlp_protocol_aimon_does_not_speak_is_said_not_sent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        otlp_receiver: tuple[str, Received]) -> None:
    endpoint, received = otlp_receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    built = build_runtime(tmp_path, parts=RuntimeParts(client=script(), trust_all=True))
    asyncio.run(built.aclose())
    assert any("OTEL_EXPORTER_OTLP_PROTOCOL='grpc'" in n for n in built.notices)
    assert received.paths == []


@pytest.mark.parametrize(("decided_by", "shown"), [
    ("allowed by rule Edit", "allowed by rule Edit"),
    ("read-only tool", "allowed by read-only tool"),
])
def test_a_tool_line_says_what_allowed_it_once(decided_by: str, shown: str) -> None:
    span = SpanRecord(trace_id="1" * 32, span_id="2" * 16, parent_id="", name="execute_tool X",
                      start=0.0, end=0.25, attributes={"aimon.tool.decision": "allowed",
                                                       "aimon.tool.decided_by": decided_by,
                                                       "aimon.tool.exit_status": 0})
    assert render_trace([span]) == f"execute_tool X  250ms  {shown} · exit 0"


def test_a_call_completed_before_an_interrupt_is_one_span(tmp_path: Path) -> None:
    from aimon_core.llm import ResponseCompleted, TextDelta

    from ..live.test_interrupted_usage import StallingClient

    client = StallingClient(TextDelta(text="partial"), ResponseCompleted(response=reply("x")))
    session_id, _ = interrupt_after_text(tmp_path, client)
    spans = list(find_trace(session_id))
    assert [name for _, name in tree(spans)] == [
        "invoke_agent default", "iteration 1", "chat claude-sonnet-4-5"]
    assert spans[2].error == "" and spans[0].error == "CancelledError"
