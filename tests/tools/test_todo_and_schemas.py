"""TodoWrite, ToolState, the schema gate before every built-in tool, the schema snapshot."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from aimon_core.tools import (
    READ_ONLY_TOOL_NAMES,
    CommandSubject,
    PathSubject,
    Todo,
    ToolContext,
    ToolResult,
    ToolState,
    builtin_tools,
)

RunTool = Callable[..., ToolResult]
SNAPSHOT = Path(__file__).with_name("tool_schemas.snapshot.json")


def todo(content: str, status: str) -> dict[str, str]:
    return {"content": content, "status": status, "activeForm": f"Doing {content}"}


def test_todo_write_replaces_the_list(ctx: ToolContext, run_tool: RunTool) -> None:
    first = [todo("Write code", "in_progress"), todo("Test it", "pending")]
    result = run_tool("TodoWrite", todos=first)
    assert not result.is_error
    assert ctx.state.todos == (
        Todo(content="Write code", status="in_progress", active_form="Doing Write code"),
        Todo(content="Test it", status="pending", active_form="Doing Test it"),
    )
    assert result.data["todos"] == first
    assert result.data["old_todos"] == []
    second = [todo("Write code", "completed"), todo("Test it", "in_progress")]
    again = run_tool("TodoWrite", todos=second)
    assert "1 of 2 completed" in again.text
    assert again.data["old_todos"] == first
    assert not run_tool("TodoWrite", todos=[]).is_error
    assert len(ctx.state.todos) == 0


def test_todo_write_allows_one_item_in_progress(ctx: ToolContext, run_tool: RunTool) -> None:
    result = run_tool("TodoWrite", todos=[todo("A", "in_progress"), todo("B", "in_progress")])
    assert result.is_error
    assert "at most one" in result.text
    assert ctx.state.todos == ()


@pytest.mark.parametrize(
    "items",
    [
        [{"content": "A", "status": "done", "activeForm": "Doing A"}],
        [{"content": "A", "status": "pending"}],
        [{"content": "", "status": "pending", "activeForm": "Doing A"}],
        [{"content": "A", "status": "pending", "activeForm": "x", "priority": "high"}],
        ["just a string"],
    ],
)
def test_todo_write_schema_rejects_bad_items(run_tool: RunTool, items: list[object]) -> None:
    result = run_tool("TodoWrite", todos=items)
    assert result.is_error
    assert result.text.startswith("Invalid input for TodoWrite")


def test_tool_state_compares_content_not_time(tmp_path: Path) -> None:
    state = ToolState()
    path = tmp_path / "f"
    assert state.check_fresh(path, b"x") is not None
    assert not state.has_read(path)
    state.record_read(path, b"x")
    assert state.has_read(path)
    assert state.check_fresh(path, b"x") is None
    reason = state.check_fresh(path, b"y")
    assert reason is not None
    assert "Read it again" in reason


@pytest.mark.parametrize(
    ("name", "args", "problem"),
    [
        ("Read", {"file_path": "a", "bogus": 1}, "'bogus' was unexpected"),
        ("Read", {"file_path": "a", "offset": "ten"}, "is not of type 'integer'"),
        ("Read", {}, "'file_path' is a required property"),
        ("Edit", {"file_path": "a", "old_string": "x"}, "'new_string' is a required property"),
        ("Grep", {"pattern": "x", "output_mode": "lines"}, "is not one of"),
        ("Grep", {"pattern": "x", "-A": -1}, "less than the minimum"),
        ("Bash", {"command": "ls", "timeout": 600_001}, "greater than the maximum"),
        ("Bash", {"command": 5}, "is not of type 'string'"),
        ("Glob", {"pattern": "*", "recursive": True}, "'recursive' was unexpected"),
        ("KillShell", {"bash_id": "bash_1"}, "'shell_id' is a required property"),
    ],
)
def test_schema_gate_rejects_bad_input(
    run_tool: RunTool, name: str, args: dict[str, object], problem: str
) -> None:
    result = run_tool(name, **args)
    assert result.is_error
    assert result.text.startswith(f"Invalid input for {name}")
    assert problem in result.text


def test_builtin_tools_traits() -> None:
    tools = builtin_tools()
    assert [t.name for t in tools] == [
        "Read",
        "Write",
        "Edit",
        "Glob",
        "Grep",
        "Bash",
        "BashOutput",
        "KillShell",
        "TodoWrite",
    ]
    assert frozenset({"Read", "Glob", "Grep", "BashOutput", "TodoWrite"}) == READ_ONLY_TOOL_NAMES
    subjects = {t.name: t.subject for t in tools}
    assert subjects["Read"] == PathSubject(param="file_path")
    assert subjects["Write"] == PathSubject(param="file_path", writes=True)
    assert subjects["Edit"] == PathSubject(param="file_path", writes=True)
    assert subjects["Grep"] == PathSubject(param="path")
    assert subjects["Bash"] == CommandSubject(param="command")
    for tool in tools:
        schema = tool.input_schema
        assert schema["additionalProperties"] is False, tool.name
        assert set(schema["required"]) <= set(schema["properties"]), tool.name
        assert len(tool.description) > 100, tool.name


def test_tool_schemas_snapshot() -> None:
    """Compare every built-in tool's name, description and schema with the stored snapshot.

    Run with AIMON_UPDATE_SNAPSHOTS=1 to rewrite the snapshot after a deliberate change.
    """
    current = [
        {
            "name": t.name,
            "read_only": t.read_only,
            "description": t.description,
            "input_schema": t.input_schema,
        }
        for t in builtin_tools()
    ]
    text = json.dumps(current, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("AIMON_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(text, encoding="utf-8")
    assert SNAPSHOT.read_text(encoding="utf-8") == text, (
        "tool schemas changed; review and run with AIMON_UPDATE_SNAPSHOTS=1 to accept"
    )
