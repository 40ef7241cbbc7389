"""Turn: what one execution is given by whoever runs it, passed to every part explicitly.

A session's turn, a subagent fork, a routine: each is an execution with an `ExecutionId`. Its
owner (the live session, a fork, a scheduler) builds one frozen `Turn` for it, and the Turn
travels with it: in the `ExecutionRequest` to the executor, in the `ToolContext` to the
permission gate and to the tools (Task and Skill read it to start forks in the same session).
Nothing reaches an execution through a context variable or a field set afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import NewType, Protocol

from aimon_core.agent._approval import Asker
from aimon_core.agent._events import AgentEvent
from aimon_core.hook import HookDispatcher
from aimon_core.llm import Message, ToolUseBlock

ExecutionId = NewType("ExecutionId", str)
"""One execution's id: a session's turn id, or `exec-…` for work with no session of its own."""


def new_execution_id() -> ExecutionId:
    """Return a fresh id for an execution that is not a session's turn (a fork, a routine)."""
    return ExecutionId(f"exec-{uuid.uuid4().hex[:12]}")


class RememberedApprovals(Protocol):
    """The approval entries one scope remembers (a session's turn, or the session).

    The permission layer's stores implement it; the entries are rules it compiles.
    """

    def entries(self) -> tuple[str, ...]:
        """Return the remembered entries, oldest first."""
        ...

    def add(self, rule: str) -> bool:
        """Remember `rule`; return False if it was not (already there, or nowhere to keep)."""
        ...

    def clear(self) -> tuple[str, ...]:
        """Forget every entry; return what was forgotten."""
        ...


class NotRemembered:
    """The approvals of an execution with no session: nothing is kept, nothing is recalled."""

    def entries(self) -> tuple[str, ...]:
        """Return no entries."""
        return ()

    def add(self, rule: str) -> bool:
        """Keep nothing."""
        return False

    def clear(self) -> tuple[str, ...]:
        """Forget nothing."""
        return ()


NOT_REMEMBERED = NotRemembered()


def _drop(*_: object) -> None:
    return None


# Told each message as it becomes part of the transcript (the session writes it to disk).
MessageSink = Callable[[Message], None]
# Told right before a tool runs (after hooks and the permission gate), with whether the call
# may change something; the session records it first, durably if it may.
ToolStarted = Callable[[ToolUseBlock, bool], Awaitable[None] | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """What one execution needs from its owner, as one value.

    Args:
        execution_id: the turn's id (a session's `TurnId`) or a fork's `exec-…` id.
        session_id: the session the work is done for; "" for work with no session.
        hooks: the hook dispatcher bound to that session (None: no hooks fire).
        emit: puts the execution's events on its owner's event stream.
        ask: asks whoever answers approvals for the session; None: nobody can, so what needs
            approval is refused.
        turn_approvals, session_approvals: the session's own "for this turn" and "for this
            session" approvals (a fork shares its session's).
        persist: keeps each message of the transcript.
        tool_started: records a tool call before it runs (crash recovery says "may have run").
        before_changes: awaited before anything may change the project (the checkpoint of
            the project taken as the turn starts); None: no checkpoint.
    """

    execution_id: ExecutionId = field(default_factory=new_execution_id)
    session_id: str = ""
    hooks: HookDispatcher | None = None
    emit: Callable[[AgentEvent], None] = _drop
    ask: Asker | None = None
    turn_approvals: RememberedApprovals = NOT_REMEMBERED
    session_approvals: RememberedApprovals = NOT_REMEMBERED
    persist: MessageSink = _drop
    tool_started: ToolStarted = _drop
    before_changes: Awaitable[object] | None = None
