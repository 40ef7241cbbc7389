"""`aimon acp` driven by a real ACP client (the `agent-client-protocol` package's own).

Each test starts `aimon acp` against the loopback model server and talks to it as an editor
does: initialize, session/new, session/prompt with the updates it streams, the permission
questions it asks, session/cancel, session/load in a new process.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from acp import schema, spawn_agent_process, text_block

from aimon_core.testing import (
    LoopbackModelServer,
    RecordedRequest,
    Reply,
    ScriptedToolCall,
    StallStream,
    Step,
)
from tests.e2e.conftest import AIMON, MODEL, PROVIDER, aimon_env

WAIT = 60.0


class Editor:
    """The ACP client side: records updates, answers questions, offers its file system."""

    def __init__(self, answer: str = "allow_once") -> None:
        self.answer = answer
        self.updates: list[Any] = []
        self.asked: list[tuple[Any, list[Any]]] = []
        self.written: list[tuple[str, str]] = []
        self.read: list[str] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, session_id: str, tool_call: Any, options: list[Any],
                                 **kwargs: Any) -> schema.RequestPermissionResponse:
        self.asked.append((tool_call, options))
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=self.answer))

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any
                             ) -> schema.ReadTextFileResponse:
        self.read.append(path)
        return schema.ReadTextFileResponse(content=await asyncio.to_thread(_read, path))

    async def write_text_file(self, session_id: str, path: str, content: str,
                              **kwargs: Any) -> schema.WriteTextFileResponse:
        self.written.append((path, content))
        await asyncio.to_thread(_write, path, content)
        return schema.WriteTextFileResponse()

    def on_connect(self, conn: Any) -> None:
        pass

    def of(self, kind: type) -> list[Any]:
        return [u for u in self.updates if isinstance(u, kind)]

    def text(self) -> str:
        return "".join(u.content.text for u in self.of(schema.AgentMessageChunk))


def _read(path: str) -> str:
    return Path(path).read_text()


def _write(path: str, content: str) -> None:
    Path(path).write_text(content)


EDITOR_FS = schema.ClientCapabilities(fs=schema.FileSystemCapabilities(
    read_text_file=True, write_text_file=True))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "a.txt").write_text("one\n")
    return folder


@asynccontextmanager
async def agent(editor: Editor, server: LoopbackModelServer, project: Path
                ) -> AsyncIterator[Any]:
    async with spawn_agent_process(editor, AIMON, "acp", env=aimon_env(
            server, AIMON_PROVIDER=PROVIDER, AIMON_MODEL=MODEL),
                                   cwd=str(project)) as (conn, _process):
        await asyncio.wait_for(conn.initialize(protocol_version=1,
                                               client_capabilities=EDITOR_FS), WAIT)
        yield conn


def run(scenario: Callable[[], Any]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), WAIT * 2))


def one_prompt(editor: Editor, script: list[Step], project: Path, text: str
               ) -> tuple[Any, Any, list[RecordedRequest]]:
    """Run one prompt in a new session of a new `aimon acp`; return (the new session's
    answer, the prompt's answer, the model's requests)."""
    found: list[Any] = []

    async def scenario() -> None:
        with LoopbackModelServer(script, provider="openai") as server:
            async with agent(editor, server, project) as conn:
                opened = await conn.new_session(cwd=str(project), mcp_servers=[])
                found.append(opened)
                found.append(await conn.prompt(session_id=opened.session_id,
                                               prompt=[text_block(text)]))
            found.append(server.requests)

    run(scenario)
    return found[0], found[1], found[2]


def edit_script(path: Path) -> list[Step]:
    return [Reply(text="Reading.", tool_calls=(ScriptedToolCall(
                name="Read", id="call_read", input={"file_path": str(path)}),)),
            Reply(tool_calls=(ScriptedToolCall(name="Edit", id="call_edit", input={
                "file_path": str(path), "old_string": "one", "new_string": "two"}),)),
            Reply(text="Edited.")]


def test_a_prompt_streams_text_and_tool_calls_and_the_edit_goes_through_the_editor(
        project: Path) -> None:
    target = project / "a.txt"
    editor = Editor("allow_once")
    opened, done, _ = one_prompt(editor, edit_script(target), project, "fix a.txt")
    assert opened.modes.current_mode_id == "default"
    assert {m.id for m in opened.modes.available_modes} == {
        "default", "acceptEdits", "plan", "bypassPermissions"}
    assert done.stop_reason == "end_turn"
    assert editor.text() == "Reading.Edited."
    starts = editor.of(schema.ToolCallStart)
    assert [(s.tool_call_id, s.kind) for s in starts] == [("call_read", "read"),
                                                          ("call_edit", "edit")]
    assert starts[0].locations[0].path == str(target)
    edit = starts[1].content[0]
    assert (edit.type, edit.path, edit.old_text, edit.new_text) == ("diff", str(target), "one",
                                                                    "two")
    finished = {u.tool_call_id: u.status for u in editor.of(schema.ToolCallProgress)}
    assert finished == {"call_read": "completed", "call_edit": "completed"}
    [(asked_call, options)] = editor.asked
    assert asked_call.tool_call_id == "call_edit"
    assert [(o.option_id, o.kind) for o in options] == [
        ("allow_once", "allow_once"), ("allow_session", "allow_always"),
        ("allow_agent", "allow_always"), ("reject", "reject_once")]
    assert editor.read and set(editor.read) == {str(target)}  # Read, and Edit before it edits
    assert editor.written == [(str(target), "two\n")]
    assert target.read_text() == "two\n"
    commands = editor.of(schema.AvailableCommandsUpdate)[0].available_commands
    assert {"help", "compact", "budget"} <= {c.name for c in commands}


def test_a_rejected_permission_leaves_the_file_alone(project: Path) -> None:
    target = project / "a.txt"
    editor = Editor("reject")
    _, _, requests = one_prompt(editor, edit_script(target), project, "fix")
    assert "rejected in the editor" in requests[-1].tool_results()["call_edit"]
    assert {u.tool_call_id: u.status for u in editor.of(schema.ToolCallProgress)} == {
        "call_read": "completed", "call_edit": "failed"}
    assert target.read_text() == "one\n" and editor.written == []


def test_cancel_stops_the_turn(project: Path) -> None:
    editor = Editor()
    arrived = asyncio.Event()

    async def scenario() -> None:
        loop = asyncio.get_running_loop()

        def respond(request: RecordedRequest) -> Step:
            loop.call_soon_threadsafe(arrived.set)
            return StallStream(reply=Reply(text="never"), after_events=2, seconds=WAIT,
                               released=True)

        with LoopbackModelServer(respond, provider="openai") as server:
            async with agent(editor, server, project) as conn:
                opened = await conn.new_session(cwd=str(project), mcp_servers=[])
                turn = asyncio.ensure_future(conn.prompt(session_id=opened.session_id,
                                                         prompt=[text_block("go")]))
                await arrived.wait()
                await conn.cancel(session_id=opened.session_id)
                done = await turn
                assert done.stop_reason == "cancelled"
                server.release()

    run(scenario)


def test_session_load_resumes_by_id_and_replays_the_conversation(project: Path) -> None:
    first, second = Editor(), Editor()

    async def scenario() -> None:
        script = [Reply(text="first answer"), Reply(text="second answer")]
        with LoopbackModelServer(script, provider="openai") as server:
            async with agent(first, server, project) as conn:
                opened = await conn.new_session(cwd=str(project), mcp_servers=[])
                await conn.prompt(session_id=opened.session_id, prompt=[text_block("hello")])
            async with agent(second, server, project) as conn:  # a new process
                await conn.load_session(cwd=str(project), session_id=opened.session_id,
                                        mcp_servers=[])
                assert [u.content.text for u in second.of(schema.UserMessageChunk)] == [
                    "hello"]
                assert second.text() == "first answer"
                await conn.prompt(session_id=opened.session_id, prompt=[text_block("again")])
            assert server.requests[-1].conversation()[-3:] == [
                ("user", "hello"), ("assistant", "first answer"), ("user", "again")]

    run(scenario)
    assert second.text() == "first answersecond answer"


def test_permission_modes_are_session_modes(project: Path) -> None:
    editor = Editor()

    async def scenario() -> None:
        with LoopbackModelServer([], provider="openai") as server:
            async with agent(editor, server, project) as conn:
                opened = await conn.new_session(cwd=str(project), mcp_servers=[])
                await conn.set_session_mode(session_id=opened.session_id, mode_id="plan")
                await conn.prompt(session_id=opened.session_id, prompt=[text_block("/help")])

    run(scenario)
    [mode] = editor.of(schema.CurrentModeUpdate)
    assert mode.current_mode_id == "plan"


def test_the_todo_list_is_the_plan(project: Path) -> None:
    editor = Editor()
    todos = [{"content": "Read it", "status": "completed", "activeForm": "Reading it"},
             {"content": "Fix it", "status": "in_progress", "activeForm": "Fixing it"},
             {"content": "Test it", "status": "pending", "activeForm": "Testing it"}]

    script: list[Step] = [
        Reply(tool_calls=(ScriptedToolCall(name="TodoWrite", input={"todos": todos}),)),
        Reply(text="planned")]
    one_prompt(editor, script, project, "plan")
    [plan] = editor.of(schema.AgentPlanUpdate)
    assert [(e.content, e.status) for e in plan.entries] == [
        ("Read it", "completed"), ("Fix it", "in_progress"), ("Test it", "pending")]
    assert editor.of(schema.ToolCallStart)[0].kind == "think"
