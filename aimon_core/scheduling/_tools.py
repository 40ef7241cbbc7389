"""The seeds' three tools for the model: `schedule_task`, `list_scheduled_tasks`,
`cancel_scheduled_task`.

They speak to the scheduling engine through the service's `schedule/*` methods (a
`ScheduleCall`), like `/schedule`. `schedule_task` and `cancel_scheduled_task` are not
read-only, so the permission gate asks before each call, as for any such tool, and the
question shows the trigger and the prompt; with nobody to ask (print mode, a routine) they
are refused. A routine's own run cannot schedule routines: the service refuses a request
from the session of a run going on.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aimon_core.tools import Tool, ToolContext, ToolInput, ToolResult

if TYPE_CHECKING:
    from aimon_core.scheduling._command import ScheduleCall

SCHEDULE_TASK = "schedule_task"
LIST_SCHEDULED_TASKS = "list_scheduled_tasks"
CANCEL_SCHEDULED_TASK = "cancel_scheduled_task"

_WHEN = ("cron", "every", "at", "after")

_SCHEDULE_DESCRIPTION = """\
Schedule a task: a prompt that the background service runs by itself later, once or again \
and again, in this project, as a new session each time (its own transcript). Give exactly \
one of `cron` (five fields, e.g. "0 9 * * 1-5"), `every` (an interval: "30m", "2h"), `at` \
(an ISO time: "2026-12-02T09:00") or `after` (a delay: "20m"). The user is asked before the \
task is scheduled. A run cannot ask anyone: whatever would need approval is refused in it, \
so write a prompt that needs no approval, or say what the user should allow.
"""

_SCHEDULE_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "A short name: letters, digits, . _ -"},
        "prompt": {"type": "string", "description": "What the task does, as a prompt "
                   "(a slash command such as a skill also works)."},
        "cron": {"type": "string"},
        "every": {"type": "string"},
        "at": {"type": "string"},
        "after": {"type": "string"},
        "timezone": {"type": "string", "description": "The IANA zone of cron and at "
                     "(default: the user's)."},
        "max_runs": {"type": "integer", "minimum": 1},
    },
    "required": ["name", "prompt"],
    "additionalProperties": False,
}


def _label(tool_input: Mapping[str, Any], project_root: Path | None) -> str:
    """Show a schedule_task call with its trigger and prompt (the question shows this)."""
    when = next((f"{key} {tool_input[key]}" for key in _WHEN if tool_input.get(key)), "?")
    prompt = " ".join(str(tool_input.get("prompt", "")).split())
    return f"{tool_input.get('name', '?')}, {when}: {prompt}"


def _from_session(ctx: ToolContext) -> str:
    return str(ctx.turn.session_id) if ctx.turn is not None else ""


def schedule_tools(call: ScheduleCall) -> tuple[Tool, ...]:
    """Return the three tools, speaking through `call`."""

    async def schedule(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        from aimon_core.scheduling._report import local_time
        from aimon_core.scheduling._request import AddChoice, TriggerChoice, add_request
        from aimon_core.scheduling._routine import RoutineLimits

        raw = tool_input.raw
        choice = AddChoice(
            name=str(raw["name"]), prompt=str(raw["prompt"]), project=str(ctx.project_root),
            trigger=TriggerChoice(cron=raw.get("cron"), every=raw.get("every"),
                                  at=raw.get("at"), in_=raw.get("after"),
                                  zone=raw.get("timezone")),
            limits=RoutineLimits(max_runs=raw.get("max_runs")))
        try:
            params = add_request(choice)
            done = await call("schedule/add", {**params, "from_session": _from_session(ctx)})
        except Exception as exc:  # a bad trigger, a taken name, no service: the model reads it
            return ToolResult.error(f"not scheduled: {getattr(exc, 'message', None) or exc}")
        return ToolResult.ok(f"Scheduled {done['name']}: {done['trigger_text']}, next run at "
                             f"{local_time(done.get('next_run'))}. The user can list it with "
                             f"`aimon schedule list` and remove it with "
                             f"`aimon schedule rm {done['name']}`.")

    async def listed(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        from aimon_core.scheduling._report import list_lines

        try:
            done = await call("schedule/list", {})
        except Exception as exc:
            return ToolResult.error(f"no list: {getattr(exc, 'message', None) or exc}")
        return ToolResult.ok("\n".join(list_lines(done["routines"])))

    async def cancel(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        name = str(tool_input.raw["name"])
        try:
            await call("schedule/remove", {"name": name, "from_session": _from_session(ctx)})
        except Exception as exc:
            return ToolResult.error(f"not cancelled: {getattr(exc, 'message', None) or exc}")
        return ToolResult.ok(f"Cancelled {name}: it will not run again.")

    name_only = {"type": "object", "properties": {"name": {"type": "string"}},
                 "required": ["name"], "additionalProperties": False}
    return (
        Tool(name=SCHEDULE_TASK, description=_SCHEDULE_DESCRIPTION,
             input_schema=_SCHEDULE_SCHEMA, run=schedule, describe=_label),
        Tool(name=LIST_SCHEDULED_TASKS, read_only=True, run=listed,
             description="List the scheduled tasks (routines): trigger, state, next and last "
                         "run, totals.",
             input_schema={"type": "object", "properties": {},
                           "additionalProperties": False}),
        Tool(name=CANCEL_SCHEDULED_TASK, run=cancel, input_schema=name_only,
             describe=lambda tool_input, _: str(tool_input.get("name", "?")),
             description="Cancel a scheduled task (routine) by name: it is removed and a run "
                         "going on is stopped. The user is asked first."),
    )
