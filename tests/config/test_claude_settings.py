"""Claude Code's settings files: their place in the layering, trust, and keys aimon does not use."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from aimon_core.config import SettingsError, SettingsLayer, TrustStore, load_settings
from aimon_core.hook import HookEvent


def write_json(path: Path, content: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content))
    return path


def claude_user() -> Path:
    return Path(os.environ["CLAUDE_CONFIG_DIR"]) / "settings.json"


@pytest.fixture
def aimon_user() -> Path:
    from aimon_core.session import user_config_dir

    return user_config_dir() / "settings.json"


def test_claude_files_sit_below_aimons_of_the_same_scope(project: Path, trust_store: TrustStore,
                                                         aimon_user: Path) -> None:
    write_json(claude_user(), {"model": "from-claude-user", "permissions": {"deny": ["WebFetch"]}})
    write_json(aimon_user, {"model": "from-aimon-user"})
    write_json(project / ".claude" / "settings.json", {"permissions": {"deny": ["Bash(curl:*)"]}})
    write_json(project / ".claude" / "settings.local.json", {"model": "from-claude-local"})
    loaded = load_settings(project, trust_store=trust_store, trust_all=True)
    assert loaded.settings.model == "from-claude-local"
    assert loaded.origin["model"] is SettingsLayer.CLAUDE_LOCAL
    assert loaded.settings.permissions.deny == ("WebFetch", "Bash(curl:*)")
    write_json(project / ".aimon" / "settings.json", {"model": "from-aimon-project"})
    loaded = load_settings(project, trust_store=trust_store, trust_all=True)
    assert loaded.settings.model == "from-aimon-project"
    assert [s.layer for s in loaded.sources] == [
        SettingsLayer.CLAUDE_USER, SettingsLayer.USER, SettingsLayer.CLAUDE_PROJECT,
        SettingsLayer.CLAUDE_LOCAL, SettingsLayer.PROJECT, SettingsLayer.LOCAL]
    [notice] = loaded.warnings
    assert notice.startswith(f"read Claude Code settings: {claude_user()}, ")
    assert notice.endswith(", .claude/settings.json, .claude/settings.local.json")


def test_a_real_claude_code_file_loads_with_one_notice(project: Path,
                                                       trust_store: TrustStore) -> None:
    write_json(project / ".claude" / "settings.json", {
        "$schema": "https://json.schemastore.org/claude-code-settings.json",
        "statusLine": {"type": "command", "command": "echo hi"},
        "enabledPlugins": {"a@b": True}, "plansDirectory": "plans",
        "extraKnownMarketplaces": {}, "permissions": {"disableBypassPermissionsMode": "disable"},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "guard", "async": False,
                 "statusMessage": "Guarding", "if": "Bash(git *)", "once": True},
                {"type": "prompt", "prompt": "Is this call safe? $ARGUMENTS"}]}],
            "TeammateIdle": [{"hooks": [{"type": "command", "command": "x"}]}],
            "Notification": [{"hooks": [{"type": "command", "command": "notify"}]}],
        },
    })
    loaded = load_settings(project, trust_store=trust_store, trust_all=True)
    assert loaded.warnings == (
        "read Claude Code settings: .claude/settings.json (not used by aimon: statusLine; "
        "enabledPlugins; plansDirectory; extraKnownMarketplaces; "
        "permissions.disableBypassPermissionsMode; hooks.PreToolUse[0].hooks[0].once; "
        "hooks.PreToolUse[0].hooks[1]: 'prompt' hooks are not run by aimon; "
        "hooks.TeammateIdle: aimon has no 'TeammateIdle' event)",)
    specs = loaded.hook_specs()
    assert [(s.event, s.command) for s in specs] == [(HookEvent.PRE_TOOL, "guard"),
                                                     (HookEvent.NOTIFICATION, "notify")]
    guard = specs[0]
    assert (guard.run_async, guard.status_message, guard.condition) == (
        False, "Guarding", "Bash(git *)")


def test_claude_project_hooks_wait_for_trust_and_skipped_hooks_are_not_counted(
        project: Path, trust_store: TrustStore) -> None:
    write_json(project / ".claude" / "settings.json", {"hooks": {
        "Stop": [{"hooks": [{"type": "command", "command": "check"},
                            {"type": "prompt", "prompt": "done?"}]}],
        "Setup": [{"hooks": [{"type": "command", "command": "never"}]}],
    }, "permissions": {"allow": ["Bash"], "deny": ["WebFetch"]}})
    loaded = load_settings(project, trust_store=trust_store)
    assert loaded.pending_trust is not None
    assert loaded.pending_trust.what == ("adds 1 hook (Stop: check)", "allows Bash")
    assert dict(loaded.settings.hooks) == {}
    assert loaded.settings.permissions.allow == ()
    assert loaded.settings.permissions.deny == ("WebFetch",)  # narrowing always applies
    trust_store.trust(project, loaded.pending_trust.items)
    trusted = load_settings(project, trust_store=trust_store)
    assert trusted.pending_trust is None and list(trusted.settings.hooks) == ["Stop"]


@pytest.mark.parametrize(("content", "message"), [
    ({"permissions": {"dney": ["Bash"]}}, "permissions.dney: unknown key; did you mean 'deny'?"),
    ({"permissions": {"deny": ["Bash(:*"]}}, "permissions.deny[0]: invalid rule"),
    ({"hooks": {"Stop": [{"hooks": [{"command": "x", "async": "yes"}]}]}},
     "hooks.Stop[0].hooks[0].async: expected true or false"),
    ({"hooks": {"PreToolUse": [{"hooks": [{"command": "x", "if": "Bash(:*"}]}]}},
     "hooks.PreToolUse[0].hooks[0].if: invalid condition"),
])
def test_values_aimon_uses_are_still_checked_strictly(
        project: Path, trust_store: TrustStore, content: dict[str, Any], message: str) -> None:
    write_json(project / ".claude" / "settings.json", content)
    with pytest.raises(SettingsError) as info:
        load_settings(project, trust_store=trust_store, trust_all=True)
    assert message in str(info.value)
    assert str(info.value).startswith(".claude/settings.json: ")


@pytest.mark.parametrize("file", [".claude/settings.json", ".claude/settings.local.json"])
def test_mcp_servers_in_claude_codes_settings_are_ignored_with_a_warning(
        project: Path, trust_store: TrustStore, file: str) -> None:
    server = {"command": "npx", "args": ["-y", "some-server"]}
    write_json(project / file, {"mcpServers": {"here": server}})
    write_json(project / ".mcp.json", {"mcpServers": {"there": server}})
    loaded = load_settings(project, trust_store=trust_store, trust_all=True)
    assert list(loaded.settings.mcp_servers) == ["there"]
    assert f"{file}: mcpServers: ignored, as Claude Code ignores it here; MCP servers belong " \
           "in .mcp.json" in loaded.warnings


def test_mcp_servers_in_aimons_settings_still_load(project: Path, trust_store: TrustStore
                                                   ) -> None:
    write_json(project / ".aimon" / "settings.json",
               {"mcpServers": {"ours": {"command": "server"}}})
    loaded = load_settings(project, trust_store=trust_store, trust_all=True)
    assert list(loaded.settings.mcp_servers) == ["ours"]
