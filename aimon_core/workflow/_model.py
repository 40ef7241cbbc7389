"""A workflow's definition: stages in order, each a set of agent tasks or a merge.

The Python API has the shape of the YAML files (`.aimon/workflows/NAME.yaml`):

    Pipeline(name="survey", stages=(
        Stage(name="explore", tasks=(
            AgentTask(agent="explore", prompt="List the functions in calc.py"),
            AgentTask(agent="explore", prompt="List the tests in test_calc.py"))),
        Stage(name="report", tasks=(
            AgentTask(agent="general-purpose",
                      prompt="Summarise: {{stages.explore.tasks.0.output}}"),)),
    ))

Stages run in order. The tasks of a stage run at the same time (up to `concurrency`); each
names an agent and a prompt, a Mustache template that may use the inputs and the outputs of
earlier stages. A stage may retry a failed task, go on after a failure (`continue_on_error`),
or run a check (`until`) after its tasks and run them again until it passes. A `MergeStage`
merges the branches of earlier worktree tasks into the project.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskLimits:
    """One task's own limits, inside the workflow's budget; None means no limit of its own."""

    max_iterations: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    max_seconds: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowBudget:
    """What a whole run may spend, across every task and every round; None: no limit."""

    max_tokens: int | None = None
    max_cost_usd: float | None = None
    max_seconds: float | None = None

    @property
    def unlimited(self) -> bool:
        """Return True when no limit is set."""
        return self.max_tokens is None and self.max_cost_usd is None and self.max_seconds is None


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentTask:
    """One task: an agent, the prompt it gets (a Mustache template), where and how far.

    `worktree`: the task works in a git worktree of its own, on its own branch, under aimon's
    data folder; its changes are collected as that branch and a diff. `retry`: how many more
    times a failed task runs (None: the stage's `retry`).
    """

    agent: str
    prompt: str
    name: str = ""
    worktree: bool = False
    limits: TaskLimits = TaskLimits()
    retry: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UntilCheck:
    """A command run after a stage's tasks; while it fails they run again, `max_rounds` in all.

    The command runs as a Bash call of the workflow's agent would: the permission rules
    decide, and it asks when they would ask.
    """

    command: str
    max_rounds: int = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class Stage:
    """A stage of agent tasks, run at the same time (at most `concurrency` at once)."""

    name: str
    tasks: tuple[AgentTask, ...]
    concurrency: int | None = None
    retry: int = 0
    continue_on_error: bool = False
    until: UntilCheck | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MergeStage:
    """A stage that merges the branches of earlier worktree tasks into the project, in order.

    `stages` names the stages whose worktree tasks it merges (empty: every earlier one). A
    merge that would conflict changes nothing and fails the stage, naming the files.
    """

    name: str
    stages: tuple[str, ...] = ()
    continue_on_error: bool = False


AnyStage = Stage | MergeStage


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowInput:
    """An input a workflow declares: `{{inputs.NAME}}`; None `default`: it must be given."""

    name: str
    description: str = ""
    default: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Pipeline:
    """A workflow definition: its stages, the inputs it takes, its budget."""

    name: str
    stages: tuple[AnyStage, ...]
    description: str = ""
    inputs: tuple[WorkflowInput, ...] = ()
    budget: WorkflowBudget = WorkflowBudget()
    # Where it was read from (a file), for messages.
    source: str = "<python>"

    def stage_named(self, name: str) -> int | None:
        """Return the index of the stage called `name`, if any."""
        return next((i for i, stage in enumerate(self.stages) if stage.name == name), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkflowConcurrency:
    """How many workflow tasks may run at once in an application, across all its runs."""

    max_tasks: int = 4


def task_label(stage: AnyStage, index: int) -> str:
    """Return how a task is named in messages: its own name, or `stage/index`."""
    if isinstance(stage, Stage) and stage.tasks[index].name:
        return stage.tasks[index].name
    return f"{stage.name}/{index}"
