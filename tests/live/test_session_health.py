"""A session on disk stays useful: stored with its first prompt, well formed after a failed
turn or a crash, and its read-state survives a resume (issue 9, must-fix 4 to 6)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from aimon_core.agent import AgentRuntime, Environment, allow_all, parse_agent
from aimon_core.filesystem import LocalFileSystem
from aimon_core.live import LiveSession, LiveSessionEvent, LiveSessionOptions
from aimon_core.live._history import turn_history
from aimon_core.llm import (
    LLMConnectionError,
    Message,
    ScriptedLLMClient,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    reply,
    script,
)
from aimon_core.session import FileSessionLeaseStore, FileSessionRecordStore, SessionStore
from aimon_core.shell import LocalShell
from aimon_core.tools import ToolContext, ToolRegistry
from aimon_core.tools._file_tools import EDIT_TOOL, READ_TOOL
from aimon_core.tools._state import ToolState

AGENT = parse_agent("---\nname: tester\nmaxIterations: 9\n---\nTest agent.\n")
ENV = Environment(cwd=Path("/p"), platform="test", date="2026-01-01")


class Setup:
    def __init__(self, tmp_path: Path, client: ScriptedLLMClient) -> None:
        self.client = client
        self.runtime = AgentRuntime(agent=AGENT, client=client, model="scripted",
                                    gate=allow_all, tools=ToolRegistry((READ_TOOL, EDIT_TOOL)))
        self.base = tmp_path / "data"
        self.records = FileSessionRecordStore(self.base)
        self.store = SessionStore(self.records, FileSessionLeaseStore(self.base))
        self.project = tmp_path / "proj"
        self.project.mkdir(exist_ok=True)

    async def open(self, session_id: str | None = None) -> LiveSession:
        ctx = ToolContext(project_root=self.project, cwd=self.project,
                          fs=LocalFileSystem(self.project), shell=LocalShell(),
                          state=ToolState())
        return await LiveSession.open(self.runtime, self.store, ctx, session_id=session_id,
                                      options=LiveSessionOptions(environment=ENV))


def roles(messages: tuple[Message, ...] | list[Message]) -> list[str]:
    return [m.role for m in messages]


def test_a_start_without_a_prompt_leaves_no_session(tmp_path: Path) -> None:
    setup = Setup(tmp_path, script(reply("hi")))

    async def main() -> str:
        live = await setup.open()
        assert setup.records.list_sessions() == ()
        assert live.transcript_path is not None  # hooks get where it will be
        await live.close()
        return live.id

    asyncio.run(main())
    assert setup.records.list_sessions() == ()

    async def with_prompt() -> None:
        live = await setup.open()
        await live.submit("hello")
        await live.close()

    asyncio.run(with_prompt())
    [summary] = setup.records.list_sessions()
    assert summary.message_count == 2


def test_a_failed_turn_is_not_resent_and_is_named(tmp_path: Path) -> None:
    setup = Setup(tmp_path, script(LLMConnectionError("refused"), reply("fine")))
    events: list[LiveSessionEvent] = []

    async def main() -> None:
        live = await setup.open()
        live.subscribe(events.append)
        first = await live.submit("first prompt")
        assert first.text == ""
        await live.submit("second prompt")
        await live.close()

    asyncio.run(main())
    sent = setup.client.requests[-1].messages
    assert roles(sent) == ["user"]
    assert "second prompt" in sent[0].text and "first prompt" not in sent[0].text
    notices = [e for e in events if type(e).__name__ == "Notice"]
    assert any("first prompt" in str(getattr(n, "text", "")) for n in notices)


def test_history_after_a_crash_never_has_two_user_turns() -> None:
    use = ToolUseBlock(id="t1", name="Read", input={})
    answered = Message(role="user", content=(ToolResultBlock(
        tool_use_id="t1", content=(TextBlock(text="x"),)),))
    history = (Message.user("a"), Message(role="assistant", content=(TextBlock(text="b"),)),
               Message.user("lost in a crash"), Message.user("c"),
               Message(role="assistant", content=(use,)), answered)
    built = turn_history(history, Message.user("next"))
    assert roles(built.history) == ["user", "assistant", "user", "assistant"]
    assert "lost in a crash" not in "".join(m.text for m in built.history)
    assert built.prompt.role == "user" and built.prompt.text.endswith("next")
    assert isinstance(built.prompt.content[0], ToolResultBlock)
    unanswered = turn_history(history[:3], Message.user("next"))
    assert unanswered.unanswered == ("lost in a crash",)
    assert roles(unanswered.history) == ["user", "assistant"]


def test_edit_after_resume_works_on_a_file_read_before(tmp_path: Path) -> None:
    setup = Setup(tmp_path, script(
        reply("", ("Read", {"file_path": "a.txt"})), reply("read it"),
        reply("", ("Edit", {"file_path": "a.txt", "old_string": "one", "new_string": "two"})),
        reply("edited"),
        reply("", ("Edit", {"file_path": "b.txt", "old_string": "x", "new_string": "y"})),
        reply("refused"),
    ))
    (setup.project / "a.txt").write_text("one\n")
    (setup.project / "b.txt").write_text("x\n")

    async def first() -> str:
        live = await setup.open()
        await live.submit("read a.txt")
        await live.close()
        return live.id

    session_id = asyncio.run(first())

    async def resumed() -> None:
        live = await setup.open(session_id)
        await live.submit("edit a.txt")
        assert (setup.project / "a.txt").read_text() == "two\n"
        await live.submit("edit b.txt")  # never read: still refused
        await live.close()

    asyncio.run(resumed())
    assert (setup.project / "b.txt").read_text() == "x\n"


def test_a_file_changed_since_the_read_needs_a_fresh_read(tmp_path: Path) -> None:
    setup = Setup(tmp_path, script(
        reply("", ("Read", {"file_path": "a.txt"})), reply("read it"),
        reply("", ("Edit", {"file_path": "a.txt", "old_string": "one", "new_string": "two"})),
        reply("refused"),
    ))
    (setup.project / "a.txt").write_text("one\n")

    async def first() -> str:
        live = await setup.open()
        await live.submit("read a.txt")
        await live.close()
        return live.id

    session_id = asyncio.run(first())
    (setup.project / "a.txt").write_text("one, changed\n")

    async def resumed() -> None:
        live = await setup.open(session_id)
        await live.submit("edit a.txt")
        await live.close()

    asyncio.run(resumed())
    assert (setup.project / "a.txt").read_text() == "one, changed\n"
    result = setup.client.requests[-1].messages[-1].content[0]
    assert isinstance(result, ToolResultBlock) and result.is_error
    assert "changed since" in "".join(b.text for b in result.content
                                      if isinstance(b, TextBlock))
