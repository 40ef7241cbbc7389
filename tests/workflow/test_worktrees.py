"""Worktree tasks: made outside the project, collected as a branch and a diff, merged back,
removed when the run ends well, kept when it does not; a conflict is reported clearly."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aimon_core.agent import Turn
from aimon_core.llm import LLMRequest, LLMResponse, reply
from aimon_core.session import user_data_dir
from aimon_core.workflow import RunState, TaskState, merge_command
from tests.workflow.conftest import assemble, by_prompt, git, make_repo

APART = """\
name: apart
stages:
  - name: fix
    tasks:
      - {agent: general-purpose, prompt: "WT-A write a.txt", worktree: true}
      - {agent: general-purpose, prompt: "WT-B write b.txt", worktree: true}
  - name: merge
    merge: [fix]
"""
CLASH = """\
name: clash
stages:
  - name: fix
    tasks:
      - {agent: general-purpose, prompt: "WT-A fix calc.py", worktree: true}
      - {agent: general-purpose, prompt: "WT-B fix calc.py", worktree: true}
  - name: merge
    merge: true
"""
MERGE_RULE = "Bash(git merge:*)"


@pytest.fixture(autouse=True)
def _identity(monkeypatch: pytest.MonkeyPatch) -> None:
    """The merge commit is the user's: give git an identity (never the real user's)."""
    for kind in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{kind}_NAME", "t")
        monkeypatch.setenv(f"GIT_{kind}_EMAIL", "t@example.invalid")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def run(root: Path, client: object, name: str, *allowed: str):  # type: ignore[no-untyped-def]
    async def main():  # type: ignore[no-untyped-def]
        assembly = assemble(root, client, *allowed, mode="acceptEdits")  # type: ignore[arg-type]
        async with assembly:
            assert assembly.workflows is not None
            pipeline = (await asyncio.to_thread(assembly.workflows.library)).get(name)
            assert pipeline is not None
            return await assembly.workflows.runner.run(pipeline, project_root=root,
                                                       parent=Turn())

    return asyncio.run(main())


def writer(name: str, seen: dict[str, str]):  # type: ignore[no-untyped-def]
    """Write `name` in the task's folder, noting where the task works (its first Bash)."""
    steps = [reply("", ("Bash", {"command": "pwd"})),
             reply("", ("Write", {"file_path": name, "content": f"hello {name}\n"})),
             reply(f"wrote {name}")]

    def step(request: LLMRequest) -> LLMResponse:
        results = [b for m in request.messages for b in m.content
                   if type(b).__name__ == "ToolResultBlock"]
        if len(results) == 1:
            seen[name] = results[0].text.strip()  # type: ignore[attr-defined]
        return steps.pop(0)

    return step


def test_worktree_tasks_work_apart_and_are_merged_and_removed(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "p", {"apart": APART})
    where: dict[str, str] = {}
    client = by_prompt({"WT-A": writer("a.txt", where), "WT-B": writer("b.txt", where)},
                       calls=6)
    record = run(root, client, "apart", MERGE_RULE, "Bash(pwd)")
    assert record.state is RunState.COMPLETED, record.reason
    a, b = record.task(0, 0), record.task(0, 1)
    assert a is not None and b is not None
    # Each worked in its own worktree under aimon's data folder, never in the project.
    base = user_data_dir() / "worktrees"
    assert Path(where["a.txt"]).is_relative_to(base) and a.worktree == where["a.txt"]
    assert Path(where["b.txt"]).is_relative_to(base) and where["a.txt"] != where["b.txt"]
    assert a.branch == f"aimon/{record.id}/fix-0"
    assert a.diff is not None and "+hello a.txt" in a.diff and "b.txt" not in a.diff
    # Merged into the project, one merge commit each; the worktrees are gone, the branches stay.
    assert (root / "a.txt").read_text() == "hello a.txt\n"
    assert (root / "b.txt").read_text() == "hello b.txt\n"
    assert not Path(where["a.txt"]).exists() and not Path(where["b.txt"]).exists()
    assert git(root, "branch", "--list", "aimon/*").split() == [
        f"aimon/{record.id}/fix-0", f"aimon/{record.id}/fix-1"]
    merges = [record.task(1, 0), record.task(1, 1)]
    assert [m.state for m in merges if m] == [TaskState.COMPLETED, TaskState.COMPLETED]
    assert git(root, "status", "--porcelain") == ""


def fixer(new: str):  # type: ignore[no-untyped-def]
    steps = [reply("", ("Read", {"file_path": "calc.py"})),
             reply("", ("Edit", {"file_path": "calc.py", "old_string": "a - b",
                                 "new_string": new})),
             reply(f"now {new}")]
    return lambda request: steps.pop(0)


def test_a_merge_that_would_conflict_changes_nothing_and_says_where(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "p", {"clash": CLASH})
    client = by_prompt({"WT-A": fixer("a + b"), "WT-B": fixer("b + a")}, calls=6)
    record = run(root, client, "clash", MERGE_RULE)
    assert record.state is RunState.FAILED
    branch = f"aimon/{record.id}/fix-1"
    assert f"merging {branch} into {root} would conflict in calc.py; nothing was changed" \
        in record.reason
    assert merge_command(branch) in record.reason  # how to merge it by hand
    # The first branch merged; the second changed nothing: no merge in progress, no markers.
    assert "a + b" in (root / "calc.py").read_text()
    assert git(root, "status", "--porcelain") == ""
    failed = record.task(1, 1)
    assert failed is not None and failed.state is TaskState.FAILED
    # A run that failed keeps its worktrees to look into.
    kept = [record.task(0, 0), record.task(0, 1)]
    assert all(t is not None and t.worktree and Path(t.worktree).is_dir() for t in kept)


def test_a_merge_no_rule_allows_is_refused_in_print_mode(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "p", {"apart": APART})
    where: dict[str, str] = {}
    client = by_prompt({"WT-A": writer("a.txt", where), "WT-B": writer("b.txt", where)},
                       calls=6)
    record = run(root, client, "apart", "Bash(pwd)")
    assert record.state is RunState.FAILED
    assert "was not run" in record.reason and "git merge" in record.reason
    assert not (root / "a.txt").exists()


def test_worktree_tasks_need_a_repository(tmp_path: Path) -> None:
    from aimon_core.workflow import WorkflowError
    from tests.workflow.conftest import make_project

    root = make_project(tmp_path / "p", {"apart": APART})
    with pytest.raises(WorkflowError, match="need a git repository with a commit"):
        run(root, by_prompt({}, calls=0), "apart")
