"""The `hooks` settings section: Claude Code's shape parsed into CommandHookSpecs."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from aimon_core.hook import DEFAULT_TIMEOUT, CommandHookSpec, HookConfigError, HookEvent
from aimon_core.hook import parse_hooks_config as parse


def test_claude_code_settings_parse() -> None:
    settings = {
        "permissions": {"allow": []},
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "check.sh", "timeout": 5},
                    {"type": "command", "command": "log.sh"},
                ]},
                {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "fmt"}]},
            ],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "ctx.sh"}]}],
            "ON_STOP": [{"hooks": [{"command": "done.sh", "timeout": 1.5}]}],
        },
    }
    assert parse(settings, source="proj/settings.json") == (
        CommandHookSpec(event=HookEvent.PRE_TOOL, matcher="Bash", command="check.sh",
                        timeout=5.0, source="proj/settings.json"),
        CommandHookSpec(event=HookEvent.PRE_TOOL, matcher="Bash", command="log.sh",
                        timeout=DEFAULT_TIMEOUT, source="proj/settings.json"),
        CommandHookSpec(event=HookEvent.PRE_TOOL, matcher="Edit|Write", command="fmt",
                        source="proj/settings.json"),
        CommandHookSpec(event=HookEvent.ON_START, matcher=None, command="ctx.sh",
                        source="proj/settings.json"),
        CommandHookSpec(event=HookEvent.ON_STOP, matcher=None, command="done.sh", timeout=1.5,
                        source="proj/settings.json"),
    )


def test_settings_without_hooks_have_none() -> None:
    assert parse({}) == ()
    assert parse({"permissions": {}, "hooks": None}) == ()
    assert parse({"hooks": {}}) == ()


def _error(settings: Any) -> HookConfigError:
    with pytest.raises(HookConfigError) as info:
        parse(settings, source="s.json")
    return info.value


def test_unknown_event_names_the_nearest() -> None:
    error = _error({"hooks": {"PreToolUze": []}})
    assert error.source == "s.json"
    assert error.key == "hooks.PreToolUze"
    assert "did you mean 'PreToolUse'?" in error.reason
    assert str(error).startswith("s.json: hooks.PreToolUze: unknown hook event 'PreToolUze'")


def test_events_outside_the_hooks_key_are_an_error() -> None:
    error = _error({"PreToolUse": [{"hooks": [{"command": "x"}]}]})
    assert error.key == "PreToolUse"
    assert "under a top-level 'hooks' key" in error.reason


def test_claude_code_events_aimon_lacks_are_skipped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        specs = parse({"hooks": {"StopFailure": [{"hooks": [{"command": "notify"}]}],
                                 "Stop": [{"hooks": [{"command": "done"}]}]}})
    assert [spec.command for spec in specs] == ["done"]
    assert "StopFailure" in caplog.text


@pytest.mark.parametrize(
    ("hooks", "key", "reason"),
    [
        ([], "hooks", "expected an object, got list"),
        ({"Stop": {"hooks": []}}, "hooks.Stop", "expected a list of {matcher, hooks} objects"),
        ({"Stop": ["x"]}, "hooks.Stop[0]", "expected an object, got str"),
        ({"Stop": [{"matcher": 3, "hooks": []}]}, "hooks.Stop[0].matcher", "expected a string"),
        ({"Stop": [{"matcher": "Bash"}]}, "hooks.Stop[0].hooks", "expected a list of hooks"),
        ({"Stop": [{"hooks": ["echo"]}]}, "hooks.Stop[0].hooks[0]", "expected an object"),
        ({"Stop": [{"hooks": [{"type": "command"}]}]}, "hooks.Stop[0].hooks[0].command",
         "missing: a command hook needs a shell command"),
        ({"Stop": [{"hooks": [{"command": "  "}]}]}, "hooks.Stop[0].hooks[0].command",
         "the command is empty"),
        ({"Stop": [{"hooks": [{"command": ["ls"]}]}]}, "hooks.Stop[0].hooks[0].command",
         "expected a string, got list"),
        ({"Stop": [{"hooks": [{"command": "x", "timeout": "60"}]}]},
         "hooks.Stop[0].hooks[0].timeout", "expected a number of seconds, got str"),
        ({"Stop": [{"hooks": [{"command": "x", "timeout": 0}]}]},
         "hooks.Stop[0].hooks[0].timeout", "must be a positive number"),
        ({"Stop": [{"hooks": [{"command": "x", "timeout": True}]}]},
         "hooks.Stop[0].hooks[0].timeout", "expected a number of seconds, got bool"),
        ({"Stop": [{"hooks": [{"type": "prompt", "prompt": "ok?"}]}]},
         "hooks.Stop[0].hooks[0].type", "unknown hook type 'prompt'; only 'command'"),
        ({"PreToolUse": [{"matcher": "Edit(", "hooks": []}]}, "hooks.PreToolUse[0].matcher",
         "invalid regular expression 'Edit('"),
    ],
)
def test_malformed_settings_say_where_and_why(hooks: Any, key: str, reason: str) -> None:
    error = _error({"hooks": hooks})
    assert error.key == key
    assert reason in error.reason
