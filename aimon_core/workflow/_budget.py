"""What a run and each of its tasks spent, against the workflow's budget and the task limits."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from aimon_core.llm import Usage
from aimon_core.workflow._model import TaskLimits, WorkflowBudget


def money(amount: float) -> str:
    """Return a cost in dollars: four decimals under a dollar, two above."""
    return f"${amount:.4f}" if amount < 1 else f"${amount:.2f}"


@dataclass(slots=True)
class Spent:
    """Tokens and dollars spent so far."""

    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0

    def add(self, usage: Usage, cost_usd: float) -> None:
        """Count one model response."""
        self.usage = self.usage + usage
        self.cost_usd += cost_usd


class RunMeter:
    """Counts what every task of a run spends against the workflow's budget.

    What earlier processes spent on the run (before a resume) counts too: `spent_before`.
    The clock starts when the meter is made.
    """

    def __init__(self, budget: WorkflowBudget, *, spent_before: Spent | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.budget = budget
        self.spent = spent_before or Spent()
        self._clock = clock
        self.started = clock()

    @property
    def elapsed(self) -> float:
        """Return seconds since the meter started."""
        return self._clock() - self.started

    def exceeded(self) -> str | None:
        """Return which limit of the budget is reached, in words, or None."""
        b = self.budget
        tokens = self.spent.usage.total_tokens
        if b.max_tokens is not None and tokens >= b.max_tokens:
            return f"the workflow's token budget is spent ({tokens:,} of {b.max_tokens:,})"
        if b.max_cost_usd is not None and self.spent.cost_usd >= b.max_cost_usd:
            return (f"the workflow's cost budget is spent ({money(self.spent.cost_usd)} of "
                    f"{money(b.max_cost_usd)})")
        if b.max_seconds is not None and self.elapsed >= b.max_seconds:
            return f"the workflow's time budget is spent ({b.max_seconds:g} s)"
        return None

    def limits_for(self, limits: TaskLimits) -> TaskLimits:
        """Return a task's limits narrowed to what is left of the budget."""
        b = self.budget
        tokens = limits.max_tokens
        if b.max_tokens is not None:
            left = max(b.max_tokens - self.spent.usage.total_tokens, 1)
            tokens = left if tokens is None else min(tokens, left)
        seconds = limits.max_seconds
        if b.max_seconds is not None:
            left_s = max(b.max_seconds - self.elapsed, 0.001)
            seconds = left_s if seconds is None else min(seconds, left_s)
        return replace(limits, max_tokens=tokens, max_seconds=seconds)

    def seconds_left(self) -> float | None:
        """Return the time left of the budget (None: no time limit)."""
        if self.budget.max_seconds is None:
            return None
        return max(self.budget.max_seconds - self.elapsed, 0.0)


def task_over(limits: TaskLimits, spent: Spent) -> str | None:
    """Return why a task passed its own cost limit, or None (tokens, iterations and time are
    the executor's: it stops the task itself)."""
    if limits.max_cost_usd is not None and spent.cost_usd >= limits.max_cost_usd:
        return (f"reached the task's cost limit ({money(spent.cost_usd)} of "
                f"{money(limits.max_cost_usd)})")
    return None
