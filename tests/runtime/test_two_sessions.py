"""Two sessions on one runtime: the approvals, turn state and hooks of one never reach the other.

One `AgentAssembly` (one runtime, one permission policy) serves both sessions, as a library
user may open them and as the service hosts them. The model is a scripted client that answers
each session from its own script, routed by the session id every request carries.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from aimon_core.agent import ApprovalAnswer, ApprovalRequested, ApprovalScope
from aimon_core.hook import HookEvent, HookInput, HookResult
from aimon_core.live import LiveSession, LiveSessionEvent
from aimon_core.llm import LLMRequest, LLMResponse, ScriptedLLMClient, reply
from aimon_core.runtime import AgentAssembly, RuntimeParts, build_runtime
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore
from aimon_core.tools import tool

Scripts = dict[str, list[LLMResponse]]


def by_session(scripts: Scripts, calls: int) -> ScriptedLLMClient:
    """Return a client that answers each request from the script of its session."""

    def step(request: LLMRequest) -> LLMResponse:
        return scripts[str(request.metadata["session_id"])].pop(0)

    steps: list[Callable[[LLMRequest], LLMResponse]] = [step] * calls
    return ScriptedLLMClient(steps=list(steps))


def store() -> SessionStore:
    return SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())


async def answering(assembly: AgentAssembly, answers: list[ApprovalAnswer],
                    asked: list[str]) -> LiveSession:
    """Open a session whose questions are answered from `answers`, in order; note each one."""
    live = await assembly.open_session(store())

    def on_event(event: LiveSessionEvent) -> None:
        if isinstance(event, ApprovalRequested):
            asked.append(event.request.subject_text)
            live.answer(event.request.id, answers.pop(0))

    live.subscribe(on_event, answers=True)
    return live


def test_a_session_answer_belongs_to_its_session(tmp_path: Path) -> None:
    scripts: Scripts = {}
    client = by_session(scripts, 6)
    asked_a: list[str] = []
    asked_b: list[str] = []

    async def main() -> tuple[tuple[str, ...], tuple[str, ...]]:
        async with build_runtime(tmp_path, parts=RuntimeParts(client=client)) as assembly:
            a = await answering(assembly, [ApprovalAnswer(allowed=True,
                                                          scope=ApprovalScope.SESSION)], asked_a)
            b = await answering(assembly, [ApprovalAnswer(allowed=False)], asked_b)
            async with a, b:
                scripts[a.id] = [reply("", ("Bash", {"command": "touch a.txt"})), reply("a"),
                                 reply("", ("Bash", {"command": "touch a.txt"})), reply("a again")]
                scripts[b.id] = [reply("", ("Bash", {"command": "touch a.txt"})), reply("b")]
                await a.submit("first")  # "yes, for this session", in a
                await b.submit("first")  # b is asked: a's answer is not b's
                await a.submit("again")  # a is not asked again
                return a.record.approvals, b.record.approvals

    approvals_a, approvals_b = asyncio.run(main())
    assert approvals_a == ("Bash(touch a.txt)",)
    assert approvals_b == ()
    assert asked_a == ["touch a.txt"]
    assert asked_b == ["touch a.txt"]


def test_a_turn_answer_outlives_another_sessions_turn(tmp_path: Path) -> None:
    """A "yes, for this turn" in one session holds while the other session runs a whole turn."""
    waiting, other_done = asyncio.Event(), asyncio.Event()

    @tool(read_only=True)
    async def wait_for_the_other() -> str:
        """Wait until the other session's turn has ended."""
        waiting.set()
        await other_done.wait()
        return "the other turn ended"

    scripts: Scripts = {}
    client = by_session(scripts, 5)
    asked_a: list[str] = []
    asked_b: list[str] = []
    write = ("Write", {"file_path": "a.txt", "content": "one\n"})

    async def main() -> None:
        parts = RuntimeParts(client=client, tools=(wait_for_the_other,))
        async with build_runtime(tmp_path, parts=parts) as assembly:
            a = await answering(assembly, [ApprovalAnswer(allowed=True,
                                                          scope=ApprovalScope.TURN)], asked_a)
            b = await answering(assembly, [], asked_b)
            async with a, b:
                scripts[a.id] = [reply("", write), reply("", ("wait_for_the_other", {})),
                                 reply("", write), reply("a")]
                scripts[b.id] = [reply("b")]
                turn_a = a.submit_async("write twice")
                await waiting.wait()  # a's first Write was answered "for this turn"
                await b.submit("hello")  # b's turn starts (and ends) in the middle of a's
                other_done.set()
                await turn_a

    asyncio.run(main())
    assert asked_a == ["a.txt"]  # the second Write was allowed by the turn's answer
    assert asked_b == []


def test_each_sessions_hooks_and_events_stay_its_own(tmp_path: Path) -> None:
    scripts: Scripts = {}
    client = by_session(scripts, 4)
    fired: list[tuple[str, str]] = []
    seen: dict[str, list[str]] = {}

    async def note(hook_input: HookInput) -> HookResult:
        fired.append((hook_input.session_id, str((hook_input.tool_input or {})["command"])))
        return HookResult()

    async def main() -> tuple[str, str]:
        async with build_runtime(tmp_path, parts=RuntimeParts(client=client)) as assembly:
            assembly.hooks.register(HookEvent.PRE_TOOL, note, matcher="Bash")
            a = await assembly.open_session(store())
            b = await assembly.open_session(store())
            async with a, b:
                for live in (a, b):
                    seen[live.id] = []
                    live.subscribe(lambda e, sid=live.id: seen[sid].append(type(e).__name__))
                scripts[a.id] = [reply("", ("Bash", {"command": "echo from-a"})), reply("a")]
                scripts[b.id] = [reply("", ("Bash", {"command": "echo from-b"})), reply("b")]
                await asyncio.gather(a.submit("go"), b.submit("go"))
                return a.id, b.id

    id_a, id_b = asyncio.run(main())
    assert sorted(fired) == sorted([(id_a, "echo from-a"), (id_b, "echo from-b")])
    for session in (id_a, id_b):
        assert seen[session].count("TurnStarted") == 1
        assert seen[session].count("ToolCallFinished") == 1
