"""A `!command` the person runs, and `@path` mentions: what the model sees of them next, what
the permission rules refuse, and what the person is told."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest

from aimon_core.agent import (
    ApprovalRefused,
    Notice,
    StopCause,
    ToolCallFinished,
    ToolCallOutput,
    ToolCallStarted,
    parse_agent,
)
from aimon_core.live import LiveSessionEvent, TurnFinished
from aimon_core.llm import (
    DocumentBlock,
    ImageBlock,
    Message,
    ScriptedLLMClient,
    TextBlock,
    reply,
)
from aimon_core.runtime import RuntimeFlags, RuntimeParts, build_runtime
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore

AGENT = parse_agent("---\nname: tester\n---\nTest agent.\n")
PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
                       "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


def run(root: Path, client: ScriptedLLMClient, *inputs: tuple[str, bool],
        deny: tuple[str, ...] = (), model: str = "claude-sonnet-5-5"
        ) -> tuple[list[LiveSessionEvent], list[Message]]:
    """Run each (text, is a shell command) in one session; return its events and transcript."""
    seen: list[LiveSessionEvent] = []

    async def main() -> list[Message]:
        assembly = await asyncio.to_thread(build_runtime, root, flags=RuntimeFlags(
            disallowed=deny), parts=RuntimeParts(client=client, model=model,
                                                 agent_definition=AGENT))
        store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
        async with assembly, await assembly.open_session(store) as live:
            live.subscribe(seen.append)
            for text, shell in inputs:
                await live.offer_async(text, shell=shell)[1]
            return list(live.record.transcript.messages)

    return seen, asyncio.run(main())


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "calc.py").write_text("".join(f"line {n}\n" for n in range(1, 51)))
    (project / ".env").write_text("TOKEN=x\n")
    (project / "docs").mkdir()
    (project / "docs" / "a.md").write_text("A\n")
    (project / "shot.png").write_bytes(PNG)
    (project / "spec.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    return project


def test_a_shell_command_runs_without_the_model_and_leads_the_next_prompt(root: Path) -> None:
    client = ScriptedLLMClient(steps=[reply("seen")], provider="anthropic")
    seen, messages = run(root, client, ("echo hello-from-shell", True), ("what did it say?", False))
    started = next(e for e in seen if isinstance(e, ToolCallStarted))
    assert started.label == "Bash(echo hello-from-shell)"
    assert "hello-from-shell" in "".join(e.text for e in seen if isinstance(e, ToolCallOutput))
    (request,) = client.requests
    first = request.messages[0]
    assert first.role == "user" and len(request.messages) == 1  # carried, not dropped
    assert first.text.startswith("<bash-input>echo hello-from-shell</bash-input>\n"
                                 "<bash-stdout>hello-from-shell")
    assert first.text.split("<context", 1)[0].endswith("what did it say?")  # blocks follow
    assert [m.role for m in messages] == ["user", "user", "assistant"]
    assert not any(isinstance(e, Notice) and "no answer" in e.text for e in seen)


def test_a_deny_rule_refuses_a_shell_command_and_nothing_is_recorded(root: Path) -> None:
    seen, messages = run(root, ScriptedLLMClient(steps=[]), ("rm calc.py", True),
                         deny=("Bash(rm:*)",))
    finished = next(e for e in seen if isinstance(e, ToolCallFinished))
    assert finished.result.is_error and finished.result.text.startswith("Not run:")
    assert (root / "calc.py").exists() and messages == []
    refused = next(e for e in seen if isinstance(e, ApprovalRefused))  # shown with ✗
    assert refused.denied and refused.tool_use_id == finished.tool_use_id


def test_mentions_attach_files_ranges_folders_images_and_documents(root: Path) -> None:
    client = ScriptedLLMClient(steps=[reply("ok")], provider="anthropic")
    seen, _ = run(root, client, ("read @calc.py#L10-12, @docs/ and @shot.png @spec.pdf, "
                                 "mail me@example.com or @nobody; not @calc.p or @doc/",
                                 False))
    content = client.requests[0].messages[0].content
    texts = [b.text for b in content if isinstance(b, TextBlock)]
    assert texts[0].startswith("read @calc.py#L10-12")
    assert texts[1].startswith('<file path="calc.py#L10-12">\n    10\tline 10\n')
    assert texts[1].endswith("    12\tline 12\n\n(Showing lines 10-12 of 50. Call Read with "
                             "offset=13 to continue.)\n</file>")
    assert texts[2] == '<folder path="docs/">\na.md\n</folder>'
    assert any(isinstance(b, ImageBlock) and b.media_type == "image/png" for b in content)
    assert [b.title for b in content if isinstance(b, DocumentBlock)] == ["spec.pdf"]
    notes = [e.text for e in seen if isinstance(e, Notice)]
    assert notes == ["⎿ Attached calc.py#L10-12 (lines 10-12 of 50)",
                     "⎿ Attached the listing of docs/", "⎿ Attached the image shot.png",
                     "⎿ Attached the document spec.pdf (1 KB)",
                     "⎿ @calc.p names no file or folder here: sent as typed",
                     "⎿ @doc/ names no file or folder here: sent as typed"]


def test_a_denied_or_outside_file_is_not_attached_and_the_prompt_says_so(
        root: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.txt").write_text("secret\n")
    client = ScriptedLLMClient(steps=[reply("ok")], provider="openai")
    seen, _ = run(root, client, ("check @.env and @../outside.txt and @shot.png", False),
                  deny=("Read(./.env)",), model="o3-mini")
    sent = client.requests[0].messages[0]
    assert "TOKEN=x" not in sent.text and "secret" not in sent.text
    assert not any(isinstance(b, ImageBlock) for b in sent.content)
    notes = [e.text for e in seen if isinstance(e, Notice)]
    assert notes == ["⎿ @.env was not attached: a permission rule denies reading it",
                     "⎿ @../outside.txt was not attached: it is outside the project",
                     "⎿ @shot.png was not attached: this model does not take images"]
    for note in notes:
        assert f"[{note.removeprefix('⎿ ')}.]" in sent.text


def test_an_interrupted_shell_command_keeps_what_it_printed(root: Path) -> None:
    seen: list[LiveSessionEvent] = []

    async def main() -> list[Message]:
        assembly = await asyncio.to_thread(build_runtime, root, parts=RuntimeParts(
            client=ScriptedLLMClient(steps=[]), model="m", agent_definition=AGENT))
        store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
        async with assembly, await assembly.open_session(store) as live:
            printed = asyncio.Event()

            def watch(event: LiveSessionEvent) -> None:
                seen.append(event)
                if isinstance(event, ToolCallOutput):
                    printed.set()

            live.subscribe(watch)
            task = live.offer_async("echo first; sleep 60", shell=True)[1]
            await printed.wait()
            live.interrupt()
            await asyncio.gather(task, return_exceptions=True)
            return list(live.record.transcript.messages)

    (record,) = asyncio.run(main())
    assert record.text == ("<bash-input>echo first; sleep 60</bash-input>\n"
                           "<bash-stdout>first\n(interrupted by the user)</bash-stdout>")
    # Told as an interrupted turn is: the call ends with what it printed, then the turn.
    finished = next(e for e in seen if isinstance(e, ToolCallFinished))
    assert finished.result.is_error and finished.result.text == (
        "Interrupted.\n\nIts last lines of output:\nfirst")
    ended = next(e for e in seen if isinstance(e, TurnFinished))
    assert ended.result.stop is StopCause.INTERRUPTED


def test_a_shell_turn_ends_as_a_command(root: Path) -> None:
    seen, _ = run(root, ScriptedLLMClient(steps=[]), ("exit 3", True))
    from aimon_core.live import TurnFinished

    (finished,) = [e for e in seen if isinstance(e, TurnFinished)]
    assert finished.result.stop is StopCause.COMMAND_FAILED
    assert finished.result.usage.total_tokens == 0
