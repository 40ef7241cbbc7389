""""Did you mean": commands that change permissions are offered only for near-exact typos."""

from __future__ import annotations

import pytest

from aimon_core.command import CommandOutcome, CommandRegistry, SlashCommand, default_registry
from aimon_core.command._registry import near_exact


async def _nothing(args: str, host: object) -> CommandOutcome:
    return CommandOutcome()


@pytest.mark.parametrize("typed", [
    "review", "revert", "revolve", "revision", "approach", "apple", "deploy", "dent", "model",
    "modes", "truth", "trash", "permit", "pend", "mod",
])
def test_unrelated_words_never_suggest_a_permission_command(typed: str) -> None:
    registry = default_registry()
    registry.register(SlashCommand(name="deploy-docs", description="x", run=_nothing))
    suggested = registry.suggest(typed)
    command = registry.get(suggested) if suggested else None
    if typed == "mod":  # a three-letter prefix is near-exact
        assert suggested == "mode"
    else:
        assert command is None or not command.changes_permissions, (typed, suggested)


@pytest.mark.parametrize(("typed", "expected"), [
    ("revoek", "revoke"),     # neighbours swapped
    ("rvoke", "revoke"),      # one letter missing
    ("revokee", "revoke"),    # one letter extra
    ("revike", "revoke"),     # one letter wrong
    ("rev", "revoke"),        # a prefix of three letters or more
    ("aprove", "approve"),
    ("appr", "approve"),
    ("trsut", "trust"),
    ("den", "deny"),
    ("permisions", "permissions"),  # /permissions only shows: ordinary suggestions apply
])
def test_near_exact_typos_still_find_permission_commands(typed: str, expected: str) -> None:
    assert default_registry().suggest(typed) == expected


def test_short_permission_names_need_a_prefix_not_a_slip() -> None:
    # "deny" and "mode" have four letters: one slip of a short name is too likely a word.
    registry = default_registry()
    assert registry.suggest("dney") != "deny"
    assert registry.suggest("mdoe") != "mode"


def test_ordinary_commands_keep_their_suggestions() -> None:
    registry = default_registry()
    assert registry.suggest("stauts") == "status"
    assert registry.suggest("stat") == "status"
    assert registry.suggest("quti") == "exit"
    assert registry.suggest("budgte") == "budget"
    assert registry.suggest("sesions") == "sessions"
    assert registry.suggest("xyzzy") is None
    assert registry.unknown_message("review") == \
        "Unknown command /review. Type /help to see the commands."


def test_a_custom_command_still_wins_over_a_permission_command() -> None:
    registry = default_registry()
    registry.register(SlashCommand(name="reviewer", description="x", run=_nothing))
    assert registry.suggest("review") == "reviewer"
    assert registry.suggest("reveiw") == "reviewer"


def test_permission_flag_is_on_exactly_the_commands_that_change_permissions() -> None:
    flagged = {c.name for c in default_registry().system() if c.changes_permissions}
    assert flagged == {"approve", "deny", "mode", "revoke", "trust"}


@pytest.mark.parametrize(("typed", "name", "near"), [
    ("revoke", "revoke", False), ("re", "revoke", False), ("rev", "revoke", True),
    ("revoek", "revoke", True), ("erovke", "revoke", False), ("review", "revoke", False),
    ("trsut", "trust", True), ("trus", "trust", True), ("tust", "trust", True),
    ("mdoe", "mode", False), ("mod", "mode", True), ("xrevoke", "revoke", True),
    ("revokexx", "revoke", False),
])
def test_near_exact(typed: str, name: str, near: bool) -> None:
    assert near_exact(typed, name) is near


def test_a_custom_registry_can_flag_its_own_commands() -> None:
    registry = CommandRegistry([
        SlashCommand(name="unlock", description="x", run=_nothing, changes_permissions=True),
        SlashCommand(name="unload", description="x", run=_nothing),
    ])
    assert registry.suggest("unlick") is None or registry.suggest("unlick") == "unlock"
    assert registry.suggest("unlok") == "unlock"
    assert registry.suggest("unloc") == "unlock"  # a prefix
    assert registry.suggest("unlockk") == "unlock"
