"""Task prompts: Mustache templates over the inputs and the outputs of earlier stages.

Rendered with chevron, the Mustache renderer agent prompts use, with two differences for
prompts: values are never HTML-escaped (an output holding `a < b && c` stays so), and no
partial is read (`{{> name}}` and delimiter changes are refused when the definition is read).
A value is put in as it is and never rendered again, so a task's output that holds `{{...}}`
cannot reach another task's inputs.

The names a prompt may use:

    {{inputs.NAME}}                       an input of the run
    {{stages.NAME.output}}                every output of an earlier stage, one after another
    {{stages.NAME.tasks.N.output}}        one task's output (also .agent, .state, .branch,
                                          .diff, .worktree)
    {{round}}                             the round of a stage with a check (1, 2, ...)
    {{check.command}}, {{check.output}}   that check, and what it printed in the last round
    {{run.id}}, {{workflow.name}}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aimon_core.workflow._model import Pipeline

TASK_FIELDS = ("output", "agent", "state", "branch", "diff", "worktree")
_ESCAPED_TAG = re.compile(r"(?<!\{)\{\{(?![{&#^/!>=])")


def check_template(template: str, pipeline: Pipeline, stage_index: int,
                   declared: set[str] | None) -> str | None:
    """Return what is wrong with a prompt template of stage `stage_index`, or None.

    `declared`: the inputs the workflow declares (None: it declares none, any may be given).
    Names inside a section (`{{#stages.x.tasks}}{{output}}{{/stages.x.tasks}}`) are the
    section's own and are not checked.
    """
    from chevron.tokenizer import ChevronError, tokenize

    depth = 0
    try:
        tokens = list(tokenize(template))
    except ChevronError as exc:
        return f"not a valid Mustache template: {' '.join(str(exc).split())}"
    if "{{=" in template:
        return "delimiter changes ({{=<% %>=}}) are not supported in a workflow prompt"
    for tag, key in tokens:
        if tag == "partial":
            return f"partials ({{{{> {key}}}}}) are not supported in a workflow prompt"
        if tag == "end":
            depth -= 1
            continue
        if tag not in ("variable", "no escape", "section", "inverted section"):
            continue
        if depth == 0:
            problem = _check_name(key.strip(), pipeline, stage_index, declared)
            if problem is not None:
                return problem
        if tag in ("section", "inverted section"):
            depth += 1
    return None


def _check_name(name: str, pipeline: Pipeline, stage_index: int,
                declared: set[str] | None) -> str | None:
    from aimon_core.workflow._model import Stage

    parts = name.split(".")
    match parts:
        case ["inputs", input_name]:
            if declared is not None and input_name not in declared:
                known = ", ".join(sorted(declared)) or "none"
                return f"{{{{{name}}}}}: the workflow declares no input {input_name!r} " \
                       f"(its inputs: {known})"
            return None
        case ["stages", stage_name, *rest]:
            return _check_stage(name, stage_name, rest, pipeline, stage_index)
        case ["round"] | ["run", "id"] | ["workflow", "name"]:
            return None
        case ["check", "command" | "output" | "passed"]:
            stage = pipeline.stages[stage_index]
            if isinstance(stage, Stage) and stage.until is not None:
                return None
            return f"{{{{{name}}}}}: this stage has no check (`until`)"
        case _:
            return (f"{{{{{name}}}}} is not a name a workflow prompt knows: use "
                    "inputs.NAME, stages.NAME.output, stages.NAME.tasks.N.output, round, "
                    "check.output, run.id or workflow.name")


def _check_stage(name: str, stage_name: str, rest: list[str], pipeline: Pipeline,
                 stage_index: int) -> str | None:
    from aimon_core.workflow._model import Stage

    index = pipeline.stage_named(stage_name)
    if index is None:
        return f"{{{{{name}}}}}: there is no stage {stage_name!r}"
    if index >= stage_index:
        return (f"{{{{{name}}}}}: stage {stage_name!r} does not run before this one, so its "
                "output is not there yet")
    stage = pipeline.stages[index]
    count = len(stage.tasks) if isinstance(stage, Stage) else 0
    match rest:
        case [] | ["output"] | ["tasks"]:
            return None
        case ["tasks", number, *field] if number.isdigit():
            if int(number) >= count:
                return (f"{{{{{name}}}}}: stage {stage_name!r} has {count} task"
                        f"{'s' * (count != 1)} (numbered from 0)")
            if field and (len(field) > 1 or field[0] not in TASK_FIELDS):
                return f"{{{{{name}}}}}: a task has {', '.join(TASK_FIELDS)}"
            return None
        case _:
            return (f"{{{{{name}}}}}: use stages.{stage_name}.output or "
                    f"stages.{stage_name}.tasks.N.output")


def render_prompt(template: str, context: Mapping[str, Any]) -> str:
    """Return the template rendered with `context`, nothing escaped, no partial read."""
    if "{{" not in template:
        return template
    import chevron  # off the start-up path

    unescaped = _ESCAPED_TAG.sub("{{&", template)
    return str(chevron.render(unescaped, dict(context), partials_path=None, partials_dict={}))
