"""SessionWriter: a session's file writes run in order, off the event loop, and fail loudly."""

from __future__ import annotations

import asyncio
import errno
import threading

import pytest

from aimon_core.live._writer import SessionWriter


def test_writes_run_in_order_on_another_thread_than_the_loop() -> None:
    seen: list[tuple[int, int]] = []

    def write(n: int) -> None:
        seen.append((n, threading.get_ident()))

    async def main() -> int:
        writer = SessionWriter()
        for n in range(50):
            writer.write(write, n)
        await writer.write_now(write, 50)
        await writer.close()
        return threading.get_ident()

    loop_thread = asyncio.run(main())
    assert [n for n, _ in seen] == list(range(51))
    assert {thread for _, thread in seen} - {loop_thread} == {thread for _, thread in seen}


def test_a_failed_write_is_raised_by_the_next_flush_and_later_writes_wait() -> None:
    done: list[str] = []

    def full_disk() -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    async def main() -> None:
        writer = SessionWriter()
        writer.write(done.append, "first")
        writer.write(full_disk)
        writer.write(done.append, "after the failure")
        with pytest.raises(OSError, match="No space left"):
            await writer.flush()
        await writer.write_now(done.append, "once it was reported")
        await writer.close()

    asyncio.run(main())
    assert done == ["first", "once it was reported"]
