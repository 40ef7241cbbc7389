"""The service protocol's wire: JSON-RPC framing, and aimon's values there and back."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import pytest

from aimon_core.agent import (
    AgentEvent,
    ApprovalAnswer,
    ApprovalRefused,
    ApprovalRequest,
    ApprovalRequested,
    ApprovalResolved,
    ApprovalScope,
    ApprovalWithdrawn,
    AssistantMessageCompleted,
    AssistantTextDelta,
    AssistantThinkingDelta,
    Compacted,
    ExecutionBudget,
    ExecutionFinished,
    ExecutionResult,
    ExecutionStarted,
    IterationStarted,
    ModelRetrying,
    ModelStreamRestarted,
    Notice,
    RunState,
    StopCause,
    SubagentFinished,
    SubagentStarted,
    SubagentStep,
    TaskState,
    ToolCallAnnounced,
    ToolCallFinished,
    ToolCallOutput,
    ToolCallStarted,
    WorkflowRunChanged,
    WorkflowTaskChanged,
)
from aimon_core.command import CommandOutcome
from aimon_core.live import (
    CommandRan,
    LiveSessionEvent,
    LiveSessionStatus,
    TurnFinished,
    TurnId,
    TurnQueued,
    TurnStarted,
)
from aimon_core.llm import LLMError, Message, TextBlock, ThinkingBlock, ToolUseBlock, Usage
from aimon_core.service._values import _known_types, from_wire, to_wire
from aimon_core.service._wire import (
    ErrorResponse,
    Notification,
    ProtocolError,
    Request,
    Response,
    decode_message,
    encode_message,
)
from aimon_core.session import SessionTotals
from aimon_core.tools import (
    CommandRun,
    FileChange,
    FileRead,
    ProposedChange,
    TodoItem,
    TodoList,
    ToolResult,
)

RESULT = ExecutionResult(stop=StopCause.ANSWERED, reason="done", text="ok", new_messages=(),
                         usage=Usage(input_tokens=3, output_tokens=2), cost_usd=0.25,
                         iterations=2, tool_calls=1, duration_s=1.5)
MESSAGE = Message(role="assistant", content=(
    TextBlock(text="hi"), ThinkingBlock(thinking="hm", signature="s"),
    ToolUseBlock(id="t1", name="Bash", input={"command": "ls", "list": [1, 2]})))
REQUEST = ApprovalRequest(id="r1", tool_name="Edit", tool_input={"file_path": "a"},
                          subject_text="a", reason="asks", suggested_rule="Edit(a)",
                          preview=ProposedChange(path=Path("/p/a"), diff="-x\n+y\n"))
DETAILS = (FileChange(path="a", diff="d", created=True), FileRead(
    path="a", first_line=1, last_line=2, total_lines=3),
    TodoList(items=(TodoItem(content="x", status="pending"),)),
    CommandRun(command="ls", exit_code=0))
# One of every event of a session's stream (the test below checks none is missing).
EVENTS: tuple[Any, ...] = (
    ExecutionStarted(execution_id="e", prompt="p"), IterationStarted(iteration=2),
    AssistantTextDelta(text="a"), AssistantThinkingDelta(text="t"),
    ModelRetrying(attempt=1, delay=0.5, reason="429"),
    ModelStreamRestarted(attempt=2, reason="cut"),
    AssistantMessageCompleted(message=MESSAGE, usage=Usage(output_tokens=4), cost_usd=0.1),
    ToolCallAnnounced(tool_use_id="t1", name="Bash"),
    ToolCallStarted(tool_use_id="t1", name="Bash", input={"command": "ls"}, label="Bash(ls)"),
    ToolCallOutput(tool_use_id="t1", text="a line\n"),
    *(ToolCallFinished(tool_use_id="t1", name="Edit", input={"todos": [{"a": 1}]},
                       result=ToolResult.ok("ok", detail=detail, shell_id="b1"), duration_s=0.2)
      for detail in DETAILS),
    Notice(text="n", level="warning"),
    Compacted(trigger="auto", text="c", tokens_before=9, tokens_after=3, summarised=True,
              messages=(Message.user("u"),)),
    ExecutionFinished(result=RESULT, extra={"k": "v"}),
    ApprovalRequested(request=REQUEST),
    ApprovalResolved(request_id="r1", answer=ApprovalAnswer(allowed=True,
                                                            scope=ApprovalScope.SESSION),
                     remembered="Edit(a)"),
    ApprovalResolved(request_id="r1", answer=ApprovalAnswer(
        allowed=True, updated_input={"command": "ls -a"}), remembered=""),
    ApprovalWithdrawn(request_id="r1"),
    SubagentStarted(agent="explore", execution_id="x", label="Task(explore)", goal="find it"),
    SubagentStep(agent="explore", execution_id="x", label="Read(a.py)"),
    SubagentFinished(agent="explore", execution_id="x", label="Task(explore)", result=RESULT),
    ApprovalRefused(tool_use_id="t", tool_name="Bash", tool_input={}, label="l", reason="r",
                    denied=False, suggested_rule="Bash(x)"),
    TurnQueued(turn_id=TurnId("s#1"), prompt="p", position=1),
    TurnStarted(turn_id=TurnId("s#1"), prompt="p"),
    TurnFinished(turn_id=TurnId("s#1"), result=RESULT, totals=SessionTotals(turns=1)),
    CommandRan(turn_id=TurnId("s#1"), text="/cost", outcome=CommandOutcome.message("x"),
               duration_s=0.1),
    WorkflowTaskChanged(run_id="run-1", workflow="w", stage="s", stage_index=0, index=1,
                        label="s/1", agent="explore", state=TaskState.RUNNING, activity="Read",
                        round=2, tokens=10, cost_usd=0.01),
    WorkflowRunChanged(run_id="run-1", workflow="w", state=RunState.STOPPED, reason="budget",
                       stages=("s",), tokens=10, cost_usd=0.01, duration_s=1.5),
)


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_every_event_crosses_the_wire_unchanged(event: Any) -> None:
    data = json.loads(json.dumps(to_wire(event)))
    assert data["$type"] == type(event).__name__
    assert from_wire(data) == event


def test_every_kind_of_event_is_in_the_table_and_on_the_allowlist() -> None:
    kinds = {kind.__name__ for kind in typing.get_args(LiveSessionEvent)
             for kind in (typing.get_args(kind) or (kind,))}
    agent_kinds = {kind.__name__ for kind in typing.get_args(AgentEvent)}
    assert kinds == agent_kinds | {"TurnQueued", "TurnStarted", "TurnFinished", "CommandRan"}
    assert kinds <= set(_known_types())
    assert kinds <= {type(event).__name__ for event in EVENTS}


def test_a_model_error_and_a_status_cross_the_wire() -> None:
    failed = ExecutionResult(stop=StopCause.MODEL_ERROR, reason="x", text="", new_messages=(),
                             usage=Usage(), cost_usd=0.0, iterations=1, tool_calls=0,
                             duration_s=0.1, error=LLMError("boom", provider="openai",
                                                            status=529, retry_after=2.0))
    back = from_wire(json.loads(json.dumps(to_wire(failed))))
    assert isinstance(back.error, LLMError)
    assert (back.error.message, back.error.status, back.error.retry_after) == ("boom", 529, 2.0)
    status = LiveSessionStatus(session_id="s", agent="a", model="m", running_turn=None,
                               queued=0, message_count=3, totals=SessionTotals(),
                               budget=ExecutionBudget(), budget_override=None)
    assert from_wire(json.loads(json.dumps(to_wire(status)))) == status


@pytest.mark.parametrize("data", [
    {"$type": "Popen", "args": ["rm"]},
    {"$type": "Path", "args": "/"},
    {"$enum": "Signals", "value": 9},
    {"$type": "Notice"},  # a known type with a field missing
], ids=["unknown-type", "not-a-value-type", "unknown-enum", "missing-field"])
def test_a_type_off_the_allowlist_is_refused(data: dict[str, Any]) -> None:
    with pytest.raises(ProtocolError):
        from_wire({"nested": [data]})


@pytest.mark.parametrize("message", [
    Request(id=1, method="session/new", params={"cwd": "/x"}),
    Request(id="a", method="m", params={}),
    Notification(method="session/event", params={"event": {"$type": "Notice"}}),
    Response(id=1, result={"ok": True}),
    ErrorResponse(id=2, code=-32001, message="no", data={"protocol": 1}),
    ErrorResponse(id=None, code=-32700, message="bad line"),
])
def test_messages_are_one_line_each_and_read_back(message: Any) -> None:
    line = encode_message(message)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert decode_message(line) == message


@pytest.mark.parametrize("line", [
    b"not json", b"[]", b'{"jsonrpc": "1.0", "method": "x"}',
    b'{"jsonrpc": "2.0", "id": true, "method": "x"}',
    b'{"jsonrpc": "2.0", "method": 3}', b'{"jsonrpc": "2.0", "id": 1}',
    b'{"jsonrpc": "2.0", "id": 1, "error": {"message": "no code"}}',
])
def test_a_malformed_message_is_refused(line: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_message(line)


def test_the_protocol_document_names_every_method_and_event() -> None:
    from aimon_core.service._methods import _METHODS

    document = (Path(__file__).parents[2] / "docs" / "PROTOCOL.md").read_text()
    missing = [f"`{name}`" for name in _METHODS if f"`{name}`" not in document]
    missing += [f"`{type(event).__name__}`" for event in EVENTS
                if f"`{type(event).__name__}`" not in document]
    assert not missing, f"docs/PROTOCOL.md does not describe {missing}"
    from aimon_core.service import PROTOCOL_VERSION

    assert f"# The service protocol, version {PROTOCOL_VERSION}" in document
