"""Running workflows on a runtime with a scripted model: order, outputs, retries, budgets."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aimon_core.agent import (
    AgentEvent,
    Turn,
    WorkflowRunChanged,
    WorkflowTaskChanged,
)
from aimon_core.llm import LLMError, LLMRequest, LLMResponse, Usage, reply
from aimon_core.workflow import (
    MemoryRunStore,
    RunState,
    TaskState,
    final_outputs,
    parse_pipeline,
)
from tests.workflow.conftest import (
    SURVEY,
    assemble,
    by_prompt,
    events_of,
    first_prompt,
    make_project,
)


def run(root: Path, client: object, name: str = "survey", *allowed: str,
        inputs: dict[str, str] | None = None, store: MemoryRunStore | None = None,
        events: list[AgentEvent] | None = None,
        model: str | None = None):  # type: ignore[no-untyped-def]
    """Run a workflow of the project on a runtime built on `client`; return its record."""

    async def main():  # type: ignore[no-untyped-def]
        assembly = assemble(root, client, *allowed, store=store,  # type: ignore[arg-type]
                            model=model)
        async with assembly:
            assert assembly.workflows is not None
            pipeline = (await asyncio.to_thread(assembly.workflows.library)).get(name)
            assert pipeline is not None
            sink = events.append if events is not None else (lambda event: None)
            return await assembly.workflows.runner.run(
                pipeline, project_root=root, inputs=inputs, parent=Turn(emit=sink))

    return asyncio.run(main())


def test_the_smallest_workflow_runs_as_written_and_passes_outputs_on(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    client = by_prompt({
        "List the functions": [reply("add(a, b)")],
        "List the tests": [reply("one assert in test_calc.py")],
        "Summarise": lambda request: reply(f"REPORT of: {first_prompt(request)}"),
    }, calls=3)
    events: list[AgentEvent] = []
    record = run(root, client, events=events)
    assert record.state is RunState.COMPLETED
    report = record.task(1, 0)
    assert report is not None
    assert report.output == "REPORT of: Summarise: add(a, b) / one assert in test_calc.py"
    assert final_outputs(record) == report.output
    # Stages in order: both explore requests come before the report's.
    assert [first_prompt(r)[:9] for r in client.requests][2] == "Summarise"
    assert {record.task(0, 0).agent, record.task(0, 1).agent} == {"explore"}  # type: ignore
    assert report.agent == "general-purpose"
    changed = events_of(WorkflowTaskChanged, events)
    assert [(e.label, e.state) for e in changed if e.state is TaskState.COMPLETED][-1] == (
        "report/0", TaskState.COMPLETED)
    ran = events_of(WorkflowRunChanged, events)
    assert [e.state for e in ran] == [RunState.RUNNING, RunState.COMPLETED]


def test_each_task_runs_as_its_agent_with_its_tools(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    client = by_prompt({"List": lambda r: reply("x"), "Summarise": lambda r: reply("y")},
                       calls=3)
    run(root, client)
    tools = {first_prompt(r)[:9]: {t.name for t in r.tools} for r in client.requests}
    assert "Write" not in tools["List the "] and "Read" in tools["List the "]  # explore
    assert {"Write", "Edit", "Bash"} <= tools["Summarise"]  # general-purpose


def test_a_stage_with_concurrency_one_runs_its_tasks_one_after_another(tmp_path: Path) -> None:
    text = SURVEY.replace("  - name: explore\n", "  - name: explore\n    concurrency: 1\n")
    root = make_project(tmp_path / "p", {"survey": text})
    order: list[str] = []

    def noted(answer: str):  # type: ignore[no-untyped-def]
        def step(request: LLMRequest) -> LLMResponse:
            order.append(first_prompt(request)[:14])
            return reply(answer)
        return step

    client = by_prompt({"List the functions": noted("f"), "List the tests": noted("t"),
                        "Summarise": noted("s")}, calls=3)
    record = run(root, client)
    assert record.state is RunState.COMPLETED
    assert order == ["List the funct", "List the tests", "Summarise: f /"]


def test_the_applications_task_slots_hold_across_stages_and_runs(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    running: list[int] = [0]
    most: list[int] = [0]

    async def main() -> None:
        from aimon_core.llm import ScriptedLLMClient

        class Counting(ScriptedLLMClient):
            async def stream(self, request):  # type: ignore[no-untyped-def, override]
                running[0] += 1
                most[0] = max(most[0], running[0])
                await asyncio.sleep(0)  # let any other task start meanwhile
                try:
                    async for event in super().stream(request):
                        yield event
                finally:
                    running[0] -= 1

        client = Counting(steps=[lambda r: reply("x")] * 6)  # type: ignore[list-item]
        assembly = assemble(root, client, max_tasks=1)
        async with assembly:
            assert assembly.workflows is not None
            pipeline = (await asyncio.to_thread(assembly.workflows.library)).get("survey")
            assert pipeline is not None
            runner = assembly.workflows.runner
            await asyncio.gather(runner.run(pipeline, project_root=root),
                                 runner.run(pipeline, project_root=root))

    asyncio.run(main())
    assert most[0] == 1  # two runs of a stage of two tasks, one slot: one call at a time


RETRY = """\
name: flaky
stages:
  - name: one
    retry: 1
    tasks:
      - {agent: general-purpose, prompt: "FLAKY do it"}
  - name: two
    tasks:
      - {agent: general-purpose, prompt: "AFTER {{stages.one.output}}"}
"""


def overloaded() -> LLMError:
    return LLMError("overloaded", status=400, provider="scripted")


def test_a_failed_task_is_retried_and_the_run_goes_on(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"flaky": RETRY})
    client = by_prompt({"FLAKY": [overloaded(), reply("second time")],  # type: ignore[list-item]
                        "AFTER": lambda r: reply(first_prompt(r))}, calls=3)
    record = run(root, client, "flaky")
    assert record.state is RunState.COMPLETED
    first = record.task(0, 0)
    assert first is not None and first.attempt == 2 and first.output == "second time"
    assert final_outputs(record) == "AFTER second time"


FAILING = """\
name: careful
stages:
  - name: one
    continue_on_error: {go_on}
    tasks:
      - {{agent: general-purpose, prompt: "BROKEN"}}
      - {{agent: general-purpose, prompt: "FINE"}}
  - name: two
    tasks:
      - {{agent: general-purpose, prompt: "LAST {{{{stages.one.output}}}}"}}
"""


def failing_client(calls: int):  # type: ignore[no-untyped-def]
    def broken(request: LLMRequest) -> LLMResponse:
        raise overloaded()

    return by_prompt({"BROKEN": broken, "FINE": lambda r: reply("fine"),
                      "LAST": lambda r: reply(first_prompt(r))}, calls=calls)


def test_continue_on_error_goes_on_past_a_failed_task(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"careful": FAILING.format(go_on="true")})
    record = run(root, failing_client(3), "careful")
    assert record.state is RunState.COMPLETED
    broken = record.task(0, 0)
    assert broken is not None and broken.state is TaskState.FAILED
    assert "overloaded" in broken.error
    assert record.reason.startswith("2 tasks completed; stage one: one/0: ")
    assert final_outputs(record) == "LAST fine"  # the failed task gives no output


def test_without_continue_on_error_a_failure_ends_the_run_and_skips_the_rest(
        tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"careful": FAILING.format(go_on="false")})
    record = run(root, failing_client(2), "careful")
    assert record.state is RunState.FAILED
    assert record.reason.startswith("stage one: one/0:")
    fine = record.task(0, 1)
    assert fine is not None and fine.state is TaskState.COMPLETED  # its sibling finished
    last = record.task(1, 0)
    assert last is not None and last.state is TaskState.SKIPPED


BUDGET = """\
name: spend
budget: {tokens: 100}
stages:
  - name: one
    tasks:
      - {agent: general-purpose, prompt: "FIRST"}
  - name: two
    tasks:
      - {agent: general-purpose, prompt: "SECOND"}
