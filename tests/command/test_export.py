"""/export's walk of a transcript, and /copy's last answer."""

from __future__ import annotations

from aimon_core.command._export import (
    Called,
    Said,
    _fenced,
    conversation,
    last_answer,
    shell_call,
)
from aimon_core.live._shell import shell_record
from aimon_core.llm import Message, TextBlock, ToolResultBlock, ToolUseBlock

TRANSCRIPT = (
    Message(role="user", content=(TextBlock(text="fix the test"),
                                  TextBlock(text="<attached file the model reads>"))),
    Message(role="assistant", content=(
        TextBlock(text="Running it."),
        ToolUseBlock(id="t1", name="Bash", input={"command": "pytest"}),
        ToolUseBlock(id="t2", name="Read", input={"file_path": "a.py"}))),
    Message(role="user", content=(
        ToolResultBlock(tool_use_id="t1", content=(TextBlock(text="1 failed"),), is_error=True),)),
    Message(role="assistant", content=(TextBlock(text="Fixed."),)),
    Message(role="assistant", content=(ToolUseBlock(id="t3", name="Read", input={}),)),
)


def test_the_conversation_is_prompts_answers_and_calls_with_their_results() -> None:
    assert list(conversation(TRANSCRIPT)) == [
        Said(text="fix the test", by_user=True),
        Said(text="Running it.", by_user=False),
        Called(name="Bash", input={"command": "pytest"}, result="1 failed", is_error=True,
               answered=True),
        Called(name="Read", input={"file_path": "a.py"}, result="", is_error=False,
               answered=False),
        Said(text="Fixed.", by_user=False),
        Called(name="Read", input={}, result="", is_error=False, answered=False),
    ]


def test_the_last_answer_is_the_last_assistant_text() -> None:
    assert last_answer(TRANSCRIPT) == "Fixed."
    assert last_answer(()) == ""


def test_a_long_result_is_cut_and_a_fence_inside_it_gets_a_longer_one() -> None:
    fenced = _fenced("\n".join(f"line {n}" for n in range(30)))
    assert fenced[0] == "```" and fenced[-2] == "… 10 more lines" and len(fenced) == 23
    assert _fenced("```py\nx\n```")[0] == "````"


def test_a_shell_command_reads_as_the_bash_call_it_ran() -> None:
    record = shell_record("ls", "a.py\nb.py\n").text
    assert shell_call(record) == Called(name="Bash", input={"command": "ls"},
                                        result="a.py\nb.py", is_error=False, answered=True)
    cut = shell_call(shell_record("sleep 9", "tick\n", interrupted=True).text)
    assert cut is not None and cut.is_error and cut.result == "tick\n\n(interrupted by the user)"
    assert shell_call("fix the test") is None
