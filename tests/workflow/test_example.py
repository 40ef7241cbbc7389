"""The workflows of .aimon.example load, and a new user's `survey` runs as shipped."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from aimon_core.agent import Turn
from aimon_core.llm import reply
from aimon_core.workflow import RunState, final_outputs, load_workflows
from tests.workflow.conftest import assemble, by_prompt, first_prompt

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
