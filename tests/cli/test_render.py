"""The renderer: exact text of what each event prints (no colour, 80 columns)."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

from rich.console import Console

from aimon_cli.render import Renderer, split_complete, tool_label
from aimon_core.agent import (
    INTERRUPTED_RESULT,
    AssistantMessageCompleted,
    AssistantTextDelta,
    AssistantThinkingDelta,
    ExecutionResult,
    ModelRetrying,
    ModelStreamRestarted,
    StopCause,
    ToolCallFinished,
    ToolCallStarted,
)
from aimon_core.live import LiveSessionEvent, TurnFinished, TurnId, TurnQueued, TurnStarted
from aimon_core.llm import Message, TextBlock, ToolResultBlock, ToolUseBlock, Usage
from aimon_core.session import SessionTotals
from aimon_core.tools import FileChange, FileRead, TodoItem, TodoList, ToolResult

SESSION = "20261129-201500-ab12cd"
ROOT = Path("/work/proj")


class Screen:
    """A renderer printing to a string, and what it printed so far."""

    def __init__(self) -> None:
        self.file = StringIO()
        console = Console(file=self.file, width=80, force_terminal=False, color_system=None)
        self.renderer = Renderer(console, session_id=SESSION, project_root=ROOT)
        self._seen = 0

    def __call__(self, *events: LiveSessionEvent) -> str:
        """Render events; return the text they added (trailing spaces dropped)."""
        for event in events:
            self.renderer(event)
        text = self.file.getvalue()
        new, self._seen = text[self._seen:], len(text)
        return "\n".join(line.rstrip() for line in new.split("\n"))


def completed(text: str = "") -> AssistantMessageCompleted:
    return AssistantMessageCompleted(
        message=Message(role="assistant", content=(TextBlock(text=text),)),
        usage=Usage(input_tokens=1, output_tokens=1), cost_usd=0.0)


def result(stop: StopCause = StopCause.ANSWERED, reason: str = "answered",
           usage: Usage | None = None, cost: float = 0.0) -> ExecutionResult:
    return ExecutionResult(stop=stop, reason=reason, text="", new_messages=(),
                           usage=usage or Usage(), cost_usd=cost, iterations=1, tool_calls=0,
                           duration_s=1.0)


def finished(stop: StopCause = StopCause.ANSWERED, reason: str = "answered",
             **kwargs: Any) -> TurnFinished:
    return TurnFinished(turn_id=TurnId("t1"), result=result(stop, reason, **kwargs),
                        totals=SessionTotals())


def call(name: str, tool_input: dict[str, Any], res: ToolResult | None = None,
         tool_id: str = "t1") -> list[LiveSessionEvent]:
    events: list[LiveSessionEvent] = [
        ToolCallStarted(tool_use_id=tool_id, name=name, input=tool_input)]
    if res is not None:
        events.append(ToolCallFinished(tool_use_id=tool_id, name=name, input=tool_input,
                                       result=res, duration_s=0.1))
    return events


def test_streamed_markdown_prints_each_block_when_it_is_complete() -> None:
    screen = Screen()
    assert screen(AssistantTextDelta(text="Hello **wor")) == ""
    assert screen(AssistantTextDelta(text="ld**.\n\nSecond")) == "Hello world.\n"
    assert screen(AssistantTextDelta(text=" paragraph.")) == ""
    assert screen(completed()) == "\nSecond paragraph.\n"


def test_a_blank_line_inside_a_code_fence_does_not_end_the_block() -> None:
    screen = Screen()
    assert screen(AssistantTextDelta(text="```python\nx = 1\n\n")) == ""
    out = screen(AssistantTextDelta(text="y = 2\n```\nafter"))
    assert out == " x = 1\n\n y = 2\n"
    assert screen(completed()) == "\nafter\n"


def test_split_complete_keeps_unfinished_lines_and_open_fences() -> None:
    assert split_complete("a\n\nb") == ("a\n\n", "b")
    assert split_complete("a\n\n```\ncode\n\nmore") == ("a\n\n", "```\ncode\n\nmore")
    assert split_complete("~~~~\nx\n~~~\n~~~~\nrest") == ("~~~~\nx\n~~~\n~~~~\n", "rest")
    assert split_complete("no newline yet") == ("", "no newline yet")


def test_headings_are_flush_left() -> None:
    assert Screen()(AssistantTextDelta(text="# Plan\n\n")) == "Plan\n"


def test_tool_call_lines_show_the_key_argument() -> None:
    assert tool_label("Read", {"file_path": "/work/proj/calc.py"}, ROOT) == "Read(calc.py)"
    assert tool_label("Read", {"file_path": "/etc/hosts"}, ROOT) == "Read(/etc/hosts)"
    assert tool_label("Bash", {"command": "python3 -m pytest -q"}) == "Bash(python3 -m pytest -q)"
    assert tool_label("Grep", {"pattern": "def add", "path": "/work/proj/src"},
                      ROOT) == 'Grep("def add" in src)'
    assert tool_label("Glob", {"pattern": "**/*.py"}) == "Glob(**/*.py)"
    assert tool_label("TodoWrite", {"todos": [{}, {}]}) == "TodoWrite(2 items)"
    long = tool_label("Bash", {"command": "echo " + "x" * 200})
    assert len(long) == len("Bash()") + 80 and long.endswith("…)")
    screen = Screen()  # a running call shows in the live area; its header prints with its result
    assert screen(*call("Bash", {"command": "python3 -m pytest -q"})) == ""
    assert screen.renderer.running_calls() == ["● Bash(python3 -m pytest -q)"]


def test_results_are_folded_to_a_few_lines() -> None:
    screen = Screen()
    many = "\n".join(f"line {n}" for n in range(1, 11))
    out = screen(*call("Bash", {"command": "seq"}, ToolResult.ok(many)))
    assert out == ("● Bash(seq)\n"
                   "  ⎿ line 1\n"
                   "    line 2\n"
                   "    line 3\n"
                   "    … 7 more lines (ctrl+o shows all)\n")
    out = screen(*call("Bash", {"command": "true"}, ToolResult.ok("(no output)"), "t2"))
    assert out == "● Bash(true)\n  ⎿ (no output)\n"
    read = ToolResult.ok("…", detail=FileRead(path="/work/proj/calc.py", first_line=1,
                                              last_line=42, total_lines=42))
    assert screen(*call("Read", {"file_path": "/work/proj/calc.py"}, read, "t3")) == \
        "● Read(calc.py)\n  ⎿ Read 42 lines\n"


def test_errors_are_shown_as_the_result() -> None:
    out = Screen()(*call("Edit", {"file_path": "/work/proj/x.py"},
                         ToolResult.error("Permission to use Edit was denied.")))
    assert out == "● Edit(x.py)\n  ⎿ Permission to use Edit was denied.\n"


def test_an_edit_is_shown_as_a_numbered_diff() -> None:
    diff = ("--- a/calc.py\n+++ b/calc.py\n@@ -1,3 +1,3 @@\n def add(a, b):\n"
            "-    return a - b\n+    return a + b\n \n")
    edit = ToolResult.ok("Edited.", detail=FileChange(path="/work/proj/calc.py", diff=diff))
    out = Screen()(*call("Edit", {"file_path": "/work/proj/calc.py"}, edit))
    assert out == ("● Edit(calc.py)\n"
                   "  ⎿ Updated calc.py with 1 addition and 1 removal\n"
                   "       1   def add(a, b):\n"
                   "       2 -     return a - b\n"
                   "       2 +     return a + b\n"
                   "       3\n")


def test_a_long_diff_is_capped() -> None:
    body = "".join(f"+line {n}\n" for n in range(1, 31))
    diff = f"--- /dev/null\n+++ b/new.py\n@@ -0,0 +1,30 @@\n{body}"
    write = ToolResult.ok("Created.", detail=FileChange(path="/work/proj/new.py", diff=diff,
                                                        created=True))
    out = Screen()(*call("Write", {"file_path": "/work/proj/new.py"}, write)).splitlines()
    assert out[:3] == ["● Write(new.py)", "  ⎿ Created new.py (30 lines)", "       1 + line 1"]
    assert out[-2:] == ["      20 + line 20", "    … 10 more lines"]


def test_todo_list_is_a_checklist() -> None:
    todos = [{"content": "Read the code", "status": "completed", "activeForm": "Reading"},
             {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing"},
             {"content": "Run the tests", "status": "pending", "activeForm": "Running"}]
    out = Screen()(*call("TodoWrite", {"todos": todos}, ToolResult.ok("ok", detail=TodoList(
        items=tuple(TodoItem(content=t["content"], status=t["status"]) for t in todos)))))
    assert out == ("● TodoWrite(3 items)\n"
                   "  ⎿ ☑ Read the code\n"
                   "    ◐ Fix the bug\n"
                   "    ☐ Run the tests\n")


def test_status_line_after_a_turn() -> None:
    usage = Usage(input_tokens=200, output_tokens=340, cache_read_tokens=1000)
    out = Screen()(AssistantTextDelta(text="Done."), finished(usage=usage, cost=0.0042))
    assert out == f"Done.\n─ 1.2k in · 340 out · $0.0042 · session {SESSION}\n"


def test_an_interrupted_turn_closes_its_tool_calls_and_says_so() -> None:
    screen = Screen()
    screen(AssistantTextDelta(text="Running it."), completed())
    screen(*call("Bash", {"command": "sleep 30"}))
    out = screen(finished(StopCause.INTERRUPTED, "interrupted by the user"))
    assert out == ("● Bash(sleep 30)\n"
                   "  ⎿ Interrupted\n"
                   "⏹ Interrupted. Partial output is kept; say what to do next.\n"
                   f"─ 0 in · 0 out · $0.0000 · session {SESSION}\n")


def test_partial_text_is_flushed_when_a_turn_is_interrupted() -> None:
    screen = Screen()
    out = screen(AssistantTextDelta(text="Half an ans"),
                 finished(StopCause.INTERRUPTED, "interrupted by the user"))
    assert out.splitlines()[:2] == ["Half an ans", "⏹ Interrupted. Partial output is kept; "
                                                   "say what to do next."]


def test_stop_reasons_other_than_an_answer() -> None:
    screen = Screen()
    out = screen(finished(StopCause.ITERATION_LIMIT, "stopped: reached the iteration limit (7)"))
    assert out.splitlines()[0] == ("⚠ Stopped: reached the iteration limit (7); raise it with "
                                   "/budget iterations N.")
    out = screen(finished(StopCause.MODEL_ERROR, "401 invalid x-api-key"))
    assert out.splitlines()[0] == "✗ Model error: 401 invalid x-api-key"


def test_a_restarted_stream_discards_unprinted_text() -> None:
    screen = Screen()
    screen(AssistantTextDelta(text="Done para.\n\nhalf of the"))
    out = screen(ModelStreamRestarted(attempt=2, reason="connection reset"),
                 AssistantTextDelta(text="Fresh."), completed())
    assert out == ("↻ The answer stream broke (connection reset); the model starts its answer "
                   "again.\n\nFresh.\n")


def test_retries_and_thinking_are_short_lines() -> None:
    screen = Screen()
    out = screen(ModelRetrying(attempt=2, delay=1.5, reason="rate limited (429)"))
    assert out == "↻ rate limited (429); retrying in 1.5 s (attempt 2)\n"
    out = screen(AssistantThinkingDelta(text="Let me think " + "a" * 300),
                 AssistantTextDelta(text="Answer."), completed())
    first, rest = out.split("\n", 1)
    assert first.startswith("✻ Let me think aaa") and first.endswith("…")
    assert len(first) == 80 and rest == "Answer.\n"


def test_queued_prompts_wait_in_the_live_area_and_are_echoed_where_they_run() -> None:
    screen = Screen()
    screen(TurnStarted(turn_id=TurnId("t1"), prompt="first"), AssistantTextDelta(text="Half a wo"))
    out = screen(TurnQueued(turn_id=TurnId("t2"), prompt="and then\nmore", position=1))
    assert out == ""  # nothing printed into the answer that streams
    assert screen.renderer.live_text() == "Half a wo"
    assert screen.renderer.live_rows() == [("class:activity",
                                            "⧗ queued: and then (+1 line)")]
    assert screen.renderer.activity.queued == 1
    out = screen(completed("Half a word."), TurnStarted(turn_id=TurnId("t2"),
                                                        prompt="and then\nmore"))
    assert out == "Half a wo\n› and then\nmore\n"
    assert screen.renderer.activity.busy and screen.renderer.activity.queued == 0
    assert screen(TurnStarted(turn_id=TurnId("t3"), prompt="typed")) == ""


def test_replay_shows_prompts_calls_answers_and_turns_without_an_answer() -> None:
    screen = Screen()
    use = ToolUseBlock(id="u1", name="Bash", input={"command": "for i in 1 2 3; do sleep 1; done"})
    messages = [Message.user("old question"),
                Message(role="assistant", content=(TextBlock(text="Old answer."),)),
                Message.user("write A"),
                Message(role="assistant", content=(TextBlock(text="ok"),)),
                Message.user("count"),
                Message(role="assistant", content=(use,)),
                Message(role="user", content=(ToolResultBlock(
                    tool_use_id="u1", content=(TextBlock(text=INTERRUPTED_RESULT),),
                    is_error=True),)),
                Message.user("count again"),
                Message(role="assistant", content=(TextBlock(text="Counted."),))]
    screen.renderer.replay(messages, prompts=3)
    assert screen() == (
        f"Resumed session {SESSION} (9 messages); the last 3 prompts:\n"
        "› write A\n"
        "ok\n"
        "› count\n"
        "✗ Bash(for i in 1 2 3; do sleep 1; done)\n"
        f"  ⎿ {INTERRUPTED_RESULT}\n"
        "⚠ No answer: the turn was interrupted or stopped by a limit.\n"
        "› count again\n"
        "Counted.\n")


def test_replay_shows_a_shell_command_with_its_output_and_wants_no_answer() -> None:
    from aimon_core.live._shell import shell_record

    screen = Screen()
    messages = [shell_record("ls", "calc.py\nnotes.md\n"),
                shell_record("sleep 9", "tick\n", interrupted=True),
                Message.user("what is there?"),
                Message(role="assistant", content=(TextBlock(text="Two files."),))]
    screen.renderer.replay(messages, prompts=3)
    assert screen() == (
        f"Resumed session {SESSION} (4 messages); the last 3 prompts:\n"
        "› !ls\n"
        "● Bash(ls)\n"
        "  ⎿ calc.py\n"
        "    notes.md\n"
        "› !sleep 9\n"
        "✗ Bash(sleep 9)\n"
        "  ⎿ tick\n"
        "    (interrupted by the user)\n"
        "› what is there?\n"
        "Two files.\n")


def test_a_shell_command_needs_no_stop_line_its_call_tells_how_it_went() -> None:
    from aimon_cli._lines import stop_line

    assert stop_line(result(StopCause.COMMAND, "!ls")) is None
    assert stop_line(result(StopCause.COMMAND_FAILED, "!false failed")) is None


def test_replay_looks_at_the_end_only_and_finds_what_a_whole_walk_finds() -> None:
    import random

    from aimon_cli._replay import is_prompt, last_prompts

    def reference(messages: list[Message], count: int) -> list[Message]:
        starts = [i for i, m in enumerate(messages) if is_prompt(m)]
        return messages[starts[-count]:] if len(starts) >= count else messages

    rng = random.Random(3)
    kinds = [Message.user("q"), Message(role="assistant", content=(TextBlock(text="a"),)),
             Message(role="user", content=(ToolResultBlock(
                 tool_use_id="x", content=(TextBlock(text="out"),)),))]
    for _ in range(3000):
        messages = [rng.choice(kinds) for _ in range(rng.randrange(0, 30))]
        count = rng.randrange(1, 6)
        assert list(last_prompts(messages, count)) == reference(messages, count)
