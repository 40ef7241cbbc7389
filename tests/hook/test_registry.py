"""HookRegistry: matching, programmatic hooks, combining and concurrency of one dispatch."""

from __future__ import annotations

import asyncio
import re
import time

import pytest

from aimon_core.hook import (
    CommandHookSpec,
    Flow,
    HookEvent,
    HookInput,
    HookRegistry,
    HookResult,
    PermissionDecision,
    parse_hooks_config,
)

from .conftest import MakeInput, MakeScript


def dispatch(registry: HookRegistry, hook_input: HookInput) -> HookResult:
    return asyncio.run(registry.dispatch(hook_input.event, hook_input))


def recorder(registry: HookRegistry, event: HookEvent, matcher: str | None,
             name: str) -> list[str]:
    calls: list[str] = []

    async def hook(hook_input: HookInput) -> None:
        calls.append(hook_input.tool_name or hook_input.match_subject() or "-")

    registry.register(event, hook, matcher=matcher, name=name)
    return calls


@pytest.mark.parametrize(
    ("matcher", "runs_for"),
    [
        ("Bash", {"Bash"}),
        ("Edit|Write", {"Edit", "Write"}),
        ("Notebook.*", {"NotebookEdit"}),
        ("mcp__github__.*", {"mcp__github__search"}),
        ("*", {"Bash", "Edit", "Write", "Read", "NotebookEdit", "mcp__github__search"}),
        ("", {"Bash", "Edit", "Write", "Read", "NotebookEdit", "mcp__github__search"}),
        (None, {"Bash", "Edit", "Write", "Read", "NotebookEdit", "mcp__github__search"}),
    ],
)
def test_tool_matchers_select_hooks(
    make_input: MakeInput, matcher: str | None, runs_for: set[str]
) -> None:
    registry = HookRegistry()
    calls = recorder(registry, HookEvent.PRE_TOOL, matcher, "rec")
    for tool in ("Bash", "Edit", "Write", "Read", "NotebookEdit", "mcp__github__search"):
        dispatch(registry, make_input(HookEvent.PRE_TOOL, tool_name=tool, tool_input={}))
    assert set(calls) == runs_for
    assert registry.has_hooks(HookEvent.PRE_TOOL, next(iter(runs_for)))
    assert not registry.has_hooks(HookEvent.POST_TOOL, "Bash")


def test_session_start_matches_on_source_and_other_events_ignore_matchers(
    make_input: MakeInput
) -> None:
    registry = HookRegistry()
    starts = recorder(registry, HookEvent.ON_SESSION_START, "resume|clear", "start")
    prompts = recorder(registry, HookEvent.ON_START, "Bash", "prompt")
    for source in ("startup", "resume", "clear"):
        dispatch(registry, make_input(HookEvent.ON_SESSION_START, source=source))
    dispatch(registry, make_input(HookEvent.ON_START, prompt="hi"))
    assert starts == ["resume", "clear"]
    assert prompts == ["-"]


def test_programmatic_hooks_answer_and_are_named(make_input: MakeInput) -> None:
    registry = HookRegistry()

    async def guard(hook_input: HookInput) -> HookResult | None:
        assert hook_input.tool_input is not None
        if "force" in hook_input.tool_input.get("command", ""):
            return HookResult.deny("no force pushes")
        return None

    async def context(hook_input: HookInput) -> HookResult:
        return HookResult.context("remember the changelog")

    registry.register(HookEvent.PRE_TOOL, guard, matcher="Bash", name="guard")
    registry.register(HookEvent.PRE_TOOL, context)
    result = dispatch(registry, make_input(HookEvent.PRE_TOOL, tool_name="Bash",
                                           tool_input={"command": "git push --force"}))
    assert result.permission is PermissionDecision.DENY
    assert result.feedback == "[guard] no force pushes"
    assert result.additional_context.endswith("context] remember the changelog")
    quiet = dispatch(registry, make_input(HookEvent.PRE_TOOL, tool_name="Bash",
                                          tool_input={"command": "git status"}))
    assert quiet.permission is None


