"""Golden screens of the renderer: the exact terminal text (issue 9, "Show")."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

from rich.console import Console

from aimon_cli._approval import Selection, approval_choices, question_lines
from aimon_cli.render import Renderer, approval_lines, diff_lines
from aimon_core.agent import (
    AssistantMessageCompleted,
    AssistantTextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from aimon_core.llm import Message, TextBlock, Usage
from aimon_core.permission import ApprovalRequest
from aimon_core.tools import ToolResult
from aimon_core.tools._file_tools import unified_diff


def console(width: int) -> tuple[StringIO, Console]:
    out = StringIO()
    return out, Console(file=out, width=width, force_terminal=False, color_system=None)


def call(renderer: Renderer, tool_use_id: str, command: str, result: ToolResult) -> None:
    renderer(ToolCallStarted(tool_use_id=tool_use_id, name="Bash", input={"command": command}))
    renderer(ToolCallFinished(tool_use_id=tool_use_id, name="Bash",
                              input={"command": command}, result=result, duration_s=0.1))


def test_a_tool_line_and_a_failing_result_folded_to_its_tail() -> None:
    out, screen = console(80)
    renderer = Renderer(screen, project_root=Path("/p"))
    call(renderer, "t1", "echo hi", ToolResult.ok("hi"))
    failed = "\n".join(f"line {n}" for n in range(1, 9)) + "\nError: boom\n\nExit code 2"
    call(renderer, "t2", "make test", ToolResult(content=ToolResult.ok(failed).content,
                                                 is_error=True))
    assert out.getvalue() == (
        "● Bash(echo hi)\n"
        "  ⎿ hi\n"
        "● Bash(make test)\n"
        "  ⎿ … 7 lines above (ctrl+o shows all)\n"
        "    line 8\n"
        "    Error: boom\n"
        "    Exit code 2\n")
    renderer.expand_last()
    assert out.getvalue().endswith("    line 1\n" + "".join(
        f"    line {n}\n" for n in range(2, 9)) + "    Error: boom\n    \n    Exit code 2\n")


def test_a_diff_of_a_file_without_a_final_newline() -> None:
    out, screen = console(80)
    for line in diff_lines(unified_diff(Path("a.txt"), "one\ntwo", "one\nthree"), "a.txt"):
        screen.print(line)
    assert out.getvalue() == (
        "Updated a.txt with 1 addition and 1 removal\n"
        "   1   one\n"
        "   2 - two\n"
        "       \\ No newline at end of file\n"
        "   2 + three\n"
        "       \\ No newline at end of file\n")


REQUEST = ApprovalRequest(
    id="r1", tool_name="Bash", tool_input={"command": "rm -rf build && make"},
    subject_text="rm -rf build && make", reason="rm -rf build is not allowed",
    suggested_rule="Bash(make:*)", agent_rule="Bash(make:*)",
    agent_scope="agent default in /home/user/proj")


def approval_screen(width: int) -> str:
    out, screen = console(width)
    for line in approval_lines(REQUEST, None, Path("/p"), width):
        screen.print(line, no_wrap=True, overflow="ellipsis", crop=True)
    selection = Selection(choices=approval_choices(REQUEST))
    return out.getvalue() + "".join(text for _, text, *_ in question_lines(
        "Allow this Bash call?", selection, armed=True, width=width, keys="o/y/a/n"))


def test_the_approval_prompt_at_120_columns() -> None:
    assert approval_screen(120) == (
        "? Bash(rm -rf build && make) needs your approval\n"
        "  Why: rm -rf build is not allowed\n"
        "❯ 1 o  Yes (and `make *` again this turn)\n"
        "  2 y  Yes, and don't ask again for `make *` in this session\n"
        "  3 a  Yes, and always for `make *`, for agent default in /home/user/proj (new "
        "sessions too; not other projects)\n"
        "  4 n  No, and tell the model why (optional)\n"
        "  Esc  answer later with /approve or /deny · Ctrl-C interrupts the turn\n"
        "? Allow this Bash call? [o/y/a/n] ↑/↓ Enter")


def test_the_approval_prompt_at_50_columns_wraps_between_words() -> None:
    screen = approval_screen(50)
    assert screen == (
        "? Bash(rm -rf build && make) needs your approval\n"
        "  Why: rm -rf build is not allowed\n"
        "❯ 1 o  Yes (and `make *` again this turn)\n"
        "  2 y  Yes, and don't ask again for `make *` in\n"
        "       this session\n"
        "  3 a  Yes, and always for `make *`, for agent\n"
        "       default in /home/user/proj (new sessions\n"
        "       too; not other projects)\n"
        "  4 n  No, and tell the model why (optional)\n"
        "  Esc  answer later with /approve or /deny ·\n"
        "       Ctrl-C interrupts the turn\n"
        "? Allow this Bash call? [o/y/a/n] ↑/↓ Enter")
    assert all(len(line) <= 50 for line in screen.splitlines())


def test_an_ordered_list_split_across_blocks_keeps_its_numbers() -> None:
    out, screen = console(60)
    renderer = Renderer(screen)
    for text in ("Steps:\n\n1. first\n2. second\n\n", "3. third\n\n", "Done"):
        renderer(AssistantTextDelta(text=text))
    assert out.getvalue() == "Steps:\n\n 1 first\n 2 second\n\n 3 third\n"


def test_streamed_text_is_live_until_its_block_completes_then_printed_once() -> None:
    out, screen = console(60)
    renderer = Renderer(screen)
    changes: list[str] = []
    renderer.on_change = lambda: changes.append(renderer.live_text())
    renderer(AssistantTextDelta(text="First para"))
    assert renderer.live_text() == "First para" and out.getvalue() == ""
    renderer(AssistantTextDelta(text="graph.\n\nSecond"))
    assert out.getvalue() == "First paragraph.\n" and renderer.live_text() == "Second"
    assert changes == ["First para", "Second"]


def test_a_list_items_second_paragraph_keeps_its_indent_and_the_numbers_go_on() -> None:
    out, screen = console(50)
    renderer = Renderer(screen)
    text = ("Plan:\n\n1. Read the parser and the tests that cover it first.\n\n"
            "   Then note what each one checks.\n\n    Four spaces in is still the item."
            "\n\n2. Fix it.\n\nDone.\n")
    for at in range(0, len(text), 5):  # streamed in small pieces
        renderer(AssistantTextDelta(text=text[at:at + 5]))
    renderer(AssistantMessageCompleted(message=Message(role="assistant", content=(
        TextBlock(text=text),)), usage=Usage(), cost_usd=0.0))
    assert out.getvalue() == (
        "Plan:\n\n"
        " 1 Read the parser and the tests that cover it\n"
        "   first.\n"
        "   Then note what each one checks.\n"
        "   Four spaces in is still the item.\n\n"
        " 2 Fix it.\n\n"
        "Done.\n")


def test_a_long_rule_in_an_approval_option_wraps_after_a_slash_not_mid_name() -> None:
    path = "/home/user/proj/aimon_core/permission/_matcher_table.py"
    request = ApprovalRequest(
        id="r2", tool_name="Edit", tool_input={"file_path": path}, subject_text=path,
        reason="", suggested_rule="Edit(aimon_core/permission/_matcher_table.py)")
    lines = question_lines("Allow this Edit call?", Selection(choices=approval_choices(
        request)), armed=True, width=50, keys="o/y/n")
    assert "".join(text for _, text, *_ in lines) == (
        "❯ 1 o  Yes (and edits to aimon_core/permission/\n"
        "       _matcher_table.py again this turn)\n"
        "  2 y  Yes, and don't ask again for edits to\n"
        "       aimon_core/permission/_matcher_table.py in\n"
        "       this session\n"
        "  3 n  No, and tell the model why (optional)\n"
        "  Esc  answer later with /approve or /deny ·\n"
        "       Ctrl-C interrupts the turn\n"
        "? Allow this Edit call? [o/y/n] ↑/↓ Enter")
