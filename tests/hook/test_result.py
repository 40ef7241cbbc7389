"""Combining hook answers, the feedback reminder, and matchers."""

from __future__ import annotations

import pytest

from aimon_core.hook import (
    Flow,
    HookResult,
    PermissionDecision,
    combine,
    feedback_reminder,
    matcher_accepts,
)

ALLOW, ASK, DENY = PermissionDecision.ALLOW, PermissionDecision.ASK, PermissionDecision.DENY


@pytest.mark.parametrize(
    ("decisions", "expected"),
    [
        ([], None),
        ([None, None], None),
        ([ALLOW, None], ALLOW),
        ([ALLOW, ASK], ASK),
        ([ASK, ALLOW], ASK),
        ([DENY, ALLOW, ASK], DENY),
        ([ALLOW, ASK, DENY], DENY),
    ],
)
def test_deny_beats_ask_beats_allow(
    decisions: list[PermissionDecision | None], expected: PermissionDecision | None
) -> None:
    assert combine(HookResult(permission=d) for d in decisions).permission is expected


def test_stop_beats_block_beats_continue() -> None:
    assert combine([HookResult(), HookResult(flow=Flow.BLOCK)]).flow is Flow.BLOCK
    assert combine([HookResult(flow=Flow.STOP), HookResult(flow=Flow.BLOCK)]).flow is Flow.STOP
    assert combine([HookResult(), HookResult()]).flow is Flow.CONTINUE


def test_texts_are_joined_with_hook_names_and_errors_kept_in_order() -> None:
    combined = combine([
        HookResult(feedback="no rm", additional_context="ctx a", errors=("e1",), source="a"),
        HookResult(feedback="", system_message="hello", errors=("e2", "e3"), source="b"),
        HookResult(feedback="tests fail", additional_context="ctx c", source="c"),
    ])
    assert combined.feedback == "[a] no rm\n[c] tests fail"
    assert combined.additional_context == "[a] ctx a\n[c] ctx c"
    assert combined.system_message == "[b] hello"
    assert combined.errors == ("e1", "e2", "e3")
    assert combined.source == "a, b, c"


def test_the_last_updated_input_wins() -> None:
    combined = combine([HookResult(updated_input={"a": 1}), HookResult(),
                        HookResult(updated_input={"a": 2})])
    assert combined.updated_input == {"a": 2}


def test_shorthands() -> None:
    assert HookResult.deny("no").denied and HookResult.deny("no").feedback == "no"
    assert HookResult.block("why").blocked
    assert HookResult.allow().permission is ALLOW
    assert HookResult.ask("check").permission is ASK
    assert HookResult.context("x").additional_context == "x"
    assert HookResult(flow=Flow.STOP).stopped


def test_feedback_reminder() -> None:
    assert feedback_reminder("  tests failed \n") == (
        "<system-reminder>\ntests failed\n</system-reminder>"
    )
    assert feedback_reminder("  ") == ""


@pytest.mark.parametrize(
    ("matcher", "subject", "expected"),
    [
        (None, "Bash", True),
        ("", "Bash", True),
        ("*", "Bash", True),
        ("Bash", "Bash", True),
        ("Bash", "BashOutput", False),  # a plain name is exact
        ("bash", "Bash", False),  # case-sensitive
        ("Edit|Write", "Write", True),
        ("Edit|Write", "Edit", True),
        ("Edit|Write", "Read", False),
        ("Edit|Write|Notebook.*", "NotebookEdit", True),
        ("Edit|Write|Notebook.*", "Read", False),
        ("mcp__memory__.*", "mcp__memory__create_entities", True),
        ("mcp__memory__.*", "mcp__github__search", False),
        ("mcp__.*__write.*", "mcp__fs__write_file", True),
        ("^Read$", "Read", True),
        ("Bash", None, True),  # events without a subject run every hook
        ("startup|resume", "resume", True),
        ("startup", "clear", False),
    ],
)
def test_matchers(matcher: str | None, subject: str | None, expected: bool) -> None:
    assert matcher_accepts(matcher, subject) is expected
