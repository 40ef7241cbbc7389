"""aimon's events as ACP session updates, and a stored transcript as the updates that replay it.

One function per direction of the edge: `updates_of(event)` for the live stream, and
`replay_updates(messages)` for `session/load`. Tool calls carry their kind, status, the
files they touch (locations) and, for edits, the change as a diff; TodoWrite's list is the
agent's plan.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from acp import schema
from acp.helpers import (
    plan_entry,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_plan,
    update_tool_call,
    update_user_message_text,
)

from aimon_core.agent import (
    AgentEvent,
    AssistantTextDelta,
    AssistantThinkingDelta,
    Notice,
    StopCause,
    ToolCallFinished,
    ToolCallStarted,
)
from aimon_core.llm import Message, TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock
from aimon_core.tools import TodoList

Update = Any  # one of the schema's session update models

_KINDS: Mapping[str, schema.ToolKind] = {
    "Read": "read", "Edit": "edit", "Write": "edit", "MultiEdit": "edit", "NotebookEdit": "edit",
    "Bash": "execute", "BashOutput": "execute", "KillShell": "execute",
    "Grep": "search", "Glob": "search", "TodoWrite": "think", "Task": "think",
    "Skill": "think", "WebFetch": "fetch", "WebSearch": "fetch",
}
_STOPS: Mapping[StopCause, schema.StopReason] = {
    StopCause.OUTPUT_LIMIT: "max_tokens", StopCause.TOKEN_LIMIT: "max_tokens",
    StopCause.ITERATION_LIMIT: "max_turn_requests", StopCause.TIME_LIMIT: "max_turn_requests",
    StopCause.REFUSED: "refusal", StopCause.INTERRUPTED: "cancelled",
}


def stop_reason(stop: StopCause) -> schema.StopReason:
    """Return the ACP stop reason of how a turn ended."""
    return _STOPS.get(stop, "end_turn")


def tool_kind(name: str) -> schema.ToolKind:
    """Return the ACP kind of a tool (MCP and unknown tools: "other")."""
    return _KINDS.get(name, "other")


def locations(name: str, tool_input: Mapping[str, Any]) -> list[schema.ToolCallLocation]:
    """Return the files a call touches, for the editor to follow."""
    path = tool_input.get("file_path") or (tool_input.get("path") if name in ("Grep", "Glob")
                                           else None)
    if not isinstance(path, str) or not path:
        return []
    line = tool_input.get("offset")
    return [schema.ToolCallLocation(path=path,
                                    line=line if isinstance(line, int) and line > 0 else None)]


def _diff(name: str, tool_input: Mapping[str, Any]) -> list[Any]:
    """Return an edit's change as an ACP diff (old and new text), if the call is an edit."""
    path = tool_input.get("file_path")
    if not isinstance(path, str):
        return []
    if name == "Edit" and isinstance(tool_input.get("new_string"), str):
        old = tool_input.get("old_string")
        return [tool_diff_content(path, str(tool_input["new_string"]),
                                  old if isinstance(old, str) else None)]
    if name == "Write" and isinstance(tool_input.get("content"), str):
        return [tool_diff_content(path, str(tool_input["content"]), None)]
    return []


def started_update(tool_use_id: str, name: str, tool_input: Mapping[str, Any], label: str,
                   status: schema.ToolCallStatus = "pending") -> Update:
    """Return the update that announces a tool call."""
    return start_tool_call(tool_use_id, label or name, kind=tool_kind(name), status=status,
                           content=_diff(name, tool_input) or None,
                           locations=locations(name, tool_input) or None,
                           raw_input=dict(tool_input))


def finished_updates(event: ToolCallFinished) -> Iterator[Update]:
    """Return the updates of a finished call: its status and output (and a plan)."""
    result = event.result
    content = [*_diff(event.name, event.input), tool_content(text_block(result.text))] \
        if result.text else _diff(event.name, event.input)
    yield update_tool_call(event.tool_use_id, status="failed" if result.is_error else "completed",
                           content=content or None, raw_output={"text": result.text})
    if isinstance(result.detail, TodoList):
        yield update_plan(plan_entry(item.content, status=_plan_status(item.status))
                          for item in result.detail.items)


def _plan_status(status: str) -> schema.PlanEntryStatus:
    return "in_progress" if status == "in_progress" else (
        "completed" if status == "completed" else "pending")


def updates_of(event: AgentEvent | object) -> list[Update]:
    """Return the ACP updates an event of the session's stream makes (none for most)."""
    match event:
        case AssistantTextDelta(text=text) if text:
            return [update_agent_message_text(text)]
        case AssistantThinkingDelta(text=text) if text:
            return [update_agent_thought_text(text)]
        case ToolCallStarted(tool_use_id=tool_id, name=name, input=tool_input, label=label):
            return [started_update(tool_id, name, tool_input, label, "in_progress")]
        case ToolCallFinished() as finished:
            return list(finished_updates(finished))
        case Notice(text=text, level="warning"):
            return [update_agent_thought_text(f"[aimon] {text}\n")]
    return []


def replay_updates(messages: Sequence[Message]) -> Iterator[Update]:
    """Return the updates that show a stored conversation again (`session/load`)."""
    calls: dict[str, ToolUseBlock] = {}
    for message in messages:
        for block in message.content:
            match block:
                case TextBlock(text=text) if message.role == "user":
                    if text.startswith("<context name="):
                        continue  # aimon's context blocks: not what the user typed
                    yield update_user_message_text(text)
                case TextBlock(text=text):
                    yield update_agent_message_text(text)
                case ThinkingBlock(thinking=text) if text:
                    yield update_agent_thought_text(text)
                case ToolUseBlock(id=tool_id, name=name, input=tool_input):
                    calls[tool_id] = block
                    yield started_update(tool_id, name, tool_input, name, "pending")
                case ToolResultBlock(tool_use_id=tool_id, is_error=failed):
                    yield update_tool_call(tool_id, status="failed" if failed else "completed",
                                           content=[tool_content(text_block(block.text))])
