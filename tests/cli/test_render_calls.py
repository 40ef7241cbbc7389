"""Tool calls on screen: one header per call, with its result under it (issue 9).

A call's header is printed with its result, when the call ends; while it runs, the live area
above the prompt shows it. So an approval question, or a parallel call's result, coming
between a call's start and its end never makes its header print twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from io import StringIO
from pathlib import Path
from typing import Any

from prompt_toolkit.data_structures import Size
from rich.console import Console

from aimon_cli._terminal import prompt_message
from aimon_cli.render import Renderer, approval_lines
from aimon_core.agent import (
    ApprovalAnswer,
    ApprovalRefused,
    ApprovalRequested,
    ApprovalResolved,
    ApprovalScope,
    ApprovalWithdrawn,
    AssistantMessageCompleted,
    AssistantTextDelta,
    ExecutionResult,
    StopCause,
    ToolCallFinished,
    ToolCallStarted,
)
from aimon_core.live import LiveSessionEvent, TurnFinished, TurnId, TurnStarted
from aimon_core.llm import Message, TextBlock, Usage
from aimon_core.permission import ApprovalRequest
from aimon_core.session import SessionTotals
from aimon_core.tools import FileRead, ToolResult

ROOT = Path("/p")
READ = ToolResult.ok("…", detail=FileRead(path="/p/a.py", first_line=1, last_line=3,
                                          total_lines=3))


class Screen:
    """A renderer on a string console; approval questions print as the REPL prints them."""

    def __init__(self, width: int = 80) -> None:
        self.file = StringIO()
        self.console = Console(file=self.file, width=width, force_terminal=False,
                               color_system=None)
        self.renderer = Renderer(self.console, session_id="s1", project_root=ROOT)

    def __call__(self, *events: LiveSessionEvent) -> str:
        for event in events:
            self.renderer(event)
            if isinstance(event, ApprovalRequested):  # what the REPL's Asker shows
                for line in approval_lines(event.request, None, ROOT):
                    self.console.print(line, no_wrap=True, overflow="ellipsis", crop=True)
        return "\n".join(line.rstrip() for line in self.file.getvalue().split("\n"))


def started(tool_use_id: str, name: str, **tool_input: Any) -> ToolCallStarted:
    return ToolCallStarted(tool_use_id=tool_use_id, name=name, input=tool_input)


def done(call: ToolCallStarted, result: ToolResult) -> ToolCallFinished:
    return ToolCallFinished(tool_use_id=call.tool_use_id, name=call.name, input=call.input,
                            result=result, duration_s=0.1)


def asked(call: ToolCallStarted, request_id: str) -> ApprovalRequested:
    return ApprovalRequested(request=ApprovalRequest(
        id=request_id, tool_name=call.name, tool_input=call.input,
        subject_text=str(call.input.get("command", "")), reason="not allowed yet",
        suggested_rule=f"{call.name}(x:*)", tool_use_id=call.tool_use_id))


def allowed(request_id: str) -> ApprovalResolved:
    return ApprovalResolved(request_id=request_id,
                            answer=ApprovalAnswer(allowed=True, scope=ApprovalScope.ONCE))


def turn_finished(stop: StopCause = StopCause.ANSWERED) -> TurnFinished:
    return TurnFinished(turn_id=TurnId("t1"), totals=SessionTotals(), result=ExecutionResult(
        stop=stop, reason="interrupted by the user", text="", new_messages=(), usage=Usage(),
        cost_usd=0.0, iterations=1, tool_calls=0, duration_s=1.0))


def test_an_approved_call_prints_its_header_once_with_its_result() -> None:
    screen = Screen()
    rm = started("t1", "Bash", command="rm -rf build")
    out = screen(rm, asked(rm, "r1"), allowed("r1"), done(rm, ToolResult.ok("removed")))
    assert out == ("? Bash(rm -rf build) needs your approval\n"
                   "  Why: not allowed yet\n"
                   "✓ allowed once: Bash(rm -rf build)\n"
                   "● Bash(rm -rf build)\n"
                   "  ⎿ removed\n")


def test_a_denied_call_is_told_once_and_never_with_the_bullet_of_a_call_that_ran() -> None:
    screen = Screen()
    rm = started("t1", "Bash", command="rm x")
    denied = ApprovalResolved(request_id="r1", answer=ApprovalAnswer(allowed=False))
    out = screen(rm, asked(rm, "r1"), denied,
                 done(rm, ToolResult.error("The user denied this tool call.")))
    assert out == ("? Bash(rm x) needs your approval\n"
                   "  Why: not allowed yet\n"
                   "✗ denied: Bash(rm x)\n")
    plan = started("t2", "Bash", command="python3 test_calc.py")
    why = ("plan mode is on and this Bash call is not read-only; present your plan to the user "
           "instead of making changes")
    out = screen(plan, ApprovalRefused(tool_use_id="t2", tool_name="Bash", tool_input={},
                                       label="", reason=why, denied=True),
                 done(plan, ToolResult.error(f"Permission denied: {why}")))
    assert out.endswith("✗ Bash(python3 test_calc.py)\n"
                        "  ⎿ Denied: plan mode is on and this Bash call is not read-only; present "
                        "your\n    plan to the user instead of making changes\n")


def test_parallel_calls_print_one_header_each_with_its_own_result() -> None:
    screen = Screen()
    a, b, c = (started(n, "Read", file_path=f"/p/{n}.py") for n in ("a", "b", "c"))
    out = screen(a, b, c, done(b, READ), done(a, READ), done(c, ToolResult.error("no such file")))
    assert out == ("● Read(b.py)\n  ⎿ Read 3 lines\n"
                   "● Read(a.py)\n  ⎿ Read 3 lines\n"
                   "● Read(c.py)\n  ⎿ no such file\n")


def test_parallel_calls_where_one_waits_for_approval() -> None:
    screen = Screen()
    read = started("a", "Read", file_path="/p/a.py")
    rm = started("b", "Bash", command="rm x")
    grep = started("c", "Grep", pattern="todo")
    out = screen(read, rm, grep, asked(rm, "r1"), done(read, READ))
    assert screen.renderer.running_calls() == ["● Bash(rm x) · waiting for your approval",
                                               '● Grep("todo")']
    out = screen(done(grep, ToolResult.ok("x.py:1: todo")), allowed("r1"),
                 done(rm, ToolResult.ok("")))
    assert out == ("? Bash(rm x) needs your approval\n"
                   "  Why: not allowed yet\n"
                   "● Read(a.py)\n  ⎿ Read 3 lines\n"
                   '● Grep("todo")\n  ⎿ x.py:1: todo\n'
                   "✓ allowed once: Bash(rm x)\n"
                   "● Bash(rm x)\n  ⎿ (no output)\n")
    assert screen.renderer.running_calls() == []
    assert all(out.count(f"● {label}") == 1 for label in ("Read", "Grep", "Bash"))


def test_a_withdrawn_question_leaves_the_call_to_be_closed_by_the_turn() -> None:
    screen = Screen()
    rm = started("t1", "Bash", command="rm x")
    screen(rm, asked(rm, "r1"), ApprovalWithdrawn(request_id="r1"))
    assert screen.renderer.running_calls() == ["● Bash(rm x)"]
    out = screen(turn_finished(StopCause.INTERRUPTED))
    assert out.count("● Bash(rm x)") == 1
    assert "● Bash(rm x)\n  ⎿ Interrupted\n⏹ Interrupted." in out


def test_interrupting_comes_after_the_partial_text() -> None:
    screen = Screen()
    screen(TurnStarted(turn_id=TurnId("t1"), prompt="go"),
           AssistantTextDelta(text="A first paragraph.\n\nAnd a half-writ"))
    assert screen.renderer.live_text() == "And a half-writ"
    screen.renderer.note("Interrupting…")  # what the REPL's Ctrl-C and Esc print
    assert screen.renderer.live_text() == ""
    out = screen(turn_finished(StopCause.INTERRUPTED))
    assert out.startswith("A first paragraph.\n\nAnd a half-writ\nInterrupting…\n"
                          "⏹ Interrupted. Partial output is kept")


def test_interrupting_inside_an_open_code_fence_keeps_the_code_above() -> None:
    screen = Screen()
    screen(AssistantTextDelta(text="```python\nx = 1\n\ny = "))
    screen.renderer.note("Interrupting…")
    lines = screen().splitlines()
    assert lines[-1] == "Interrupting…" and "x = 1" in "\n".join(lines[:-1])


@dataclass
class _Output:
    size: Size

    def get_size(self) -> Size:
        return self.size


@dataclass
class _App:
    """The two things `prompt_message` reads of a prompt-toolkit app."""

    output: _Output = field(default_factory=lambda: _Output(Size(rows=24, columns=40)))
    is_done: bool = False


def message_text(screen: Screen, app: _App) -> str:
    return "".join(text for _, text, *_ in prompt_message(screen.renderer, 0, app))


def test_the_live_area_lists_running_calls_above_the_spinner_each_on_one_row() -> None:
    screen = Screen()
    long = "echo " + "word " * 20
    screen(TurnStarted(turn_id=TurnId("t1"), prompt="go"), started("a", "Bash", command=long),
           started("b", "Read", file_path="/p/a.py"))
    text = message_text(screen, _App())
    lines = text.split("\n")
    assert lines[0].startswith("● Bash(echo word") and lines[0].endswith("…")
    assert lines[1] == "● Read(a.py)"
    assert "running Read" in lines[2] and lines[3] == "› "
    assert all(len(line) < 40 for line in lines)  # nothing wraps (a resize cannot strand it)
    screen(done(started("a", "Bash", command=long), ToolResult.ok("ok")),
           AssistantMessageCompleted(message=Message(role="assistant",
                                                     content=(TextBlock(text=""),)),
                                     usage=Usage(), cost_usd=0.0))
    assert message_text(screen, _App()).split("\n")[0] == "● Read(a.py)"
