"""What an interrupt does to a running tool call, and whether read-only calls run together.

The seeds' `InterruptBehavior`: Ctrl-C cancels a long command, but a file write that has
started runs to its end, so the project never holds half of a change the model thinks was
refused. The seeds' `ConcurrencyBehavior`: consecutive read-only calls run at the same time
(the default) or one after another (settings: `"tools": {"concurrency": "serial"}`).
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


class InterruptBehavior(enum.Enum):
    """What an interrupt does to a call of the tool while it runs."""

    CANCEL = "cancel"  # stop it: a command, a search, a fork
    FINISH = "finish"  # let it end first: a file write, an edit


class ConcurrencyBehavior(enum.Enum):
    """How consecutive read-only calls of one model answer run."""

    PARALLEL = "parallel"
    SERIAL = "serial"


class FinishedOnInterruptError(asyncio.CancelledError):
    """The execution was interrupted while a call that finishes ran; it ended with `result`.

    A CancelledError, so every layer that passes cancellation on passes this one on too; the
    executor records `result` as the call's answer before it does.
    """

    def __init__(self, result: Any) -> None:
        super().__init__("interrupted; the call ran to its end first")
        self.result = result  # what the call returned: a ToolResult from execute_tool


async def run_to_end(call: Awaitable[T]) -> T:
    """Await `call` to its end even if the caller is cancelled meanwhile.

    Return its result when nobody cancelled; raise FinishedOnInterruptError carrying the
    result when the caller was cancelled (once or more) while it ran. A call that is itself
    cancelled, or fails, propagates as it would unshielded.
    """
    task = asyncio.ensure_future(call)
    interrupted = False
    while True:
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                raise
            interrupted = True
            continue
        if interrupted:
            raise FinishedOnInterruptError(result)
        return result
