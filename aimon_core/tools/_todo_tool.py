"""TodoWrite: the model's checklist for the task at hand."""

from __future__ import annotations

from typing import Any, cast

from aimon_core.tools._base import Tool, ToolContext, ToolInput, ToolInputError, ToolResult
from aimon_core.tools._detail import TodoItem, TodoList
from aimon_core.tools._state import TODO_STATUSES, Todo, TodoStatus

TODO_DESCRIPTION = """\
Create or update your todo list for the current task; the user sees it as a checklist.

- Send the whole list every time: it replaces the previous one. An empty list clears it.
- Use it for work of three or more steps, or when the user asks for several things; skip \
it for a single simple step.
- status is pending, in_progress or completed. Keep exactly one item in_progress while \
you work (never more than one), and start it before you begin that work.
- Mark an item completed as soon as it is fully done (tests pass, nothing left to fix). If \
you are blocked, keep it in_progress and add an item for what blocks you.
- content is the imperative form ("Run the tests"); activeForm is the present continuous \
form shown while the item is in progress ("Running the tests")."""

TODO_SCHEMA = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "description": "The complete, updated todo list.",
            "items": {
                "type": "object",
                "properties": {
                    "content": {"type": "string", "minLength": 1},
                    "status": {"type": "string", "enum": list(TODO_STATUSES)},
                    "activeForm": {"type": "string", "minLength": 1},
                },
                "required": ["content", "status", "activeForm"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["todos"],
    "additionalProperties": False,
}


def parse_todos(items: list[Any]) -> tuple[Todo, ...]:
    """Turn the tool's `todos` argument into Todo values (the schema gate ran already)."""
    todos = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise ToolInputError(f"todos[{index}]", "an object")
        content, status, active = item.get("content"), item.get("status"), item.get("activeForm")
        if not isinstance(content, str) or not content.strip():
            raise ToolInputError(f"todos[{index}].content", "a non-empty string")
        if status not in TODO_STATUSES:
            raise ToolInputError(f"todos[{index}].status", "pending, in_progress or completed")
        if not isinstance(active, str) or not active.strip():
            raise ToolInputError(f"todos[{index}].activeForm", "a non-empty string")
        todos.append(Todo(content=content, status=cast(TodoStatus, status), active_form=active))
    return tuple(todos)


def todos_data(todos: tuple[Todo, ...]) -> list[dict[str, str]]:
    """Return the list as JSON-ready dicts (the tool's input shape), for the UI and hooks."""
    return [{"content": t.content, "status": t.status, "activeForm": t.active_form} for t in todos]


async def write_todos(inp: ToolInput, ctx: ToolContext) -> ToolResult:
    """Run the TodoWrite tool."""
    todos = parse_todos(inp.array("todos"))
    active = [t.content for t in todos if t.status == "in_progress"]
    if len(active) > 1:
        return ToolResult.error(
            f"{len(active)} items are in_progress ({', '.join(map(repr, active))}); at most "
            "one may be. Keep one in_progress and set the others to pending or completed."
        )
    old = ctx.state.todos
    ctx.state.todos = todos
    done = sum(t.status == "completed" for t in todos)
    return ToolResult.ok(
        f"Todo list updated ({done} of {len(todos)} completed). Keep it current as you work.",
        todos=todos_data(todos),
        old_todos=todos_data(old),
        detail=TodoList(items=tuple(TodoItem(content=t.content, status=t.status)
                                    for t in todos)),
    )


TODO_WRITE_TOOL = Tool(
    name="TodoWrite",
    description=TODO_DESCRIPTION,
    input_schema=TODO_SCHEMA,
    run=write_todos,
    read_only=True,
)
