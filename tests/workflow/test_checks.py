"""A stage's check (`until`): rounds until it passes, its limit, and its permission."""

from __future__ import annotations

import asyncio
from pathlib import Path

from aimon_core.agent import AgentEvent, ApprovalRefused, Notice, Turn
from aimon_core.llm import LLMRequest, LLMResponse, reply
from aimon_core.workflow import RunState, TaskState
from tests.workflow.conftest import assemble, by_prompt, events_of, first_prompt, make_project

FIX = """\
name: fix
stages:
  - name: fix
    until: {{command: "python3 test_calc.py", max_rounds: {rounds}}}
    tasks:
      - {{agent: general-purpose, prompt: "FIX calc.py so that test_calc.py passes"}}
"""
CHECK_RULE = "Bash(python3 test_calc.py)"


def run(root: Path, client: object, *allowed: str, mode: str | None = "acceptEdits",
        events: list[AgentEvent] | None = None):  # type: ignore[no-untyped-def]
    async def main():  # type: ignore[no-untyped-def]
        assembly = assemble(root, client, *allowed, mode=mode)  # type: ignore[arg-type]
        async with assembly:
            assert assembly.workflows is not None
            pipeline = (await asyncio.to_thread(assembly.workflows.library)).get("fix")
            assert pipeline is not None
            sink = events.append if events is not None else (lambda event: None)
            return await assembly.workflows.runner.run(pipeline, project_root=root,
                                                       parent=Turn(emit=sink))

    return asyncio.run(main())


def rounds_client(requests: list[LLMRequest]):  # type: ignore[no-untyped-def]
    """Round 1 answers without fixing; round 2 reads and fixes calc.py, then answers."""
    answers = [
        reply("I looked at it; it should be fine."),
        reply("", ("Read", {"file_path": "calc.py"})),
        reply("", ("Edit", {"file_path": "calc.py", "old_string": "a - b",
                            "new_string": "a + b"})),
        reply("Fixed: add now adds."),
    ]

    def step(request: LLMRequest) -> LLMResponse:
        requests.append(request)
        return answers.pop(0)

    return by_prompt({"FIX": step}, calls=4)


def test_until_runs_rounds_until_the_check_passes(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"fix": FIX.format(rounds=3)})
    requests: list[LLMRequest] = []
    events: list[AgentEvent] = []
    record = run(root, rounds_client(requests), CHECK_RULE, events=events)
    assert record.state is RunState.COMPLETED, record.reason
    assert "a + b" in (root / "calc.py").read_text()
    task = record.task(0, 0)
    assert task is not None and task.round == 2 and task.output == "Fixed: add now adds."
    checked = record.stage(0)
    assert checked.rounds == 2 and checked.passed is True
    # Round 2 goes on from round 1's transcript and is told what the check printed.
    second = requests[1]
    assert first_prompt(second).startswith("FIX calc.py")  # the history comes first
    told = second.messages[-1].text
    assert "python3 test_calc.py" in told and "AssertionError: -1" in told
    notices = [e.text for e in events_of(Notice, events)]
    assert any("failed (round 1 of 3)" in n for n in notices)
    assert any("passed (round 2)" in n for n in notices)


def test_until_gives_up_after_its_rounds(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"fix": FIX.format(rounds=2)})
    client = by_prompt({"FIX": lambda r: reply("nothing to do")}, calls=2)
    record = run(root, client, CHECK_RULE)
    assert record.state is RunState.FAILED
    assert record.reason == "stage fix: the check `python3 test_calc.py` still fails after " \
                            "2 rounds"
    assert record.stage(0).rounds == 2 and record.stage(0).passed is False


def test_a_check_nobody_may_allow_is_refused_and_reported(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"fix": FIX.format(rounds=3)})
    client = by_prompt({"FIX": lambda r: reply("done")}, calls=1)
    events: list[AgentEvent] = []
    record = run(root, client, mode=None, events=events)  # no rule allows the check
    assert record.state is RunState.FAILED
    assert "the check `python3 test_calc.py` was not run" in record.reason
    refused = events_of(ApprovalRefused, events)
    assert [r.suggested_rule for r in refused] == [CHECK_RULE]
    assert record.task(0, 0).state is TaskState.COMPLETED  # type: ignore[union-attr]
