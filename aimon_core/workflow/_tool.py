"""The Workflow tool: the model runs one of the project's workflows and gets its outputs.

It asks first, as any call that may change the project does (a rule `Workflow(NAME)` allows
one workflow); each task then asks as its own agent would, in the session of the call. The
run belongs to the call: interrupting the turn stops every task.

Teardown follows the seeds' rule: the runner of the agent runtime (made with it) is closed by
the runtime, never by a call; a runner the call had to make for itself (no runtime runner) is
closed by the call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from aimon_core.agent import RunState, Turn
from aimon_core.tools import (
    NameSubject,
    Tool,
    ToolContext,
    ToolInput,
    ToolProviderContext,
    ToolResult,
)
from aimon_core.workflow._model import Pipeline

if TYPE_CHECKING:
    from aimon_core.workflow._library import WorkflowLibrary
    from aimon_core.workflow._record import RunRecord
    from aimon_core.workflow._runner import WorkflowRunner

WORKFLOW_TOOL_NAMES = ("Workflow",)

_DESCRIPTION = """\
Run one of this project's workflows: stages of subagent tasks with fixed control flow \
(tasks of a stage run in parallel, later stages get earlier outputs, checks and retries \
as the workflow defines), and get its final outputs.

- workflow is a name from the list below; inputs gives the values it takes (text).
- It may take long and spend much; use it when the user asks for a workflow, or when one \
listed fits the task exactly. Each task asks the user as its own agent would.
- The result says the run id; the user can inspect it with `aimon workflow show RUN`.

Workflows:
"""

_SCHEMA_BASE = {
    "type": "object",
    "properties": {
        "workflow": {"type": "string", "minLength": 1,
                     "description": "The workflow's name, as listed."},
        "inputs": {"type": "object", "additionalProperties": {"type": "string"},
                   "description": "The workflow's inputs by name (text values)."},
    },
    "required": ["workflow"],
    "additionalProperties": False,
}


@dataclass(frozen=True, slots=True)
class WorkflowToolProvider:
    """Gives a runtime the Workflow tool over a project's workflows (none when it has none).

    `runner` is the runtime's own (closed by the runtime); without one, `new_runner` makes a
    runner for each call, which the call closes.
    """

    library: Callable[[], WorkflowLibrary]
    runner: WorkflowRunner | None = None
    new_runner: Callable[[], WorkflowRunner] | None = None
    name: str = "workflows"
    names: tuple[str, ...] = WORKFLOW_TOOL_NAMES

    def tools(self, context: ToolProviderContext) -> Iterable[Tool]:
        """Return the Workflow tool, listing the workflows in its description."""
        library = self.library()
        if not library.names():
            return ()
        listing = "\n".join(_listing_line(entry.pipeline) for entry in library.entries())
        return (Tool(name="Workflow", description=_DESCRIPTION + listing,
                     input_schema=_SCHEMA_BASE, run=self._run,
                     subject=NameSubject(param="workflow")),)

    async def _run(self, inp: ToolInput, ctx: ToolContext) -> ToolResult:
        from aimon_core.workflow._runner import WorkflowError
        from aimon_core.workflow._store import RunStoreError

        name = inp.string("workflow")
        pipeline = self.library().get(name)
        if pipeline is None:
            known = ", ".join(self.library().names()) or "none"
            return ToolResult.error(f"No workflow named {name!r}. Workflows: {known}.")
        inputs = inp.raw.get("inputs") or {}
        try:
            record = await self._call(pipeline, ctx.project_root, dict(inputs),
                                      ctx.turn or Turn())
        except (WorkflowError, RunStoreError) as exc:
            return ToolResult.error(str(exc))
        return tool_result(record)

    async def _call(self, pipeline: Pipeline, root: Path, inputs: dict[str, str], turn: Turn
                    ) -> RunRecord:
        if self.runner is not None:  # the runtime's: the runtime closes it
            return await self.runner.run(pipeline, project_root=root, inputs=inputs,
                                         parent=turn)
        if self.new_runner is None:
            from aimon_core.workflow._runner import WorkflowError

            raise WorkflowError("no workflow runner is configured for this runtime")
        runner = self.new_runner()
        try:  # made for this call: the call closes it
            return await runner.run(pipeline, project_root=root, inputs=inputs, parent=turn)
        finally:
            await runner.aclose()


def _listing_line(pipeline: Pipeline) -> str:
    inputs = ", ".join(i.name + ("" if i.default is None else "?") for i in pipeline.inputs)
    about = " ".join(pipeline.description.split()) or f"{len(pipeline.stages)} stages"
    return f"- {pipeline.name}" + (f" (inputs: {inputs})" if inputs else "") + f": {about}"


def tool_result(record: RunRecord) -> ToolResult:
    """Return what the model is told about a run that ended."""
    from aimon_core.workflow._budget import money
    from aimon_core.workflow._text import final_outputs

    head = (f"Workflow {record.pipeline.name} run {record.id}: {record.state.value}"
            f" ({money(record.cost_usd)})")
    if record.reason:
        head += f"; {record.reason}"
    body = final_outputs(record)
    text = f"{head}\n\n{body}" if body else head
    if record.state is RunState.COMPLETED:
        return ToolResult.ok(text, run_id=record.id, state=record.state.value)
    return ToolResult.error(text)
