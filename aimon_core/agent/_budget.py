"""ExecutionBudget: how far one execution may go, and the tracker that enforces it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from aimon_core.agent._events import StopCause
from aimon_core.llm import Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionBudget:
    """Limits of one execution; None means unlimited."""

    max_iterations: int | None = 100
    max_tokens: int | None = None
    max_seconds: float | None = None

    def with_overrides(
        self,
        *,
        max_iterations: int | None = None,
        max_tokens: int | None = None,
        max_seconds: float | None = None,
    ) -> ExecutionBudget:
        """Return a budget where each given (not None) limit replaces this one's."""
        return replace(
            self,
            max_iterations=self.max_iterations if max_iterations is None else max_iterations,
            max_tokens=self.max_tokens if max_tokens is None else max_tokens,
            max_seconds=self.max_seconds if max_seconds is None else max_seconds,
        )


class BudgetTracker:
    """Counts iterations, tokens and time of one execution against its budget."""

    def __init__(self, budget: ExecutionBudget, clock: Callable[[], float] | None = None) -> None:
        self.budget = budget
        self._clock = clock or time.monotonic
        self.started = self._clock()
        self.iterations = 0
        self.usage = Usage()

    @property
    def elapsed(self) -> float:
        """Return seconds since the execution started."""
        return self._clock() - self.started

    def remaining_seconds(self) -> float | None:
        """Return the seconds left before the time limit (None: no time limit)."""
        if self.budget.max_seconds is None:
            return None
        return max(self.budget.max_seconds - self.elapsed, 0.0)

    def out_of_time(self) -> bool:
        """Tell whether the time limit has passed."""
        left = self.remaining_seconds()
        return left is not None and left <= 0

    def time_limit_reason(self) -> str:
        """Return why the execution stops at its time limit."""
        return f"reached the time limit ({self.budget.max_seconds:g} s)"

    def exhausted(self) -> tuple[StopCause, str] | None:
        """Return which limit stops the next iteration and why, or None if it may start."""
        b = self.budget
        if b.max_iterations is not None and self.iterations >= b.max_iterations:
            return StopCause.ITERATION_LIMIT, f"reached the iteration limit ({b.max_iterations})"
        if b.max_tokens is not None and self.usage.total_tokens >= b.max_tokens:
            used = self.usage.total_tokens
            return StopCause.TOKEN_LIMIT, f"reached the token limit ({used:,} of {b.max_tokens:,})"
        if self.out_of_time():
            return StopCause.TIME_LIMIT, self.time_limit_reason()
        return None
