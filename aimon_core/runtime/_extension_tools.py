"""The Skill, Task, TaskList, TaskStop and AgentOutput tools, and their two providers.

They are ordinary tools: each call reads its Turn from the tool context (`ctx.turn`), so a
fork runs for the session whose call started it. Names and input shapes follow Claude Code's
tools.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from aimon_core.runtime._extensions import Extensions
from aimon_core.tools import Tool, ToolContext, ToolInput, ToolProviderContext, ToolResult

SKILL_DESCRIPTION = """\
Activate one of the skills listed below, by its name.

- A skill is a set of instructions (and often scripts or reference files) for one kind of \
task. When the user's request matches a skill's description, activate it before doing the \
work yourself, and then follow what it returns.
- skill is the name exactly as listed (e.g. "review"); args is the text the skill works on \
(files, a commit range, a question), as the user would type it after /name.
- An inline skill returns its instructions; a forked skill runs in a subagent and returns that \
subagent's final answer in a "=== Skill Forked ===" block.
- Activate only listed skills, and never one that is already running."""

SKILL_SCHEMA = {
    "type": "object",
    "properties": {
        "skill": {"type": "string", "minLength": 1,
                  "description": 'The skill name, as listed (e.g. "review").'},
        "args": {"type": "string", "description": "Arguments for the skill (optional)."},
    },
    "required": ["skill"],
    "additionalProperties": False,
}

TASK_DESCRIPTION = """\
Launch a subagent to carry out a task on its own, in a fresh context, and get its final answer.

- subagent_type names one of the subagents listed below; each has its own instructions and \
tools.
- prompt is the whole task: the subagent sees nothing of this conversation, so say what to \
do, where, and what to report back. description is a 3-5 word summary shown to the user.
- Launch several independent tasks in one response to run them in parallel.
- With run_in_background true the call returns a task id at once; read the answer later with \
AgentOutput, list tasks with TaskList, and stop one with TaskStop.
- The subagent's answer is for you, not the user: tell the user what matters in it."""

TASK_SCHEMA = {
    "type": "object",
    "properties": {
        "description": {"type": "string", "minLength": 1,
                        "description": "A short (3-5 word) description of the task."},
        "prompt": {"type": "string", "minLength": 1,
                   "description": "The task for the subagent to perform."},
        "subagent_type": {"type": "string", "minLength": 1,
                          "description": "The name of the subagent to use."},
        "run_in_background": {"type": "boolean",
                              "description": "Return at once with a task id (default false)."},
    },
    "required": ["description", "prompt", "subagent_type"],
    "additionalProperties": False,
}

TASK_LIST_DESCRIPTION = """\
List the subagent tasks started in the background with Task (run_in_background), with their \
id, subagent, description, state (running, completed, failed, stopped) and age. Use it to find \
a task id for AgentOutput or TaskStop."""

TASK_STOP_DESCRIPTION = """\
Stop a subagent task running in the background, by the task id Task returned. Its work so far \
is lost; files it already changed stay changed. Use it when the task is no longer needed or \
has gone wrong."""

AGENT_OUTPUT_DESCRIPTION = """\
Get the final answer of a subagent task started in the background, by the task id Task \
returned. By default it waits for the task to finish, up to timeout milliseconds (default \
30000); with block false it returns at once with the state if the task is still running."""

TASK_ID_SCHEMA = {
    "type": "object",
    "properties": {"task_id": {"type": "string", "minLength": 1,
                               "description": "The id Task returned."}},
    "required": ["task_id"],
    "additionalProperties": False,
}

AGENT_OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "task_id": {"type": "string", "minLength": 1, "description": "The id Task returned."},
        "block": {"type": "boolean", "description": "Wait for the task to finish (default true)."},
        "timeout": {"type": "number", "minimum": 0, "maximum": 600000,
                    "description": "How long to wait, in milliseconds (default 30000)."},
    },
    "required": ["task_id"],
    "additionalProperties": False,
}

EMPTY_SCHEMA = {"type": "object", "properties": {}, "additionalProperties": False}

SKILL_TOOL_NAMES = ("Skill",)
SUBAGENT_TOOL_NAMES = ("Task", "TaskList", "TaskStop", "AgentOutput")


@dataclass(frozen=True, slots=True)
class SkillToolProvider:
    """Gives a runtime the Skill tool over its skills."""

    extensions: Extensions
    name: str = "skills"
    names: tuple[str, ...] = SKILL_TOOL_NAMES

    def tools(self, context: ToolProviderContext) -> Iterable[Tool]:
        """Return the Skill tool (none when no skill may be started by the model)."""
        from aimon_core.tools import NameSubject

        listing = self.extensions.skills_listing()
        if not listing:
            return ()
        return (Tool(name="Skill", description=f"{SKILL_DESCRIPTION}\n\nThe skills:\n{listing}",
                     input_schema=SKILL_SCHEMA, run=self._run,
                     subject=NameSubject(param="skill")),)

    async def _run(self, inp: ToolInput, ctx: ToolContext) -> ToolResult:
        return await self.extensions.skill_tool(inp.string("skill"), inp.opt_string("args") or "",
                                                ctx)


@dataclass(frozen=True, slots=True)
class SubagentToolProvider:
    """Gives a runtime the Task, TaskList, TaskStop and AgentOutput tools over its agents."""

    extensions: Extensions
    name: str = "subagents"
    names: tuple[str, ...] = SUBAGENT_TOOL_NAMES

    def tools(self, context: ToolProviderContext) -> Iterable[Tool]:
        """Return the subagent tools (none when no subagent is defined)."""
        from aimon_core.tools import NameSubject

        if not self.extensions.agents.names():
            return ()
        ext = self.extensions
        listing = ext.agents_listing()
        return (
            Tool(name="Task", description=f"{TASK_DESCRIPTION}\n\nThe subagents:\n{listing}",
                 input_schema=TASK_SCHEMA,
                 run=ext.task_tool, read_only=True,
                 subject=NameSubject(param="subagent_type")),
            Tool(name="TaskList", description=TASK_LIST_DESCRIPTION, input_schema=EMPTY_SCHEMA,
                 run=ext.task_list_tool, read_only=True),
            Tool(name="TaskStop", description=TASK_STOP_DESCRIPTION,
                 input_schema=TASK_ID_SCHEMA, run=ext.task_stop_tool, read_only=True),
            Tool(name="AgentOutput", description=AGENT_OUTPUT_DESCRIPTION,
                 input_schema=AGENT_OUTPUT_SCHEMA, run=ext.agent_output_tool, read_only=True),
        )
