"""Workflows: subagent tasks woven together with fixed control flow, kept as resumable runs.

A workflow (`Pipeline`, from `.aimon/workflows/NAME.yaml` or built in Python) is stages run
in order; the tasks of a stage run at the same time, each an agent with a prompt that may use
the inputs and earlier outputs. A `WorkflowRunner` runs it: every task's state, output,
transcript and cost go to a `RunStore` as they happen, so a run that stopped (a failure, the
budget, Ctrl-C, a crash) resumes where it was, running only what did not complete. Tasks may
work in git worktrees of their own; a merge stage brings their branches back.
"""

from aimon_core.agent import RunState, TaskState, WorkflowRunChanged, WorkflowTaskChanged
from aimon_core.workflow._budget import money
from aimon_core.workflow._goal import GoalRequest, GoalUsageError, parse_goal
from aimon_core.workflow._library import (
    WorkflowEntry,
    WorkflowFailure,
    WorkflowLibrary,
    load_workflows,
)
from aimon_core.workflow._merge import merge_command
from aimon_core.workflow._model import (
    AgentTask,
    AnyStage,
    MergeStage,
    Pipeline,
    Stage,
    TaskLimits,
    UntilCheck,
    WorkflowBudget,
    WorkflowConcurrency,
    WorkflowInput,
    task_label,
)
from aimon_core.workflow._parse import (
    WorkflowDefinitionError,
    check_pipeline,
    parse_budget,
    parse_pipeline,
    pipeline_from_mapping,
    pipeline_to_mapping,
)
from aimon_core.workflow._record import (
    RunChange,
    RunEnded,
    RunId,
    RunRecord,
    RunSummary,
    StageChecked,
    StageRecord,
    TaskChanged,
    TaskMessage,
    TaskRecord,
    is_run_id,
    new_run_id,
)
from aimon_core.workflow._render import render_prompt
from aimon_core.workflow._runner import RunHandle, WorkflowError, WorkflowRunner, resolve_inputs
from aimon_core.workflow._store import (
    FileRunStore,
    MemoryRunStore,
    RunExistsError,
    RunLease,
    RunLockedError,
    RunNotFoundError,
    RunStore,
    RunStoreError,
    default_run_store,
    find_run,
)
from aimon_core.workflow._tasks import CommandResult, TaskExecutor, TaskRun, TaskSlots
from aimon_core.workflow._text import (
    final_outputs,
    record_json,
    run_tree,
    runs_lines,
    state_words,
    unmerged_branches,
)
from aimon_core.workflow._tool import WORKFLOW_TOOL_NAMES, WorkflowToolProvider, tool_result
from aimon_core.workflow._worktree import Worktree, WorktreeError, Worktrees

__all__ = [
    "WORKFLOW_TOOL_NAMES",
    "AgentTask",
    "AnyStage",
    "CommandResult",
    "FileRunStore",
    "GoalRequest",
    "GoalUsageError",
    "MemoryRunStore",
    "MergeStage",
    "Pipeline",
    "RunChange",
    "RunEnded",
    "RunExistsError",
    "RunHandle",
    "RunId",
    "RunLease",
    "RunLockedError",
    "RunNotFoundError",
    "RunRecord",
    "RunState",
    "RunStore",
    "RunStoreError",
    "RunSummary",
    "Stage",
    "StageChecked",
    "StageRecord",
    "TaskChanged",
    "TaskExecutor",
    "TaskLimits",
    "TaskMessage",
    "TaskRecord",
    "TaskRun",
    "TaskSlots",
    "TaskState",
    "UntilCheck",
    "WorkflowBudget",
    "WorkflowConcurrency",
    "WorkflowDefinitionError",
    "WorkflowEntry",
    "WorkflowError",
    "WorkflowFailure",
    "WorkflowInput",
    "WorkflowLibrary",
    "WorkflowRunChanged",
    "WorkflowRunner",
    "WorkflowTaskChanged",
    "WorkflowToolProvider",
    "Worktree",
    "WorktreeError",
    "Worktrees",
    "check_pipeline",
    "default_run_store",
    "final_outputs",
    "find_run",
    "is_run_id",
    "load_workflows",
    "merge_command",
    "money",
    "new_run_id",
    "parse_budget",
    "parse_goal",
    "parse_pipeline",
    "pipeline_from_mapping",
    "pipeline_to_mapping",
    "record_json",
    "render_prompt",
    "resolve_inputs",
    "run_tree",
    "runs_lines",
    "state_words",
    "task_label",
    "tool_result",
    "unmerged_branches",
]
