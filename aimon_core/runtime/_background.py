"""The subagent tasks a runtime runs in the background (Task with run_in_background)."""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aimon_core.agent import ExecutionResult


@dataclass(slots=True, kw_only=True)
class BackgroundTask:
    """A subagent running in the background: its id, what it does, and its asyncio task."""

    id: str
    agent: str
    description: str
    task: asyncio.Task[ExecutionResult]
    started: float = field(default_factory=time.monotonic)

    @property
    def state(self) -> str:
        """Return running, completed, failed or stopped."""
        if not self.task.done():
            return "running"
        if self.task.cancelled():
            return "stopped"
        return "failed" if self.task.exception() is not None else "completed"


class BackgroundTasks:
    """The background subagent tasks of one runtime; it owns them and stops them on close."""

    def __init__(self) -> None:
        self._tasks: dict[str, BackgroundTask] = {}
        self._ids = itertools.count(1)

    def add(self, agent: str, description: str, task: asyncio.Task[ExecutionResult]
            ) -> BackgroundTask:
        """Track `task` and return its record."""
        entry = BackgroundTask(id=f"task-{next(self._ids)}", agent=agent,
                               description=description, task=task)
        self._tasks[entry.id] = entry
        return entry

    def get(self, task_id: str) -> BackgroundTask | None:
        """Return the task with that id, if any."""
        return self._tasks.get(task_id.strip())

    def all(self) -> tuple[BackgroundTask, ...]:
        """Return every task, oldest first."""
        return tuple(self._tasks.values())

    def running_text(self) -> str | None:
        """Describe the tasks still running, for the model's context (None: none runs)."""
        running = [t for t in self._tasks.values() if t.state == "running"]
        if not running:
            return None
        return ("Background subagents still running (AgentOutput(task_id) reads one, "
                "TaskStop stops it):\n" + "\n".join(
                    f"- {t.id} ({t.agent}): {t.description[:200]}" for t in running))

    async def close(self) -> None:
        """Stop every running task and wait for it to end."""
        running = [t.task for t in self._tasks.values() if not t.task.done()]
        for task in running:
            task.cancel()
        if running:
            await asyncio.wait(running)
