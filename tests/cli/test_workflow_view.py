"""The workflow view: a line per finished task and run, the live tree of runs in progress."""

from __future__ import annotations

import io

from rich.console import Console

from aimon_cli._workflow_view import WorkflowView
from aimon_cli.render import Renderer
from aimon_core.agent import RunState, TaskState, WorkflowRunChanged, WorkflowTaskChanged

RUN = "run-20250102-030405-a1b2c3"


def started() -> WorkflowRunChanged:
    return WorkflowRunChanged(run_id=RUN, workflow="survey", state=RunState.RUNNING,
                              stages=("explore", "report"))


def task(index: int, state: TaskState, *, stage: int = 0, activity: str = "",
         **more: object) -> WorkflowTaskChanged:
    name = ("explore", "report")[stage]
    return WorkflowTaskChanged(run_id=RUN, workflow="survey", stage=name, stage_index=stage,
                               index=index, label=f"{name}/{index}",
                               agent="explore" if stage == 0 else "general-purpose",
                               state=state, activity=activity, **more)  # type: ignore[arg-type]


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_live_tree_shows_each_task_where_it_is() -> None:
    clock = Clock()
    view = WorkflowView(clock)
    assert view.update(started()) == [(f"⚙ workflow survey started (run {RUN})", "bold")]
    assert view.update(task(0, TaskState.RUNNING)) == []
    assert view.update(task(1, TaskState.RUNNING)) == []
    clock.now = 104.0
    assert view.update(task(0, TaskState.RUNNING, activity='Grep("def ")')) == []
    printed = view.update(task(1, TaskState.COMPLETED, duration_s=2.1, cost_usd=0.001,
                               detail="one assert"))
    assert printed == [("✓ survey · explore/1 (explore) completed · 2.1s · $0.0010: one assert",
                        "dim green")]
    assert view.tree_lines() == [
        f"⚙ survey {RUN} · 1 done · $0.0010",
        "  explore",
        '    ● explore/0 explore · Grep("def ") · 4s',
        "    ✓ explore/1 explore · 2.1s · $0.0010",
    ]


def test_a_failed_task_and_the_end_of_the_run_are_printed_and_the_tree_empties() -> None:
    view = WorkflowView(Clock())
    view.update(started())
    view.update(task(0, TaskState.RUNNING, stage=1))
    assert view.update(task(0, TaskState.FAILED, stage=1, round=2, detail="overloaded")) == [
        ("✗ survey · report/0 (general-purpose) failed · round 2: overloaded", "red")]
    ended = WorkflowRunChanged(run_id=RUN, workflow="survey", state=RunState.FAILED,
                               reason="stage report: report/0: overloaded", cost_usd=0.25)
    assert view.update(ended) == [
        ("⚙ workflow survey failed · $0.2500: stage report: report/0: overloaded", "red")]
    assert view.tree_lines() == []


def test_the_renderer_prints_the_lines_and_shows_the_tree_with_running_calls() -> None:
    out = io.StringIO()
    renderer = Renderer(Console(file=out, width=100, force_terminal=False, color_system=None))
    renderer(started())
    renderer(task(0, TaskState.RUNNING))
    assert renderer.running_calls()[0].startswith(f"⚙ survey {RUN}")
    renderer(task(0, TaskState.COMPLETED, detail="add(a, b)"))
    assert out.getvalue().splitlines() == [
        f"⚙ workflow survey started (run {RUN})",
        "✓ survey · explore/0 (explore) completed: add(a, b)"]
