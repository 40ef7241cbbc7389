"""SessionWriter: one writer per session, so the session's file I/O never runs on the event loop.

Writes are done in the order they were asked for, by one worker thread. `write` returns at once
(the transcript's appends); `write_now` waits until its write and every one before it are done
(a tool call recorded as started must be on disk before the tool runs); `flush` waits for all.
A failed write is kept and raised by the next `write_now` or `flush`, so a full disk still ends
the turn with a clear error instead of passing unnoticed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any


class SessionWriter:
    """Runs a session's store writes in order, off the event loop."""

    def __init__(self, name: str = "aimon-session-writer") -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                           thread_name_prefix=name)
        self._last: concurrent.futures.Future[Any] | None = None
        self._failure: BaseException | None = None

    def write(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Queue a write; a failure is raised by the next `write_now` or `flush`."""
        self._last = self._pool.submit(self._guarded, fn, *args, **kwargs)

    async def write_now(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Queue a write and wait until it (and every write before it) is done."""
        self.write(fn, *args, **kwargs)
        await self.flush()

    async def flush(self) -> None:
        """Wait for every queued write; raise the first one that failed."""
        if self._last is not None:
            # Shielded: a waiter cancelled (an interrupted turn) must not cancel the write
            # itself, or every later flush (close) raises CancelledError.
            await asyncio.shield(asyncio.wrap_future(self._last))
        self._raise_failure()

    def flush_blocking(self) -> None:
        """Wait for every queued write from synchronous code (tests, shutdown paths)."""
        if self._last is not None:
            self._last.result()
        self._raise_failure()

    async def close(self) -> None:
        """Finish every queued write and stop the worker thread."""
        try:
            await self.flush()
        finally:
            self._pool.shutdown(wait=False)

    def _guarded(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        if self._failure is not None:
            return  # after a failure, later writes would land out of order: keep the first
        try:
            fn(*args, **kwargs)
        except BaseException as exc:
            self._failure = exc

    def _raise_failure(self) -> None:
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure
