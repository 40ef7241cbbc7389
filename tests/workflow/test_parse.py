"""Definitions: what a workflow file may say, each mistake refused with its place."""

from __future__ import annotations

import pytest

from aimon_core.workflow import (
    MergeStage,
    Pipeline,
    Stage,
    WorkflowDefinitionError,
    parse_pipeline,
    pipeline_from_mapping,
    pipeline_to_mapping,
    render_prompt,
)
from tests.workflow.conftest import SURVEY

FULL = """\
name: full
description: every key
inputs:
  bug: {description: what is wrong}
  test: {default: pytest -q}
budget: {tokens: 400k, cost: "$2.50", time: 1h30m}
stages:
  - name: look
    concurrency: 2
    retry: 1
    continue_on_error: true
    tasks:
      - {agent: explore, prompt: "find {{inputs.bug}}", name: finder}
      - {agent: explore, prompt: "again", limits: {iterations: 5, tokens: 2k, cost: 0.1, time: 90}}
  - name: fix
    until: "python -m pytest -q"
    max_rounds: 4
    tasks:
      - agent: general-purpose
        worktree: true
        retry: 0
        prompt: "{{stages.look.tasks.0.output}} round {{round}}: {{check.output}}"
  - name: merge
    merge: [fix]
"""


def test_every_key_reads_and_writes_back_the_same() -> None:
    pipeline = parse_pipeline(FULL, source="full.yaml")
    assert pipeline.budget.max_tokens == 400_000 and pipeline.budget.max_cost_usd == 2.5
    assert pipeline.budget.max_seconds == 5400
    look, fix, merge = pipeline.stages
    assert isinstance(look, Stage) and look.concurrency == 2 and look.continue_on_error
    assert look.tasks[0].name == "finder" and look.tasks[1].limits.max_tokens == 2000
    assert isinstance(fix, Stage) and fix.until is not None and fix.until.max_rounds == 4
    assert fix.tasks[0].worktree and fix.tasks[0].retry == 0
    assert isinstance(merge, MergeStage) and merge.stages == ("fix",)
    again = pipeline_from_mapping(pipeline_to_mapping(pipeline), source="full.yaml")
    assert again == pipeline


def test_the_name_defaults_to_the_file() -> None:
    text = SURVEY.replace("name: survey\n", "")
    assert parse_pipeline(text, default_name="from-file").name == "from-file"


BAD = {
    "not yaml": ("stages: [", "not valid YAML"),
    "no stages": ("name: x\n", "stages: expected a list of stages"),
    "unknown top key": ("name: x\nstage: []\n", "unknown key 'stage' (did you mean 'stages'?)"),
    "unknown task key": (SURVEY.replace("{agent: explore, prompt: \"List the functions",
                                        "{agnet: explore, prompt: \"List the functions"),
                         "stages[0].tasks[0]: unknown key 'agnet' (did you mean 'agent'?)"),
    "no agent": (SURVEY.replace("agent: general-purpose", "name: r"),
                 "stages[1].tasks[0].agent: expected some text"),
    "a stage named twice": (SURVEY.replace("name: report", "name: explore"),
                            "stages[1].name: a stage is already called 'explore'"),
    "a bad stage name": (SURVEY.replace("name: report", "name: re port"),
                         "stages[1].name: 're port' is not a name"),
    "a later stage": (SURVEY.replace("List the functions in calc.py",
                                     "{{stages.report.output}}"),
                      "stage 'report' does not run before this one"),
    "its own stage": (SURVEY.replace("tasks.1.output", "tasks.1.output}} {{stages.report.output"),
                      "stage 'report' does not run before this one"),
    "no such stage": (SURVEY.replace("stages.explore.tasks.1", "stages.explored.tasks.1"),
                      "there is no stage 'explored'"),
    "no such task": (SURVEY.replace("tasks.1.output", "tasks.2.output"),
                     "stage 'explore' has 2 tasks (numbered from 0)"),
    "no such field": (SURVEY.replace("tasks.1.output", "tasks.1.outptu"),
                      "a task has output, agent, state, branch, diff, worktree"),
    "undeclared input": ("name: x\ninputs: [a]\nstages:\n  - name: s\n    tasks:\n"
                         "      - {agent: explore, prompt: '{{inputs.b}}'}\n",
                         "the workflow declares no input 'b' (its inputs: a)"),
    "unknown name": (SURVEY.replace("List the tests in test_calc.py", "{{secret}}"),
                     "{{secret}} is not a name a workflow prompt knows"),
    "a check with no until": (SURVEY.replace("List the tests in test_calc.py",
                                             "{{check.output}}"),
                              "this stage has no check (`until`)"),
    "a partial": (SURVEY.replace("List the tests in test_calc.py", "{{> header}}"),
                  "partials ({{> header}}) are not supported"),
    "a delimiter change": (SURVEY.replace("List the tests in test_calc.py", "{{=<% %>=}}"),
                           "delimiter changes"),
    "an open section": (SURVEY.replace("List the tests in test_calc.py", "{{#inputs.x}}"),
                        "not a valid Mustache template"),
    "max_rounds without until": (SURVEY.replace("  - name: report\n",
                                                "  - name: report\n    max_rounds: 2\n"),
                                 "max_rounds needs `until`"),
    "too many rounds": (SURVEY.replace("  - name: report\n",
                                       "  - name: report\n    until: x\n    max_rounds: 101\n"),
                        "at most 100 rounds"),
    "a bad budget": (SURVEY.replace("stages:\n", "budget: {tokens: lots}\nstages:\n"),
                     "budget.tokens: expected a whole number"),
    "a bad cost": (SURVEY.replace("stages:\n", "budget: {cost: -1}\nstages:\n"),
                   "budget.cost: expected an amount in dollars"),
    "a bad time": (SURVEY.replace("stages:\n", "budget: {time: soon}\nstages:\n"),
                   "budget.time: expected a duration"),
    "merge of nothing": (SURVEY + "  - name: m\n    merge: [explore]\n",
                         "no task of the stages it merges has `worktree: true`"),
    "merge of a later stage": (SURVEY.replace("  - name: report\n",
                                              "  - name: m\n    merge: [report]\n"
                                              "  - name: report\n"),
                               "'report' is not an earlier stage"),
    "a merge with tasks": (SURVEY + "  - name: m\n    merge: true\n    tasks: []\n",
                           "a merge stage takes only name, merge and continue_on_error"),
}


@pytest.mark.parametrize("text,message", list(BAD.values()), ids=list(BAD))
def test_a_mistake_is_refused_with_its_place(text: str, message: str) -> None:
    with pytest.raises(WorkflowDefinitionError) as caught:
        parse_pipeline(text, source="w.yaml")
    assert message in str(caught.value)
    assert str(caught.value).startswith("w.yaml: ")


def test_a_python_pipeline_is_checked_as_a_file_is() -> None:
    from aimon_core.workflow import AgentTask, check_pipeline

    pipeline = Pipeline(name="p", stages=(Stage(name="a", tasks=(AgentTask(
        agent="explore", prompt="{{stages.b.output}}"),)), Stage(name="b", tasks=(AgentTask(
            agent="explore", prompt="x"),))))
    with pytest.raises(WorkflowDefinitionError, match="stage 'b' does not run before"):
        check_pipeline(pipeline)


def test_values_are_put_in_as_they_are_never_rendered_again() -> None:
    context = {"inputs": {"x": "{{inputs.secret}} <b>&amp;</b>", "secret": "S3CRET"}}
    assert render_prompt("got: {{inputs.x}} / {{{inputs.x}}}", context) == (
        "got: {{inputs.secret}} <b>&amp;</b> / {{inputs.secret}} <b>&amp;</b>")
