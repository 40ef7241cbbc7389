"""The approval questions of one live session: put on its event stream, answered through it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from aimon_core.agent import (
    AgentEvent,
    ApprovalAnswer,
    ApprovalRequest,
    ApprovalRequested,
    ApprovalWithdrawn,
)


class PendingQuestions:
    """Questions waiting for whoever answers for the session (a subscriber with answers=True).

    `ask` publishes `ApprovalRequested` and waits; `answer` resolves it; a question whose turn
    ends first is withdrawn (`ApprovalWithdrawn`). With no answerer, `ask` returns None at once
    and the gate refuses the call with a message.
    """

    def __init__(self, publish: Callable[[AgentEvent], None]) -> None:
        self._publish = publish
        self.answerers = 0
        self._waiting: dict[str, tuple[ApprovalRequest, asyncio.Future[ApprovalAnswer]]] = {}

    def pending(self) -> tuple[ApprovalRequest, ...]:
        """Return the questions waiting for an answer, oldest first."""
        return tuple(request for request, future in self._waiting.values() if not future.done())

    def answer(self, request_id: str, answer: ApprovalAnswer) -> bool:
        """Answer a waiting question; False if none with that id waits."""
        waiting = self._waiting.get(request_id)
        if waiting is None or waiting[1].done():
            return False
        waiting[1].set_result(answer)
        return True

    async def ask(self, request: ApprovalRequest,
                  on_asked: Callable[[ApprovalRequest], None] | None = None
                  ) -> ApprovalAnswer | None:
        """Put `request` on the stream and wait for an answer; None if nobody answers."""
        if self.answerers <= 0:
            return None
        future: asyncio.Future[ApprovalAnswer] = asyncio.get_running_loop().create_future()
        self._waiting[request.id] = (request, future)
        try:
            self._publish(ApprovalRequested(request=request))
            if on_asked is not None:
                on_asked(request)
            return await future
        finally:
            self._waiting.pop(request.id, None)
            if not future.done() or future.cancelled():  # not answered: the turn ended
                future.cancel()
                self._publish(ApprovalWithdrawn(request_id=request.id))