"""


def stopped_by_budget(tmp_path: Path, store: MemoryRunStore,
                     events: list[AgentEvent] | None = None):  # type: ignore[no-untyped-def]
    """Run `spend`, whose first task spends 120 of its 100 tokens; return (project, record)."""
    root = make_project(tmp_path / "p", {"spend": BUDGET})
    big = Usage(input_tokens=90, output_tokens=30)
    client = by_prompt({"FIRST": [reply("a lot", usage=big)]}, calls=1)
    return root, run(root, client, "spend", store=store, events=events)


def test_the_budget_stops_the_run_and_the_next_stage_never_starts(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    _, record = stopped_by_budget(tmp_path, MemoryRunStore(), events)
    assert record.state is RunState.STOPPED
    assert "token budget is spent (120 of 100)" in record.reason
    first = record.task(0, 0)
    assert first is not None and first.state is TaskState.COMPLETED  # its answer came in
    assert record.task(1, 0) is None  # never started: resume runs it
    ended = events_of(WorkflowRunChanged, events)[-1]
    assert ended.state is RunState.STOPPED and ended.tokens == 120


def test_the_budget_stops_a_running_task_mid_way(tmp_path: Path) -> None:
    text = BUDGET.replace("tokens: 100", "tokens: 100, cost: 5")
    root = make_project(tmp_path / "p", {"spend": text})
    usage = Usage(input_tokens=60, output_tokens=0)
    client = by_prompt({"FIRST": [reply("", ("Glob", {"pattern": "*.py"}), usage=usage),
                                  reply("", ("Glob", {"pattern": "*.md"}), usage=usage),
                                  reply("never asked")]}, calls=2)
    record = run(root, client, "spend")
    assert record.state is RunState.STOPPED
    first = record.task(0, 0)
    assert first is not None and first.state is TaskState.STOPPED
    assert "token budget" in first.error
    assert len(client.requests) == 2


def test_inputs_are_checked_and_rendered(tmp_path: Path) -> None:
    text = """\
name: greet
inputs:
  who: {description: whom to greet}
  how: {default: warmly}
stages:
  - name: one
    tasks:
      - {agent: general-purpose, prompt: "Greet {{inputs.who}} {{inputs.how}} <&>"}
