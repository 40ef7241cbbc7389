"""The one writer of a run: changes reach the store in the order they happen, off the loop."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from aimon_core.workflow._record import RunChange, RunId
from aimon_core.workflow._store import RunStore

log = logging.getLogger(__name__)


class RunWriter:
    """Appends a run's changes to its store, one at a time, in order.

    `write` waits until its change is stored (what resume must find is on disk before the run
    goes on); `write_soon` only queues it (a transcript message). A change the store refuses
    is logged and the run goes on: a record that misses a message is still a record.
    """

    def __init__(self, store: RunStore, run_id: RunId) -> None:
        self._store = store
        self._run_id = run_id
        self._queue: asyncio.Queue[tuple[RunChange, asyncio.Future[None] | None] | None] = (
            asyncio.Queue())
        self._task = asyncio.get_running_loop().create_task(self._drain())

    def write_soon(self, change: RunChange) -> None:
        """Queue a change."""
        self._queue.put_nowait((change, None))

    async def write(self, change: RunChange) -> None:
        """Queue a change and wait until it is stored."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((change, done))
        await asyncio.shield(done)

    async def _drain(self) -> None:
        while (item := await self._queue.get()) is not None:
            change, done = item
            try:
                await asyncio.to_thread(self._store.append, self._run_id, change)
            except Exception:
                log.exception("workflow run %s: a change was not stored", self._run_id)
            if done is not None and not done.done():
                done.set_result(None)

    async def close(self) -> None:
        """Store what is queued, then stop."""
        self._queue.put_nowait(None)
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(self._task)