def test_a_broken_callback_becomes_an_error(make_input: MakeInput) -> None:
    registry = HookRegistry()

    async def broken(hook_input: HookInput) -> HookResult:
        raise RuntimeError("boom")

    async def wrong(hook_input: HookInput) -> HookResult:
        return "allow"  # type: ignore[return-value]

    async def fine(hook_input: HookInput) -> HookResult:
        return HookResult.block("keep going")

    registry.register(HookEvent.ON_STOP, broken, name="broken")
    registry.register(HookEvent.ON_STOP, wrong, name="wrong")
    registry.register(HookEvent.ON_STOP, fine, name="fine")
    result = dispatch(registry, make_input(HookEvent.ON_STOP))
    assert result.errors[0] == "hook 'broken' raised RuntimeError: boom"
    assert "returned str" in result.errors[1]
    assert result.flow is Flow.BLOCK
    assert result.feedback == "[fine] keep going"


def test_commands_then_callbacks_are_combined_in_order(
    script: MakeScript, make_input: MakeInput
) -> None:
    first = script("first.sh", "echo 'first' >&2\nexit 2\n")
    second = script("second.sh", "echo 'second' >&2\nexit 2\n")
    registry = HookRegistry(parse_hooks_config({"hooks": {"Stop": [
        {"hooks": [{"command": first}]}, {"hooks": [{"command": second}]},
    ]}}))

    async def third(hook_input: HookInput) -> HookResult:
        return HookResult.block("third")

    registry.register(HookEvent.ON_STOP, third, name="third")
    result = dispatch(registry, make_input(HookEvent.ON_STOP))
    lines = result.feedback.splitlines()
    assert [line.rsplit(" ", 1)[1] for line in lines] == ["first", "second", "third"]


def test_the_same_command_twice_runs_once(
    script: MakeScript, make_input: MakeInput
) -> None:
    command = script("count.sh", "echo ran >&2\nexit 2\n")
    spec = CommandHookSpec(event=HookEvent.ON_STOP, matcher=None, command=command)
    result = dispatch(HookRegistry([spec, spec]), make_input(HookEvent.ON_STOP))
    assert result.feedback.count("ran") == 1


def test_command_hooks_of_one_event_run_concurrently(
    script: MakeScript, make_input: MakeInput
) -> None:
    one = script("slow1.sh", "sleep 1\n")
    two = script("slow2.sh", "sleep 1\n")
    registry = HookRegistry(parse_hooks_config({"hooks": {"PostToolUse": [
        {"matcher": "Bash", "hooks": [{"command": one}, {"command": two}]},
    ]}}))
    started = time.monotonic()
    result = dispatch(registry, make_input(HookEvent.POST_TOOL, tool_name="Bash"))
    elapsed = time.monotonic() - started
    assert result.errors == ()
    assert 1.0 <= elapsed < 1.8


def test_replace_commands_keeps_callbacks(script: MakeScript, make_input: MakeInput) -> None:
    old = CommandHookSpec(event=HookEvent.ON_STOP, matcher=None,
                          command=script("old.sh", "echo old >&2\nexit 2\n"))
    new = CommandHookSpec(event=HookEvent.ON_STOP, matcher=None,
                          command=script("new.sh", "echo new >&2\nexit 2\n"))
    registry = HookRegistry([old])

    async def callback(hook_input: HookInput) -> HookResult:
        return HookResult.block("cb")

    registry.register(HookEvent.ON_STOP, callback, name="cb")
    registry.replace_commands([new])
    assert registry.commands == (new,)
    feedback = dispatch(registry, make_input(HookEvent.ON_STOP)).feedback
    assert "new" in feedback and "cb" in feedback and "old" not in feedback


def test_no_hooks_means_no_answer(make_input: MakeInput) -> None:
    assert dispatch(HookRegistry(), make_input(HookEvent.PRE_TOOL, tool_name="Bash")) == (
        HookResult()
    )


def test_dispatch_checks_the_event_and_register_checks_the_matcher(
    make_input: MakeInput
) -> None:
    registry = HookRegistry()
    with pytest.raises(ValueError, match="hook input is for ON_STOP, not PRE_TOOL"):
        asyncio.run(registry.dispatch(HookEvent.PRE_TOOL, make_input(HookEvent.ON_STOP)))

    async def noop(hook_input: HookInput) -> None:
        return None

    with pytest.raises(re.error):
        registry.register(HookEvent.PRE_TOOL, noop, matcher="Edit(")
