"""The workflows of .aimon.example load, and run as shipped: `survey` with its defaults,
`fix-and-review` from the fix in a worktree through its check and review to the merge."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import pytest

from aimon_core.agent import Turn
from aimon_core.llm import LLMRequest, LLMResponse, reply
from aimon_core.workflow import RunState, final_outputs, load_workflows
from tests.workflow.conftest import assemble, by_prompt, first_prompt, git, make_repo

EXAMPLE = Path(__file__).parents[2] / ".aimon.example" / "workflows"


def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    (root / ".aimon").mkdir(parents=True)
    shutil.copytree(EXAMPLE, root / ".aimon" / "workflows")
    return root


def test_every_example_workflow_loads(tmp_path: Path) -> None:
    library = load_workflows(project(tmp_path), with_user=False)
    assert library.failures == ()
    assert library.names() == ("fix-and-review", "survey")


def test_the_example_survey_runs_with_its_defaults(tmp_path: Path) -> None:
    root = project(tmp_path)
    client = by_prompt({"List the modules": lambda r: reply("src: app.py"),
                        "List what": lambda r: reply("tests: test_app.py"),
                        "Write a short guide": lambda r: reply(first_prompt(r))}, calls=3)

    async def go():  # type: ignore[no-untyped-def]
        async with assemble(root, client) as assembly:
            assert assembly.workflows is not None
            survey = load_workflows(root, with_user=False).get("survey")
            assert survey is not None
            return await assembly.workflows.runner.run(survey, project_root=root,
                                                       parent=Turn())

    record = asyncio.run(go())
    assert record.state is RunState.COMPLETED
    assert record.inputs == {"first": "src", "second": "tests"}
    guide = final_outputs(record)
    assert "src:\nsrc: app.py\n\ntests:\ntests: test_app.py" in guide


def test_the_example_fix_and_review_fixes_in_a_worktree_checks_reviews_and_merges(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for kind in ("AUTHOR", "COMMITTER"):  # the merge commit is the user's: a test identity
        monkeypatch.setenv(f"GIT_{kind}_NAME", "t")
        monkeypatch.setenv(f"GIT_{kind}_EMAIL", "t@example.invalid")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    # `python -m pytest` of the check is this interpreter, which has pytest.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    root = make_repo(tmp_path / "p", {p.stem: p.read_text() for p in EXAMPLE.glob("*.yaml")})
    (root / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n"
                                       "    assert add(2, 3) == 5\n")
    git(root, "commit", "-qam", "a pytest test")
    fix = [reply("", ("Read", {"file_path": "calc.py"})),
           reply("", ("Edit", {"file_path": "calc.py", "old_string": "a - b",
                               "new_string": "a + b"})),
           reply("add() adds now")]
    reviewed: list[str] = []

    def review(request: LLMRequest) -> LLMResponse:
        reviewed.append(first_prompt(request))
        return reply("No problems.")

    client = by_prompt({"Fix this bug": lambda r: fix.pop(0), "Review this change": review},
                       calls=4)

    async def go():  # type: ignore[no-untyped-def]
        async with assemble(root, client, "Bash(python -m pytest:*)", "Bash(git merge:*)",
                            mode="acceptEdits") as assembly:
            assert assembly.workflows is not None
            workflow = load_workflows(root, with_user=False).get("fix-and-review")
            assert workflow is not None
            return await assembly.workflows.runner.run(
                workflow, project_root=root, inputs={"bug": "add() subtracts"}, parent=Turn())

    record = asyncio.run(go())
    assert record.state is RunState.COMPLETED, record.reason
    fixed = record.task(0, 0)
    assert fixed is not None and fixed.branch == f"aimon/{record.id}/fix-0"
    assert (record.stage(0).passed, record.stage(0).rounds) == (True, 1)
    assert "+    return a + b" in reviewed[0]  # the reviewer got the diff
    assert (root / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"  # merged
    assert fixed.worktree and not Path(fixed.worktree).exists()  # removed: the run ended well
    assert git(root, "status", "--porcelain") == ""
