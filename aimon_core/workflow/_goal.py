"""`/goal`: a one-stage workflow whose task runs again until its check passes or the budget
ends.

    /goal --until "python -m pytest -q" --tokens 200k make the failing tests pass

The goal is the task's input, never read as a template; each later round goes on from the
task's transcript and is told what the check printed.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from aimon_core.workflow._model import (
    AgentTask,
    Pipeline,
    Stage,
    TaskLimits,
    UntilCheck,
    WorkflowBudget,
    WorkflowInput,
)
from aimon_core.workflow._parse import WorkflowDefinitionError, _Reader, parse_budget

DEFAULT_ROUNDS = 5
_PROMPT = (
    "{{inputs.goal}}\n\n"
    "Work in this project until this goal is met. When you are done, the command "
    "`{{check.command}}` is run to check it; if it fails, you will be told what it printed "
    "and go on. End with a short report of what you changed.")


@dataclass(frozen=True, slots=True, kw_only=True)
class GoalRequest:
    """A goal: what to reach, the check that says it is reached, and its limits."""

    goal: str
    check: str
    rounds: int = DEFAULT_ROUNDS
    agent: str = "general-purpose"
    worktree: bool = False
    budget: WorkflowBudget = field(default_factory=WorkflowBudget)

    def pipeline(self) -> Pipeline:
        """Return the goal as a workflow (its goal is the input `goal`)."""
        task = AgentTask(agent=self.agent, prompt=_PROMPT, worktree=self.worktree,
                         limits=TaskLimits())
        stage = Stage(name="goal", tasks=(task,),
                      until=UntilCheck(command=self.check, max_rounds=self.rounds))
        return Pipeline(name="goal", description=self.goal, stages=(stage,),
                        inputs=(WorkflowInput(name="goal"),), budget=self.budget,
                        source="/goal")


class GoalUsageError(ValueError):
    """`/goal` got arguments it cannot use; the message says what to write."""


_VALUED = ("--until", "--rounds", "--tokens", "--cost", "--time", "--agent")


def parse_goal(args: str) -> GoalRequest:
    """Read `/goal`'s arguments (options first, then the goal); raise GoalUsageError."""
    try:
        words = shlex.split(args)
    except ValueError as exc:
        raise GoalUsageError(f"cannot read the arguments: {exc}") from None
    values: dict[str, str] = {}
    worktree = False
    while words and words[0].startswith("--"):
        option = words.pop(0)
        name, eq, value = option.partition("=")
        if name == "--worktree" and not eq:
            worktree = True
            continue
        if name not in _VALUED:
            raise GoalUsageError(f"unknown option {name}")
        if not eq:
            if not words:
                raise GoalUsageError(f"{name} needs a value")
            value = words.pop(0)
        values[name] = value
    goal = " ".join(words).strip()
    if not goal:
        raise GoalUsageError("say what the goal is, after the options")
    check = values.get("--until", "").strip()
    if not check:
        raise GoalUsageError("a goal needs a check that tells when it is reached: "
                             '--until "python -m pytest -q"')
    try:
        rounds = _Reader("/goal").count(values.get("--rounds", DEFAULT_ROUNDS), "--rounds")
        budget = parse_budget(tokens=values.get("--tokens"), cost=values.get("--cost"),
                              time=values.get("--time"), source="/goal")
    except WorkflowDefinitionError as exc:
        raise GoalUsageError(f"{exc.where}: {exc.reason}" if exc.where else exc.reason
                             ) from None
    return GoalRequest(goal=goal, check=check, rounds=rounds, worktree=worktree,
                       agent=values.get("--agent", "general-purpose"), budget=budget)