"""
    root = make_project(tmp_path / "p", {"greet": text})
    client = by_prompt({"Greet": lambda r: reply(first_prompt(r))}, calls=1)
    record = run(root, client, "greet", inputs={"who": "Ada & co"})
    assert final_outputs(record) == "Greet Ada & co warmly <&>"  # nothing HTML-escaped


def test_a_python_pipeline_has_the_yaml_shape(tmp_path: Path) -> None:
    from aimon_core.workflow import AgentTask, Pipeline, Stage, pipeline_to_mapping

    built = Pipeline(name="survey", stages=(
        Stage(name="explore", tasks=(
            AgentTask(agent="explore", prompt="List the functions in calc.py"),
            AgentTask(agent="explore", prompt="List the tests in test_calc.py"))),
        Stage(name="report", tasks=(AgentTask(
            agent="general-purpose",
            prompt="Summarise: {{stages.explore.tasks.0.output}} / "
                   "{{stages.explore.tasks.1.output}}"),)),
    ))
    parsed = parse_pipeline(SURVEY)
    assert pipeline_to_mapping(built) == pipeline_to_mapping(parsed)


def test_claude_code_agent_names_resolve_and_unknown_ones_name_the_others(
        tmp_path: Path) -> None:
    from aimon_core.workflow import WorkflowError

    spelled = SURVEY.replace("agent: explore", "agent: Explore")
    typo = SURVEY.replace("agent: explore", "agent: xplore").replace("name: survey", "name: typo")
    root = make_project(tmp_path / "p", {"survey": spelled, "typo": typo})
    client = by_prompt({"List": lambda r: reply("x"), "Summarise": lambda r: reply("y")},
                       calls=3)
    record = run(root, client)
    assert record.task(0, 0).agent == "explore"  # type: ignore[union-attr]
    with pytest.raises(WorkflowError, match=r"stages\[0\]\.tasks\[0\]: no agent 'xplore' "
                                            r"\(agents: code-reviewer, explore, general-"):
        run(root, client, "typo")


def test_a_run_resumes_only_in_its_own_project(tmp_path: Path) -> None:
    from aimon_core.workflow import WorkflowError

    store = MemoryRunStore()
    root, record = stopped_by_budget(tmp_path, store)
    other = make_project(tmp_path / "q")
    assert record.project_root == str(root.resolve())

    async def resume_elsewhere() -> None:
        async with assemble(other, by_prompt({}, calls=0), store=store) as assembly:
            assert assembly.workflows is not None
            await assembly.workflows.runner.resume_run(record.id, project_root=other.resolve())

    with pytest.raises(WorkflowError, match=r"belongs to .*/p; resume it there"):
        asyncio.run(resume_elsewhere())


def test_resume_with_a_bigger_budget_runs_what_the_budget_stopped(tmp_path: Path) -> None:
    from aimon_core.workflow import WorkflowBudget

    store = MemoryRunStore()
    root, stopped = stopped_by_budget(tmp_path, store)
    client = by_prompt({"SECOND": [reply("the rest")]}, calls=1)

    async def again():  # type: ignore[no-untyped-def]
        async with assemble(root, client, store=store) as assembly:
            assert assembly.workflows is not None
            return await assembly.workflows.runner.resume_run(
                stopped.id, budget=WorkflowBudget(max_tokens=1000))

    record = asyncio.run(again())
    assert record.state is RunState.COMPLETED
    assert [first_prompt(r) for r in client.requests] == ["SECOND"]  # FIRST is not run again
    assert final_outputs(record) == "the rest"


LIMITED = """\
name: limited
budget: {tokens: 100k}
stages:
  - name: one
    continue_on_error: true
    tasks:
      - {agent: general-purpose, prompt: "LOOP", limits: {iterations: 2}}
      - {agent: general-purpose, prompt: "COSTLY", limits: {cost: 0.000001}}
      - {agent: general-purpose, prompt: "WORDY", limits: {tokens: 50}}
      - {agent: general-purpose, prompt: "FREE"}
"""


def test_a_tasks_own_limits_fail_it_alone_inside_the_budget(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p", {"limited": LIMITED})
    glob = ("Glob", {"pattern": "*.py"})
    big = Usage(input_tokens=40, output_tokens=20)
    client = by_prompt({"LOOP": lambda r: reply("", glob),
                        "COSTLY": lambda r: reply("", glob),
                        "WORDY": lambda r: reply("", glob, usage=big),
                        "FREE": lambda r: reply("done")}, calls=6)
    client.provider = "openai"  # a priced model: each response costs something
    record = run(root, client, "limited", model="gpt-5.4")
    assert record.state is RunState.COMPLETED  # the budget was never reached
    loop, costly, wordy, free = (record.task(0, i) for i in range(4))
    assert loop is not None and loop.state is TaskState.FAILED
    assert costly is not None and costly.state is TaskState.FAILED
    assert "task's cost limit" in costly.error
    assert wordy is not None and wordy.state is TaskState.FAILED
    assert free is not None and (free.state, free.output) == (TaskState.COMPLETED, "done")
    asked = [first_prompt(r) for r in client.requests]
    # LOOP called the model twice (its iterations); COSTLY and WORDY once each: the limit is
    # known before the next call, which is never made.
    assert sorted(asked) == ["COSTLY", "FREE", "LOOP", "LOOP", "WORDY"]
    assert costly.usage.total_tokens == 15  # stopped before its second call was made
