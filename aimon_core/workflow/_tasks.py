"""The seam between the runner and the agents: what runs one task, and the global slots.

The runner decides what runs when; a `TaskExecutor` runs one execution of one agent (a fork
of the runtime that starts the workflow: its model client, permission rules and hooks, with
the agent's own tools), and runs a check or a merge command as a Bash call of that runtime
would run (the rules decide, and ask when they would ask). `aimon_core.runtime` gives every
agent runtime one; a test may give its own.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from aimon_core.workflow._model import TaskLimits, WorkflowConcurrency

if TYPE_CHECKING:
    from aimon_core.agent import ExecutionResult, Turn
    from aimon_core.llm import Message


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRun:
    """One execution of a task: which agent, what it is told, where, within what limits.

    `folder` is where it works: the project, or its worktree. `history` is what it said in
    earlier rounds of a stage with a check (the execution goes on from there).
    """

    agent: str
    prompt: str
    folder: Path
    limits: TaskLimits
    history: tuple[Message, ...] = ()
    label: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandResult:
    """How a command the workflow ran (a check, a merge) ended, and what it printed."""

    passed: bool
    output: str
    # The permission rules refused to run it (nobody could be asked, or a rule denies it).
    refused: bool = False


class TaskExecutor(Protocol):
    """Runs the executions of a workflow's tasks for the runtime that starts it."""

    def agent_names(self) -> tuple[str, ...]:
        """Return the agents a task may name."""
        ...

    def resolve_agent(self, name: str) -> str | None:
        """Return the agent `name` means (`Explore` is `explore`), or None if there is none."""
        ...

    async def execute(self, task: TaskRun, turn: Turn) -> ExecutionResult:
        """Run one execution of `task` to its end; `turn` carries its id, events, asker,
        approvals and where its messages are kept."""
        ...

    async def run_command(self, command: str, folder: Path, turn: Turn) -> CommandResult:
        """Run `command` in `folder` as a Bash call of the runtime would run."""
        ...


class TaskSlots:
    """How many workflow tasks may run at once in an application, across all its runs."""

    def __init__(self, concurrency: WorkflowConcurrency | None = None) -> None:
        concurrency = concurrency or WorkflowConcurrency()
        if concurrency.max_tasks < 1:
            raise ValueError("a workflow needs at least one task slot")
        self.limit = concurrency.max_tasks
        self._semaphore: asyncio.Semaphore | None = None

    @property
    def semaphore(self) -> asyncio.Semaphore:
        """Return the semaphore (made on first use, inside the event loop)."""
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.limit)
        return self._semaphore
