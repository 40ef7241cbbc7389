"""RecordKeeper: what a live session keeps, written in order before a tool runs."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from aimon_core.live._keeper import RecordKeeper
from aimon_core.llm import Message, ToolUseBlock
from aimon_core.session import FileSessionLeaseStore, FileSessionRecordStore, SessionStore
from aimon_core.tools import ToolState


def test_a_read_only_call_waits_for_the_writes_before_it(tmp_path: Path) -> None:
    """A kill -9 while a long read-only command runs must not lose the prompt before it: the
    call's start waits until every queued write (the prompt first) is done, without fsync."""
    records = FileSessionRecordStore(tmp_path)
    store = SessionStore(records, FileSessionLeaseStore(tmp_path))
    gate = threading.Event()
    append = records.append

    def slow_append(*args: Any, **kwargs: Any) -> None:
        gate.wait(timeout=60)  # the writer thread is busy with the prompt
        append(*args, **kwargs)

    records.append = slow_append  # type: ignore[method-assign]

    async def main() -> tuple[bool, str]:
        claimed = store.claim(None, project_root=str(tmp_path), agent_ref="a", holder="t",
                              lazy=True)
        keeper = RecordKeeper(store, claimed, ToolState())
        keeper.persist(Message.user("the prompt"))
        started = asyncio.ensure_future(keeper.mark_started(
            ToolUseBlock(id="t1", name="Read", input={}), False))
        for _ in range(10):  # let it run as far as it can (no time passes)
            await asyncio.sleep(0)
        waited = not started.done()
        gate.set()
        await started
        text = records.path_of(keeper.id).read_text()
        await keeper.close()
        return waited, text

    waited, text = asyncio.run(main())
    assert waited  # the call did not start while the prompt was still being written
    assert "the prompt" in text and '"type":"tool_started"' in text
