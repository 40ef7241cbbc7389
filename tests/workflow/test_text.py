"""A run in words: the tree `aimon workflow show` prints, and what is left to merge."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from aimon_core.agent import RunState, TaskState
from aimon_core.workflow import (
    RunRecord,
    TaskRecord,
    new_run_id,
    parse_pipeline,
    run_tree,
    unmerged_branches,
)

TWO = """\
name: two
stages:
  - name: fix
    until: {command: "pytest -q", max_rounds: 3}
    tasks:
      - {agent: general-purpose, prompt: "a", worktree: true}
      - {agent: general-purpose, prompt: "b", worktree: true}
  - name: merge
    merge: true
"""
NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def record(state: RunState) -> RunRecord:
    run = RunRecord(id=new_run_id(NOW), pipeline=parse_pipeline(TWO), inputs={"x": "1"},
                    project_root="/p", created_at=NOW, updated_at=NOW, state=state,
                    reason="stage merge: it conflicts" if state is RunState.FAILED else "")
    fix = TaskRecord(stage=0, index=0, label="fix/0", agent="general-purpose",
                     state=TaskState.COMPLETED, output="fixed it\nin two lines", round=2,
                     duration_s=75.0, cost_usd=0.0123, worktree="/w/fix-0",
                     branch="aimon/r/fix-0", diff="+a\n")
    other = replace(fix, index=1, label="fix/1", branch="aimon/r/fix-1", worktree="/w/fix-1",
                    output="", error="overloaded", state=TaskState.FAILED, round=1, attempt=2,
                    diff=None)
    merged = TaskRecord(stage=1, index=0, label="merge fix/0", agent="merge",
                        state=TaskState.COMPLETED, branch="aimon/r/fix-0",
                        output="merged aimon/r/fix-0")
    return replace(run, tasks=(fix, other, merged))


def test_the_tree_shows_stages_tasks_checks_and_diffs() -> None:
    failed = record(RunState.FAILED)
    assert run_tree(failed, held=False).splitlines() == [
        f"{failed.id}  two  failed  (1 of 2 tasks completed, 2m 30s of task time, $0.0246)",
        "  stage merge: it conflicts",
        "  inputs: x='1'",
        "├─ fix  check `pytest -q`: not run, round 1 of 3",
        "│  ├─ ✓ fix/0  general-purpose  completed  round 2  1m 15s  $0.0123",
        "│  │     fixed it (+1 lines)",
        "│  │     branch aimon/r/fix-0  (worktree /w/fix-0)",
        "│  │       +a",
        "│  └─ ✗ fix/1  general-purpose  failed  attempt 2  1m 15s  $0.0123",
        "│        error: overloaded",
        "│        branch aimon/r/fix-1  (worktree /w/fix-1)",
        "└─ merge (merge)",
        "   └─ ✓ merge fix/0  merge  completed",
        "         merged aimon/r/fix-0",
        "         branch aimon/r/fix-0",
    ]


def test_a_completed_run_names_no_worktree_and_only_unmerged_branches_are_left() -> None:
    done = record(RunState.COMPLETED)
    text = run_tree(done)
    assert "(worktree" not in text
    assert unmerged_branches(done) == ["aimon/r/fix-1"]
