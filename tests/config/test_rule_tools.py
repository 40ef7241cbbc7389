"""Settings fail closed on deny and ask rules naming no known tool; allow rules only warn."""

from __future__ import annotations

from pathlib import Path

import pytest

from aimon_core.config import SettingsError, TrustStore, load_settings

from .conftest import Writer


def test_a_typo_in_a_project_deny_rule_stops_loading(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    path = write("project", {"permissions": {"deny": ["Bash(rm:*)", "bash(touch:*)"]}})
    with pytest.raises(SettingsError) as caught:
        load_settings(project, trust_store=trust_store, trust_all=True)
    assert caught.value.path == path
    assert caught.value.key == "permissions.deny[1]"
    message = str(caught.value)
    assert "'bash(touch:*)'" in message and "did you mean Bash(touch:*)?" in message


def test_unknown_tool_in_an_allow_rule_is_carried_as_a_warning(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    write("user", {"permissions": {"allow": ["Raed(src/**)", "WebSearch", "mcp__x__y"]}})
    loaded = load_settings(project, trust_store=trust_store, trust_all=True)
    assert loaded.settings.permissions.allow == ("Raed(src/**)", "WebSearch", "mcp__x__y")
    assert len(loaded.warnings) == 1
    warning = loaded.warnings[0]
    assert "Raed(src/**)" in warning and "did you mean Read(src/**)?" in warning
