"""Compaction wired into LiveSession and the executor, driven by the scripted model with a
small window: automatic and manual compaction, resume, fallback, "prompt too long", hooks,
and large tool results saved in the session's folder."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from aimon_core.agent import (
    AgentEvent,
    AgentRuntime,
    Compacted,
    Environment,
    StopCause,
    allow_all,
    parse_agent,
)
from aimon_core.command import default_registry
from aimon_core.compact import (
    SUMMARY_PREAMBLE,
    CompactionSettings,
    estimate_request_tokens,
    messages_tokens,
)
from aimon_core.filesystem import LocalFileSystem
from aimon_core.hook import CommandHookSpec, HookEvent, HookRegistry
from aimon_core.live import LiveSession, LiveSessionOptions
from aimon_core.llm import (
    LLMBadRequestError,
    LLMRequest,
    LLMResponse,
    LLMServerError,
    ScriptedLLMClient,
    ToolResultBlock,
    Usage,
    reply,
)
from aimon_core.session import (
    FileSessionLeaseStore,
    FileSessionRecordStore,
    SessionId,
    SessionStore,
)
from aimon_core.shell import LocalShell
from aimon_core.tools import Tool, ToolContext, ToolInput, ToolRegistry, ToolResult, builtin_tools
from aimon_core.tools._state import ToolState

AGENT = parse_agent("---\nname: tester\nmaxIterations: 60\n---\nTest agent.\n")
ENV = Environment(cwd=Path("/p"), platform="test", date="2026-01-01")
WINDOW = 12_000
SETTINGS = CompactionSettings(window_override=WINDOW, keep_recent_share=0.2)
PY = sys.executable
TOO_LONG = "prompt is too long: 30000 tokens > 12000 maximum"


def is_summary(request: LLMRequest) -> bool:
    return request.metadata.get("purpose") == "compaction"


@dataclass
class Model:
    """A scripted model: `calls` tool calls in a turn, then an answer; summaries on demand.

    Usage is honest (the estimate of the request), like a calibrated provider.
    """

    calls: int
    fail_summaries: bool = False
    refuse: Callable[[int], bool] = lambda n: False
    done: int = 0
    seen: int = 0
    requests: list[LLMRequest] = field(default_factory=list)

    def client(self, steps: int = 200) -> ScriptedLLMClient:
        return ScriptedLLMClient(steps=[self.step] * steps)

    def step(self, request: LLMRequest) -> LLMResponse:
        usage = Usage(input_tokens=estimate_request_tokens(request), output_tokens=20)
        if is_summary(request):
            if self.fail_summaries:
                raise LLMServerError("overloaded", status=529)
            return dataclasses.replace(reply("SUMMARY of the work"), usage=usage)
        self.seen += 1
        if self.refuse(self.seen):
            raise LLMBadRequestError(TOO_LONG, status=400)
        self.requests.append(request)
        if self.done >= self.calls:
            self.done = 0
            return dataclasses.replace(reply("all done"), usage=usage)
        self.done += 1
        return dataclasses.replace(reply("", ("Big", {"n": self.done})), usage=usage)


async def big(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
    return ToolResult.ok(f"{tool_input.integer('n')}:" + "r" * 8_000)


BIG = Tool(name="Big", description="Big", run=big, read_only=True,
           input_schema={"type": "object", "properties": {"n": {"type": "integer"}}})


@dataclass
class Setup:
    tmp: Path
    client: ScriptedLLMClient
    hooks: list[CommandHookSpec] = field(default_factory=list)
    settings: CompactionSettings = SETTINGS
    tools: tuple[Tool, ...] = (BIG,)

    def __post_init__(self) -> None:
        base = self.tmp / "data"
        self.store = SessionStore(FileSessionRecordStore(base), FileSessionLeaseStore(base))
        self.project = self.tmp / "proj"
        self.project.mkdir(exist_ok=True)
        registry = HookRegistry(self.hooks, project_dir=self.project) if self.hooks else None
        self.runtime = AgentRuntime(agent=AGENT, client=self.client, model="scripted",
                                    gate=allow_all, tools=ToolRegistry(self.tools),
                                    hooks=registry)

    async def open(self, session_id: str | None = None) -> LiveSession:
        ctx = ToolContext(project_root=self.project, cwd=self.project,
                          fs=LocalFileSystem(self.project), shell=LocalShell(),
                          state=ToolState())
        return await LiveSession.open(self.runtime, self.store, ctx, session_id=session_id,
                                      options=LiveSessionOptions(environment=ENV,
                                                                 compaction=self.settings,
                                                                 commands=default_registry()))


def collect(live: LiveSession) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    live.subscribe(lambda e: events.append(e) if isinstance(e, Compacted) else None)
    return events


def assert_pairs_intact(request: LLMRequest) -> None:
    messages = request.messages
    for index, message in enumerate(messages):
        results = [b.tool_use_id for b in message.content if isinstance(b, ToolResultBlock)]
        if results:
            before = messages[index - 1] if index else None
            assert before is not None and before.role == "assistant"
            assert results == [u.id for u in before.tool_uses]
        if message.tool_uses:
            after = messages[index + 1] if index + 1 < len(messages) else None
            assert after is not None, "a tool call without its result"
            answered = [b.tool_use_id for b in after.content if isinstance(b, ToolResultBlock)]
            assert answered == [u.id for u in message.tool_uses]


def test_a_turn_compacts_in_its_middle_and_finishes(tmp_path: Path) -> None:
    model = Model(calls=14)
    setup = Setup(tmp_path, model.client())

    async def main() -> tuple[list[AgentEvent], LiveSession, StopCause]:
        live = await setup.open()
        events = collect(live)
        result = await live.submit("read everything")
        await live.close()
        return events, live, result.stop

    events, live, stop = asyncio.run(main())
    assert stop is StopCause.ANSWERED
    assert events and all(isinstance(e, Compacted) and e.trigger == "auto" for e in events)
    threshold = WINDOW * SETTINGS.threshold
    for request in model.requests:
        assert estimate_request_tokens(request) < threshold
        assert_pairs_intact(request)
    stored = setup.store.records.load(live.id).transcript.messages
    assert stored[0].text.startswith(SUMMARY_PREAMBLE)
    assert stored[-1].text == "all done"
    assert list(model.requests[-1].messages) == list(stored[:-1])


def test_a_long_session_compacts_and_resume_sends_the_compacted_transcript(
    tmp_path: Path,
) -> None:
    model = Model(calls=2)
    setup = Setup(tmp_path, model.client())

    async def main() -> tuple[int, SessionId]:
        live = await setup.open()
        events = collect(live)
        for n in range(6):
            assert (await live.submit(f"task {n}")).stop is StopCause.ANSWERED
        await live.close()
        again = await setup.open(live.id)
        await again.submit("and now?")
        await again.close()
        return len(events), live.id

    compactions, session_id = asyncio.run(main())
    assert compactions >= 1
    first_after_resume = model.requests[-1]
    assert first_after_resume.messages[0].text.startswith(SUMMARY_PREAMBLE)
    stored = setup.store.records.load(session_id).transcript.messages
    assert list(first_after_resume.messages) == list(stored[:-1])
    assert messages_tokens(stored) < WINDOW


def test_failed_summaries_fall_back_and_then_advise(tmp_path: Path) -> None:
    model = Model(calls=30, fail_summaries=True)
    setup = Setup(tmp_path, model.client())

    async def main() -> tuple[list[AgentEvent], StopCause, int]:
        live = await setup.open()
        events = collect(live)
        result = await live.submit("read everything")
        await live.close()
        reopened = setup.store.records.load(live.id)
        return events, result.stop, reopened.compaction_failure_count

    events, stop, stored_failures = asyncio.run(main())
    assert stop is StopCause.ANSWERED
    compactions = [e for e in events if isinstance(e, Compacted)]
    assert compactions and not any(c.summarised for c in compactions)
    assert "Conversation not summarised" in compactions[0].text
    assert compactions[0].advice is None
    assert compactions[-1].advice is not None and "/compact" in compactions[-1].advice
    summary_calls = [r for r in setup.client.requests if is_summary(r)]
    assert len(summary_calls) == SETTINGS.max_failures  # then paused: only the fallback
    assert stored_failures == len(compactions)
    for request in model.requests:
        assert estimate_request_tokens(request) < WINDOW
        assert_pairs_intact(request)


def test_prompt_too_long_compacts_once_and_retries_once(tmp_path: Path) -> None:
    model = Model(calls=3, refuse=lambda n: n == 3)
    setup = Setup(tmp_path, model.client(), settings=CompactionSettings(window_override=200_000))

    async def main() -> tuple[StopCause, list[AgentEvent]]:
        live = await setup.open()
        events = collect(live)
        result = await live.submit("go")
        await live.close()
        return result.stop, events

    stop, events = asyncio.run(main())
    assert stop is StopCause.ANSWERED
    assert len(events) == 1
    assert sum(is_summary(r) for r in setup.client.requests) == 1


def test_a_second_prompt_too_long_is_not_retried(tmp_path: Path) -> None:
    model = Model(calls=3, refuse=lambda n: n >= 3)
    setup = Setup(tmp_path, model.client(), settings=CompactionSettings(window_override=200_000))

    async def main() -> StopCause:
        live = await setup.open()
        result = await live.submit("go")
        await live.close()
        return result.stop

    assert asyncio.run(main()) is StopCause.MODEL_ERROR
    assert sum(is_summary(r) for r in setup.client.requests) == 1
    assert model.seen == 4  # the refused call, its one retry; never a loop


def hook_recorder(tmp_path: Path, event: HookEvent, out: Path, answer: str = "") -> (
        CommandHookSpec):
    script = tmp_path / f"{event.name}.py"
    script.write_text(
        "import json, sys\n"
        f"with open({str(out)!r}, 'a') as f: f.write(sys.stdin.read().strip() + '\\n')\n"
        f"print({answer!r})\n")
    return CommandHookSpec(event=event, matcher=None, command=f"{PY} {script}", timeout=20)


def test_manual_compact_passes_the_focus_and_fires_hooks(tmp_path: Path) -> None:
    out = tmp_path / "hooks.jsonl"
    extra = json.dumps({"hookSpecificOutput": {"hookEventName": "PreCompact",
                                               "additionalContext": "keep the test names"}})
    model = Model(calls=1)
    setup = Setup(tmp_path, model.client(), hooks=[
        hook_recorder(tmp_path, HookEvent.PRE_COMPACT, out, extra),
        hook_recorder(tmp_path, HookEvent.POST_COMPACT, out),
    ], settings=CompactionSettings(window_override=200_000))

    async def main() -> str:
        live = await setup.open()
        await live.submit("first")
        await live.submit("second")
        result = await live.submit("/compact focus on the parser")
        assert result.stop is StopCause.COMMAND, result.text
        await live.close()
        return result.text

    text = asyncio.run(main())
    assert text.startswith("Conversation compacted (")
    assert "→" in text and "2 turns" in text
    summary = next(r for r in setup.client.requests if is_summary(r))
    asked = summary.messages[0].text
    assert "focus on the parser" in asked and "keep the test names" in asked
    payloads = [json.loads(line) for line in out.read_text().splitlines()]
    assert [p["hook_event_name"] for p in payloads] == ["PreCompact", "PostCompact"]
    assert payloads[0]["trigger"] == "manual"
    assert payloads[0]["custom_instructions"] == "focus on the parser"
    assert payloads[1]["compact_summary"] == "SUMMARY of the work"


def test_automatic_compaction_hooks_say_auto_and_a_block_falls_back(tmp_path: Path) -> None:
    out = tmp_path / "hooks.jsonl"
    block = json.dumps({"decision": "block", "reason": "not now"})
    model = Model(calls=8)
    setup = Setup(tmp_path, model.client(), hooks=[
        hook_recorder(tmp_path, HookEvent.PRE_COMPACT, out, block)])

    async def main() -> tuple[StopCause, list[AgentEvent]]:
        live = await setup.open()
        events = collect(live)
        result = await live.submit("go")
        await live.close()
        return result.stop, events

    stop, events = asyncio.run(main())
    assert stop is StopCause.ANSWERED
    payload = json.loads(out.read_text().splitlines()[0])
    assert payload["trigger"] == "auto" and payload["custom_instructions"] == ""
    assert not any(is_summary(r) for r in setup.client.requests)
    assert all(isinstance(e, Compacted) and not e.summarised for e in events)
    first = events[0]
    assert isinstance(first, Compacted)
    assert "PreCompact hook blocked it" in first.text and "not now" in first.text


def test_compact_with_nothing_to_summarise_changes_nothing(tmp_path: Path) -> None:
    setup = Setup(tmp_path, ScriptedLLMClient(steps=[]))

    async def main() -> tuple[StopCause, str, int]:
        live = await setup.open()
        result = await live.submit("/compact")
        await live.close()
        return result.stop, result.text, live.record.compaction_failure_count

    stop, text, failures = asyncio.run(main())
    assert stop is StopCause.COMMAND_FAILED
    assert "nothing earlier to summarise" in text and failures == 0


async def huge(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
    return ToolResult.ok("".join(f"line {i}\n" for i in range(20_000)))


def test_a_large_result_is_saved_and_read_back_without_asking(tmp_path: Path) -> None:
    read = next(t for t in builtin_tools() if t.name == "Read")
    huge_tool = Tool(name="Huge", description="Huge", run=huge, read_only=True,
                     input_schema={"type": "object", "properties": {}})
    seen: list[LLMRequest] = []

    def read_the_file(request: LLMRequest) -> LLMResponse:
        seen.append(request)
        result = request.messages[-1].content[0]
        assert isinstance(result, ToolResultBlock)
        path = result.text.split("saved in ", 1)[1].split(";", 1)[0]
        return reply("", ("Read", {"file_path": path, "offset": 19_990, "limit": 3}))

    def answer(request: LLMRequest) -> LLMResponse:
        seen.append(request)
        return reply("ok")

    client = ScriptedLLMClient(steps=[reply("", ("Huge", {})), read_the_file, answer])
    setup = Setup(tmp_path, client, tools=(huge_tool, read),
                  settings=CompactionSettings(result_limit_tokens=2_000))

    async def main() -> StopCause:
        live = await setup.open()
        result = await live.submit("go")
        await live.close()
        return result.stop

    assert asyncio.run(main()) is StopCause.ANSWERED
    spilled = seen[0].messages[-1].content[0]
    assert isinstance(spilled, ToolResultBlock)
    assert len(spilled.text) < 20_000 and "line 0\n" in spilled.text
    path = Path(spilled.text.split("saved in ", 1)[1].split(";", 1)[0])
    assert path.read_text().count("\n") == 20_000
    assert path.is_relative_to(tmp_path / "data")
    read_back = seen[1].messages[-1].content[0]
    assert isinstance(read_back, ToolResultBlock)
    assert not read_back.is_error, read_back.text
    assert "line 19990" in read_back.text


def test_status_shows_the_context_against_the_window(tmp_path: Path) -> None:
    model = Model(calls=3)
    setup = Setup(tmp_path, model.client())

    async def main() -> tuple[int, int, str]:
        live = await setup.open()
        await live.submit("go")
        status = live.status()
        shown = await live.submit("/status")
        await live.close()
        return status.context_tokens, status.context_window, shown.text

    tokens, window, text = asyncio.run(main())
    assert window == WINDOW
    # Three ~2k-token results and the calibrated overhead of the request.
    assert 6_000 < tokens < WINDOW
    assert "Context" in text and "of 12k tokens" in text


def test_print_mode_reports_automatic_compaction_on_stderr(tmp_path: Path) -> None:
    from aimon_cli._print import PrintJob, run_print

    model = Model(calls=8)
    setup = Setup(tmp_path, model.client())
    out, err = io.StringIO(), io.StringIO()

    async def main() -> StopCause:
        live = await setup.open()
        result = await run_print(PrintJob(prompt="go", output_format="text",
                                          max_iterations=None), live, out, err)
        await live.close()
        return result.stop

    assert asyncio.run(main()) is StopCause.ANSWERED
    assert out.getvalue() == "all done\n"
    assert err.getvalue().startswith("aimon: Conversation compacted (")
