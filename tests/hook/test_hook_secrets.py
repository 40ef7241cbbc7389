"""Hooks run with aimon's whole environment; nothing they answer carries a credential onward.

A generated table: every way a hook's words reach the model or the screen (context, a block's
reason, a denial, a system message, a stop reason, an error, an async hook's failure) by the
credentials of aimon's environment. The registry's answer must hold none of them.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from aimon_core.hook import CommandHookSpec, HookEvent, HookRegistry, HookResult

from .conftest import MakeInput, MakeScript

CREDENTIALS = {
    "PROBE_API_TOKEN": "tok-" + "5e6f7a8b" * 4,
    "DATABASE_URL": "postgres://app:pw-1a2b3c4d5e@db/app",
    "ANTHROPIC_API_KEY": "sk-ant-api03-" + "HookSeesIt" * 3,
}
PRINT_ALL = "; ".join(f"{name}=${{{name}}}" for name in CREDENTIALS)


def json_hook(event: str, **fields: Any) -> str:
    """Return a sh body printing a JSON answer whose string fields hold every credential."""
    answer = json.dumps(fields).replace("@ALL@", PRINT_ALL)
    return f"cat >/dev/null\ncat <<EOF\n{answer}\nEOF\n"


def specific(event: str, **fields: Any) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": event, **fields}}


# (route, event, hook body): each puts the credentials where one kind of answer goes.
ROUTES = {
    "UserPromptSubmit context": (HookEvent.ON_START, json_hook(
        "UserPromptSubmit", **specific("UserPromptSubmit", additionalContext="@ALL@"))),
    "UserPromptSubmit plain stdout": (HookEvent.ON_START,
                                      f"cat >/dev/null\necho \"{PRINT_ALL}\"\n"),
    "UserPromptSubmit block": (HookEvent.ON_START, json_hook(
        "UserPromptSubmit", decision="block", reason="@ALL@")),
    "SessionStart plain stdout": (HookEvent.ON_SESSION_START,
                                  f"cat >/dev/null\necho \"{PRINT_ALL}\"\n"),
    "SessionStart context": (HookEvent.ON_SESSION_START, json_hook(
        "SessionStart", **specific("SessionStart", additionalContext="@ALL@"))),
    "PreToolUse deny": (HookEvent.PRE_TOOL, json_hook("PreToolUse", **specific(
        "PreToolUse", permissionDecision="deny", permissionDecisionReason="@ALL@"))),
    "PreToolUse context": (HookEvent.PRE_TOOL, json_hook(
        "PreToolUse", **specific("PreToolUse", additionalContext="@ALL@"))),
    "PreToolUse exit 2": (HookEvent.PRE_TOOL, f"cat >/dev/null\necho \"{PRINT_ALL}\" >&2\n"
                                              "exit 2\n"),
    "PostToolUse context": (HookEvent.POST_TOOL, json_hook(
        "PostToolUse", **specific("PostToolUse", additionalContext="@ALL@"))),
    "PostToolUse block": (HookEvent.POST_TOOL, json_hook(
        "PostToolUse", decision="block", reason="@ALL@")),
    "Stop block": (HookEvent.ON_STOP, json_hook("Stop", decision="block", reason="@ALL@")),
    "system message": (HookEvent.POST_TOOL, json_hook("PostToolUse", systemMessage="@ALL@")),
    "stop reason": (HookEvent.POST_TOOL, json_hook(
        "PostToolUse", stopReason="@ALL@", **{"continue": False})),
    "error on stderr": (HookEvent.POST_TOOL, f"cat >/dev/null\necho \"{PRINT_ALL}\" >&2\n"
                                             "exit 1\n"),
}
FIELDS = {HookEvent.ON_START: {"prompt": "hi"}, HookEvent.ON_SESSION_START: {"source": "startup"},
          HookEvent.PRE_TOOL: {"tool_name": "Bash", "tool_input": {"command": "ls"}},
          HookEvent.POST_TOOL: {"tool_name": "Bash", "tool_input": {"command": "ls"},
                                "tool_response": {"stdout": "x"}},
          HookEvent.ON_STOP: {"stop_hook_active": False}}


def shown(result: HookResult) -> str:
    """Return every text of an answer that a person or the model may read."""
    return "\n".join((result.feedback, result.additional_context, result.system_message,
                      result.stop_reason, result.source, *result.errors))


@pytest.fixture
def answers(script: MakeScript, make_input: MakeInput,
            monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    found = {}
    for route, (event, body) in ROUTES.items():
        command = script(route.replace(" ", "_") + ".sh", body)
        registry = HookRegistry([CommandHookSpec(event=event, matcher=None, command=command)])
        hook_input = make_input(event, **FIELDS[event])
        found[route] = shown(asyncio.run(registry.dispatch(event, hook_input)))
    return found


@pytest.mark.parametrize("name", list(CREDENTIALS))
@pytest.mark.parametrize("route", list(ROUTES))
def test_no_credential_in_a_hook_s_answer(route: str, name: str,
                                          answers: dict[str, str]) -> None:
    assert f"[REDACTED:{name}]" in answers[route]  # control: the hook did print it
    assert CREDENTIALS[name] not in answers[route]


def test_an_async_hook_s_failure_is_redacted(script: MakeScript, make_input: MakeInput,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    command = script("async.sh", f"cat >/dev/null\necho \"{PRINT_ALL}\" >&2\nexit 1\n")
    registry = HookRegistry([CommandHookSpec(event=HookEvent.POST_TOOL, matcher=None,
                                             command=command, run_async=True)])
    notices: list[str] = []

    async def scenario() -> None:
        await registry.dispatch(HookEvent.POST_TOOL, make_input(
            HookEvent.POST_TOOL, **FIELDS[HookEvent.POST_TOOL]),
            notice=lambda text, level: notices.append(text))
        await registry.drain()

    asyncio.run(scenario())
    assert notices and "[REDACTED:" in notices[0]
    for value in CREDENTIALS.values():
        assert value not in "\n".join(notices)


def test_explicit_secrets_replace_the_environment_s(script: MakeScript,
                                                     make_input: MakeInput) -> None:
    command = script("say.sh", "cat >/dev/null\necho said-abcdefgh-1234\n")
    registry = HookRegistry([CommandHookSpec(event=HookEvent.ON_START, matcher=None,
                                             command=command)],
                            secrets=(("FROM_SETTINGS_TOKEN", "abcdefgh-1234"),))
    result = asyncio.run(registry.dispatch(HookEvent.ON_START,
                                           make_input(HookEvent.ON_START, prompt="x")))
    assert result.additional_context.endswith("said-[REDACTED:FROM_SETTINGS_TOKEN]")
