"""Class 4: a rule that silently means nothing is a hole (RELIABILITY.md 13).

A deny rule with a misspelt tool name (`bash(touch:*)`, `Bsh(touch:*)`) must stop aimon at
start-up (exit 2) with a message naming the file, the rule and "did you mean Bash", before the
model is asked anything; the same typo on the command line too. Rules for tools that exist
only later (`WebFetch`, MCP tools) load quietly; an allow rule for an unknown tool warns.
"""

from __future__ import annotations

import json

import pytest

from ._attempts import (
    Absent,
    Attempt,
    Batch,
    Outcome,
    Workspace,
    bash,
)

# The first test waits for every batch of the suite (see `outcomes`): about 25 s on two idle
# cores, minutes on a crowded machine.
pytestmark = pytest.mark.timeout(600)

TOUCH = Attempt(id="touch", call=bash("touch @M@"), checks=(Absent(),))


def with_settings(name: str, allow: list[str], deny: list[str]) -> Batch:
    """Return a run whose user settings hold these rules; the model then tries `touch`."""
    return Batch(name=name, attempts=(TOUCH,),
                 settings={"permissions": {"allow": allow, "deny": deny}})


TYPO_IN_SETTINGS = {
    "rules_deny_lowercase_bash": ("bash(touch:*)", with_settings(
        "rules_deny_lowercase_bash", ["Bash"], ["bash(touch:*)"])),
    "rules_deny_bsh": ("Bsh(touch:*)", with_settings(
        "rules_deny_bsh", ["Bash"], ["Bsh(touch:*)"])),
}
TYPO_ON_COMMAND_LINE = Batch(name="rules_flag_lowercase_bash", attempts=(TOUCH,), args=(
    "--allowed-tools", "Bash", "--disallowed-tools", "bash(touch:*)"))
# One run: rules for tools that only exist later must load quietly, next to an allow rule for
# a tool that never exists, which must warn.
QUIET = ("WebFetch", "WebFetch(domain:example.com)", "mcp__x__y", "mcp__x")
QUIET_AND_UNKNOWN = with_settings("rules_quiet_and_unknown", ["Frobnicate"], list(QUIET))

BATCHES = (*(batch for _, batch in TYPO_IN_SETTINGS.values()), TYPO_ON_COMMAND_LINE,
           QUIET_AND_UNKNOWN)


def marker(outcome: Outcome) -> bool:
    """Return whether the model's `touch` ran."""
    return bool((outcome.workspace.mark / "touch").exists())


def settings_file(ws: Workspace) -> str:
    return str(ws.home / "config" / "settings.json")


def asked_model(outcome: Outcome) -> bool:
    return bool(json.loads(outcome.bodies))


@pytest.mark.parametrize("name", TYPO_IN_SETTINGS)
def test_typo_in_a_deny_rule_stops_start_up(name: str, outcomes: dict[str, Outcome]) -> None:
    rule, _ = TYPO_IN_SETTINGS[name]
    outcome = outcomes[name]
    err = outcome.stderr
    assert outcome.returncode == 2, outcome.summary()
    assert settings_file(outcome.workspace) in err, err
    assert rule in err, err
    assert "did you mean" in err.lower() and "Bash" in err, err
    assert not asked_model(outcome)
    assert not marker(outcome)


def test_typo_in_a_deny_flag_stops_start_up(outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes[TYPO_ON_COMMAND_LINE.name]
    err = outcome.stderr
    assert outcome.returncode == 2, outcome.summary()
    assert "bash(touch:*)" in err and "--disallowed-tools" in err, err
    assert "did you mean" in err.lower() and "Bash(" in err, err
    assert not asked_model(outcome)
    assert not marker(outcome)


@pytest.mark.parametrize("rule", QUIET)
def test_rules_for_tools_that_come_later_load_quietly(rule: str,
                                                     outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes[QUIET_AND_UNKNOWN.name]
    assert outcome.returncode == 0, outcome.summary()
    assert rule not in outcome.stderr.replace("Frobnicate", ""), outcome.stderr
    assert not marker(outcome)  # no rule allows touch: print mode refuses it


def test_an_allow_rule_for_an_unknown_tool_warns(outcomes: dict[str, Outcome]) -> None:
    outcome = outcomes[QUIET_AND_UNKNOWN.name]
    assert outcome.returncode == 0, outcome.summary()
    assert "Frobnicate" in outcome.stderr, outcome.stderr
    assert settings_file(outcome.workspace) in outcome.stderr, outcome.stderr
