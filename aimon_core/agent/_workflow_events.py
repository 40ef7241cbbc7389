"""The events of a workflow run on its owner's event stream: one per change of a task or run.

A workflow task is an execution without a session of its own; what the person watching sees
of it comes, like everything else, from the one event stream of the session (or print-mode
run) that started it. These are the states and the two events the front ends draw a run's tree
from (`aimon_core.workflow` runs workflows and keeps them as records).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class TaskState(enum.Enum):
    """Where one task of a workflow run is."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    STOPPED = "stopped"  # interrupted (Ctrl-C, a crash) or stopped by the budget: runs again
    SKIPPED = "skipped"  # its stage never ran (an earlier stage failed)


class RunState(enum.Enum):
    """Where a workflow run is."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    STOPPED = "stopped"  # its budget ran out
    INTERRUPTED = "interrupted"  # Ctrl-C, or the process ended while it ran


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowTaskChanged:
    """A task of a workflow run changed state, or is doing something new (`activity`).

    `stage` and `index` locate it in the definition (`label` is `stage/index`, or the task's
    own name); `cost_usd` and `tokens` are what it spent so far; `detail` says why it failed
    or stopped, or sums up its output.
    """

    run_id: str
    workflow: str
    stage: str
    stage_index: int
    index: int
    label: str
    agent: str
    state: TaskState
    activity: str = ""
    detail: str = ""
    round: int = 1
    attempt: int = 1
    tokens: int = 0
    cost_usd: float = 0.0
    duration_s: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowRunChanged:
    """A workflow run started, resumed or ended; `reason` says how it ended."""

    run_id: str
    workflow: str
    state: RunState
    reason: str = ""
    stages: tuple[str, ...] = ()
    tokens: int = 0
    cost_usd: float = 0.0
    duration_s: float = 0.0
