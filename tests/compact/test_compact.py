"""Planning the cut, the summary call, the rebuilt transcript, the report and the fallback."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from typing import Any

import pytest

from aimon_core.compact import (
    SUMMARY_PREAMBLE,
    CompactionSettings,
    compact,
    failure_advice,
    fallback,
    is_cut_point,
    messages_tokens,
    plan_compaction,
    shed_tool_results,
)
from aimon_core.llm import (
    LLMOverloadedError,
    LLMRequest,
    LLMResponse,
    Message,
    ScriptedLLMClient,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    reply,
    script,
)

_ids = itertools.count(1)


def prompt(text: str) -> Message:
    return Message.user(text)


def answer(text: str) -> Message:
    return Message(role="assistant", content=(TextBlock(text=text),))


def exchange(*calls: tuple[str, dict[str, Any], str]) -> tuple[Message, Message]:
    """An assistant message with tool calls and the user message with their results."""
    ids = [f"toolu_{next(_ids):04d}" for _ in calls]
    pairs = list(zip(ids, calls, strict=True))
    uses = tuple(ToolUseBlock(id=i, name=n, input=a) for i, (n, a, _) in pairs)
    results = tuple(
        ToolResultBlock(tool_use_id=i, content=(TextBlock(text=out),))
        for i, (_, _, out) in pairs
    )
    return (
        Message(role="assistant", content=(TextBlock(text="Let me look."), *uses)),
        Message(role="user", content=results),
    )


def read(path: str, body: str) -> tuple[Message, Message]:
    return exchange(("Read", {"file_path": path}, body))


def long_session(turns: int, *, reads: int = 3, size: int = 2_000) -> list[Message]:
    """`turns` turns, each a prompt, `reads` Read exchanges of `size` characters, an answer."""
    messages: list[Message] = []
    for turn in range(turns):
        messages.append(prompt(f"task {turn}"))
        for n in range(reads):
            messages.extend(read(f"/repo/t{turn}_{n}.py", f"{turn}:{n} " + "x" * size))
        messages.append(answer(f"done {turn}"))
    return messages


def assert_pairs_intact(messages: Sequence[Message]) -> None:
    """Fail unless every tool_use is answered in the next message and every result has a use."""
    for index, message in enumerate(messages):
        results = [b for b in message.content if isinstance(b, ToolResultBlock)]
        if message.role == "user" and results:
            before = messages[index - 1] if index else None
            assert before is not None and before.role == "assistant", f"orphan results at {index}"
            assert [r.tool_use_id for r in results] == [u.id for u in before.tool_uses]
        if message.role == "assistant" and message.tool_uses:
            assert index + 1 < len(messages), "unanswered tool calls at the end"
    for first, second in itertools.pairwise(messages):
        assert first.role != second.role, "roles must alternate"


WINDOW = 40_000
SETTINGS = CompactionSettings(threshold=0.8, keep_recent_share=0.2)


def run_compact(messages: Sequence[Message], client: ScriptedLLMClient, **kw: Any) -> Any:
    kw.setdefault("window", WINDOW)
    kw.setdefault("settings", SETTINGS)
    return asyncio.run(compact(messages, client=client, model="claude-sonnet-5-5", **kw))


# --- the plan ---------------------------------------------------------------------------


def test_the_plan_never_splits_a_tool_call_from_its_result() -> None:
    messages = long_session(6, reads=4)
    for budget in range(0, messages_tokens(messages) + 2_000, 700):
        plan = plan_compaction(messages, keep_recent_tokens=budget)
        assert plan is not None
        assert plan.older and plan.recent
        assert (*plan.older, *plan.recent) == tuple(messages)
        assert_pairs_intact(plan.recent)
        assert_pairs_intact(plan.older[:-1] if plan.older[-1].tool_uses else plan.older)
        assert not plan.older[-1].tool_uses


def test_the_plan_keeps_the_longest_tail_within_the_budget() -> None:
    messages = long_session(4)
    turn = messages_tokens(messages[: len(messages) // 4])
    plan = plan_compaction(messages, keep_recent_tokens=turn + 10)
    assert plan is not None
    assert messages_tokens(plan.recent) <= turn + 10
    assert plan.recent[0] == prompt("task 3")


def test_mid_turn_the_cut_falls_before_an_assistant_message() -> None:
    messages = [prompt("fix it")]
    for n in range(8):
        messages.extend(read(f"/r/{n}.py", "y" * 3_000))
    plan = plan_compaction(messages, keep_recent_tokens=1_600)
    assert plan is not None
    assert plan.recent[0].role == "assistant"
    assert len(plan.recent) == 4
    plan = plan_compaction(messages, keep_recent_tokens=500)
    assert plan is not None
    assert len(plan.recent) == 2  # the newest exchange alone passes the budget: keep it anyway


def test_no_cut_in_a_single_message_or_before_pending_results() -> None:
    assert plan_compaction([prompt("hi")], keep_recent_tokens=0) is None
    use, results = read("/a", "b")
    assert not is_cut_point([prompt("p"), use, results], 2)
    assert is_cut_point([prompt("p"), use, results], 1)


# --- compaction with a summary -----------------------------------------------------------


def test_compaction_replaces_older_messages_with_a_marked_summary() -> None:
    messages = long_session(8)
    client = script(reply("GOAL: refactor", usage=Usage(input_tokens=9_000, output_tokens=400)))
    result = run_compact(messages, client)
    assert not result.failed
    assert result.summary == "GOAL: refactor"
    assert result.usage == Usage(input_tokens=9_000, output_tokens=400)
    first = result.messages[0]
    assert first.role == "user"
    assert first.text.startswith(SUMMARY_PREAMBLE)
    assert "<summary>\nGOAL: refactor\n</summary>" in first.text
    kept = result.messages[1:]
    assert kept == tuple(messages[len(messages) - len(kept):])
    assert_pairs_intact(result.messages)
    assert result.report.tokens_after < result.report.tokens_before


def test_the_summary_request_carries_the_conversation_and_the_instructions() -> None:
    messages = long_session(6)
    client = script(reply("summary"))
    run_compact(messages, client, trigger="manual", instructions="focus on the parser")
    [sent] = client.requests
    assert sent.tools == ()
    assert "working memory of a coding agent" in sent.system
    text = sent.messages[0].text
    assert "<user>\ntask 0\n</user>" in text
    assert '[tool call Read] {"file_path": "/repo/t0_0.py"}' in text
    assert "[tool result] 0:0 xxx" in text
    assert "Open tasks" in text and "todo list" in text
    assert text.rstrip().endswith("Focus and instructions for this summary: focus on the parser")


def test_a_recent_part_that_starts_with_a_prompt_is_merged_into_the_summary_message() -> None:
    messages = long_session(5)
    result = run_compact(messages, script(reply("S")))
    first = result.messages[0]
    summary, task = first.content
    assert isinstance(summary, TextBlock) and summary.text.startswith(SUMMARY_PREAMBLE)
    assert isinstance(task, TextBlock) and task.text.startswith("task ")
    assert result.messages[1:] == tuple(messages[len(messages) - len(result.messages) + 1:])
    assert_pairs_intact(result.messages)


def test_a_mid_turn_compaction_leaves_a_transcript_the_loop_can_continue() -> None:
    messages = [prompt("fix the bug")]
    for n in range(20):
        messages.extend(read(f"/r/{n}.py", "z" * 3_000))
    result = run_compact(messages, script(reply("S")))
    assert result.messages[0].role == "user"
    assert result.messages[1].role == "assistant"
    assert result.messages[-1] == messages[-1]
    assert_pairs_intact(result.messages)


def test_the_latest_todo_list_is_carried_over_verbatim() -> None:
    todos = [{"content": "write tests", "status": "in_progress", "activeForm": "Writing tests"}]
    messages = [prompt("go"), *exchange(("TodoWrite", {"todos": todos}, "ok")),
                *long_session(6)[1:]]
    result = run_compact(messages, script(reply("S")))
    assert '"content": "write tests"' in result.messages[0].text
    assert "The todo list when the conversation was summarised" in result.messages[0].text


def test_manual_compaction_replaces_most_of_even_a_short_conversation() -> None:
    messages = long_session(5, reads=1, size=100)
    result = run_compact(messages, script(reply("S")), trigger="manual")
    assert result.report.trigger == "manual"
    assert result.report.turns >= 4


def test_the_report_counts_turns_results_and_files() -> None:
    messages = [
        prompt("change a and b"),
        *read("/r/a.py", "A"),
        *exchange(("Edit", {"file_path": "/r/a.py", "old_string": "A", "new_string": "B"}, "ok"),
                  ("Grep", {"pattern": "x"}, "none")),
        *read("/r/c.py", "C"),
        answer("done"),
        prompt("now run the tests"),
        *exchange(("Bash", {"command": "pytest"}, "1 passed")),
        answer("all green"),
        prompt("thanks"),
        answer("you are welcome"),
    ]
    result = run_compact(messages, script(reply("S")), trigger="manual",
                         settings=CompactionSettings(keep_recent_share=0.0))
    report = result.report
    assert (report.turns, report.tool_results) == (3, 5)
    assert result.messages[1:] == (answer("you are welcome"),)
    assert report.files_changed == ("/r/a.py",)
    assert report.files_read == ("/r/c.py",)
    assert report.text == (
        f"Conversation compacted ({report.tokens_before:,} → {report.tokens_after:,} tokens). "
        "The summary replaced 3 turns, 5 tool results and the contents of 2 files (1 changed "
        "and 1 read: /r/a.py, /r/c.py); the model no longer sees them verbatim."
    )


# --- failure ------------------------------------------------------------------------------


def big_session() -> list[Message]:
    return long_session(10, reads=3, size=4_000)  # ~30k tokens: past 80 % of WINDOW


def test_a_failed_summary_falls_back_to_shedding_old_tool_results() -> None:
    messages = big_session()
    result = run_compact(messages, script(LLMOverloadedError("overloaded", status=529)))
    assert result.failed
    assert result.report.error is not None and "overloaded" in result.report.error
    assert len(result.messages) == len(messages)
    assert_pairs_intact(result.messages)
    assert result.report.tokens_after <= 0.8 * 0.8 * WINDOW
    assert result.messages[-1] == messages[-1]  # the newest results are untouched
    assert result.report.text.startswith("Conversation not summarised (the summary failed:")


def test_an_empty_summary_is_a_failure_that_still_reports_its_cost() -> None:
    used = Usage(input_tokens=5_000, output_tokens=1)
    result = run_compact(big_session(), script(reply("", usage=used)))
    assert result.failed
    assert result.usage == used


def test_after_repeated_failures_automatic_compaction_makes_no_model_call() -> None:
    client = script()  # any call fails the test
    result = run_compact(big_session(), client, failures=3)
    assert result.failed
    assert client.requests == []
    assert "paused after 3 failed summaries" in (result.report.error or "")
    assert failure_advice(2) is None
    advice = failure_advice(3)
    assert advice is not None and "/compact" in advice and "/clear" in advice


def test_cancellation_propagates_from_the_summary_call() -> None:
    def cancel(_: LLMRequest) -> LLMResponse:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        run_compact(big_session(), script(cancel))


def test_shedding_shortens_before_it_drops_and_keeps_every_pair() -> None:
    messages = big_session()
    total = messages_tokens(messages)
    mild = shed_tool_results(messages, target_tokens=total - 3_000)
    assert mild.shortened > 0 and mild.dropped == 0
    harsh = shed_tool_results(messages, target_tokens=0)
    assert harsh.dropped > 0
    assert_pairs_intact(harsh.messages)
    ids = [b.tool_use_id for m in harsh.messages for b in m.content
           if isinstance(b, ToolResultBlock)]
    assert ids == [u.id for m in messages for u in m.tool_uses]


def test_fallback_alone_is_what_a_blocking_hook_leaves() -> None:
    result = fallback(big_session(), window=WINDOW, error="blocked by a PreCompact hook")
    assert result.failed and result.usage == Usage()
    assert result.report.tokens_after < result.report.tokens_before



def test_a_summary_that_saves_nothing_changes_nothing_and_says_so() -> None:
    messages = [prompt("hi"), answer("hello"), prompt("and?"), answer("ok")]
    longer = "a summary far longer than the conversation it replaces " * 40
    result = run_compact(messages, script(reply(longer)), trigger="manual")
    assert result.messages == tuple(messages)
    report = result.report
    assert report.tokens_after >= report.tokens_before and not report.saved
    assert report.text.startswith("Nothing saved: a summary would be as long as what it "
                                  "replaces (")
    assert report.text.endswith("so the conversation is unchanged.")
    auto = run_compact(messages, script(reply(longer)))  # a turn goes on: tool results shed
    assert auto.failed and "would not have saved anything" in (auto.report.error or "")


def test_a_report_names_only_what_there_was() -> None:
    messages = [prompt("one " * 300), answer("a " * 300), prompt("two " * 300),
                answer("b " * 300), prompt("three"), answer("c")]
    result = run_compact(messages, script(reply("S")), trigger="manual",
                         settings=CompactionSettings(keep_recent_share=0.0))
    assert "The summary replaced 3 turns; the model" in result.report.text
    failed = fallback([prompt("x"), answer("y")], window=WINDOW, error="the summary failed")
    assert failed.report.text.startswith("Conversation not summarised (the summary failed); "
                                         "there was nothing to shorten, so it is unchanged (")
