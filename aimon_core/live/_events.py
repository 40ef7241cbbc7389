"""What a live session tells its subscribers, besides the executor's events."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NewType

from aimon_core.agent import AgentEvent, ExecutionBudget, ExecutionResult, StopCause
from aimon_core.command import CommandOutcome
from aimon_core.llm import Usage
from aimon_core.session import BudgetOverride, SessionTotals

TurnId = NewType("TurnId", str)


class SubmitOutcome(enum.Enum):
    """What offer_async did with a prompt."""

    EXECUTED = "executed"
    QUEUED = "queued"


class LiveSessionClosedError(RuntimeError):
    """The LiveSession was closed; open it again to run more turns."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnQueued:
    """A prompt waits for the running turn to finish."""

    turn_id: TurnId
    prompt: str
    position: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnStarted:
    """A turn began."""

    turn_id: TurnId
    prompt: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnFinished:
    """A turn ended (answered, stopped by a limit or an error, or interrupted)."""

    turn_id: TurnId
    result: ExecutionResult
    totals: SessionTotals


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandRan:
    """A slash command ran in place of a turn; `prompt` is set when it asks for a turn."""

    turn_id: TurnId
    text: str
    outcome: CommandOutcome
    duration_s: float

    @property
    def prompt(self) -> str | None:
        """Return the prompt the command expands to (skill-backed commands), or None."""
        return self.outcome.prompt

    @property
    def result(self) -> ExecutionResult:
        """Return the command's outcome in the shape of a turn's result."""
        return ExecutionResult(
            stop=StopCause.COMMAND_FAILED if self.outcome.is_error else StopCause.COMMAND,
            reason=self.text.strip().split()[0] if self.text.strip() else "/",
            text=self.outcome.text, new_messages=(), usage=Usage(), cost_usd=0.0,
            iterations=0, tool_calls=0, duration_s=self.duration_s)


LiveSessionEvent = AgentEvent | TurnQueued | TurnStarted | TurnFinished | CommandRan


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveSessionStatus:
    """A snapshot of a LiveSession, for display; changes nothing."""

    session_id: str
    agent: str
    model: str
    running_turn: TurnId | None
    queued: int
    message_count: int
    totals: SessionTotals
    budget: ExecutionBudget
    budget_override: BudgetOverride | None
    pending_approvals: int = 0
    # The estimated size of the next request and the window it must fit (compaction).
    context_tokens: int = 0
    context_window: int = 0
