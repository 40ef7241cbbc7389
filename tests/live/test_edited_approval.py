"""An approval whose command the person edited: the edited form runs, unless a rule denies it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aimon_core.agent import ApprovalAnswer, ApprovalRequested, ApprovalScope
from aimon_core.live import LiveSessionEvent
from aimon_core.llm import ScriptedLLMClient, ToolResultBlock, reply, script
from aimon_core.runtime import RuntimeFlags, RuntimeParts, build_runtime
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore


def _run(root: Path, edited: str, flags: RuntimeFlags) -> str:
    """Ask for `touch asked.txt`, answer with `edited`; return the tool result's text."""
    client: ScriptedLLMClient = script(reply("", ("Bash", {"command": "touch asked.txt"})),
                                       reply("done"))

    async def main() -> None:
        runtime = build_runtime(root, flags=flags, parts=RuntimeParts(client=client))
        live = await runtime.open_session(
            SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore()))

        def answer(event: LiveSessionEvent) -> None:
            if isinstance(event, ApprovalRequested):
                live.answer(event.request.id, ApprovalAnswer(
                    allowed=True, scope=ApprovalScope.TURN, updated_input={"command": edited}))

        live.subscribe(answer, answers=True)
        await live.submit("make a file")
        await live.close()

    asyncio.run(main())
    return "\n".join(part.text for message in client.requests[-1].messages
                     for block in message.content if isinstance(block, ToolResultBlock)
                     for part in block.content if hasattr(part, "text"))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "proj").mkdir()
    return tmp_path / "proj"


def test_the_edited_command_runs_and_the_model_is_told(root: Path) -> None:
    told = _run(root, "touch edited.txt", RuntimeFlags())
    assert (root / "edited.txt").exists() and not (root / "asked.txt").exists()
    assert "edited this call" in told and "touch edited.txt" in told


def test_an_edit_into_a_denied_command_is_refused(root: Path) -> None:
    (root / "keep.txt").write_text("x")
    told = _run(root, "rm keep.txt", RuntimeFlags(disallowed=("Bash(rm:*)",)))
    assert (root / "keep.txt").exists() and not (root / "asked.txt").exists()
    assert "edited form is denied" in told
