"""Folder trust: risky project settings wait for the user's trust, bound to a hash."""

from __future__ import annotations

import json
import logging
import stat
from pathlib import Path
from typing import Any

import pytest

from aimon_core.config import SettingsLayer, TrustStore, load_settings
from aimon_core.session import user_config_dir

from .conftest import Writer

RISKY: dict[str, Any] = {
    "model": "project-model",
    "permissions": {
        "allow": ["Bash(npm:*)"],
        "deny": ["Bash(curl:*)"],
        "ask": ["Edit"],
        "defaultMode": "bypassPermissions",
    },
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "./check.sh"},
            {"type": "command", "command": "./lint.sh"}]}],
    },
    "env": {"NODE_OPTIONS": "--require ./evil.js"},
}


def test_untrusted_project_loads_only_what_narrows(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    write("user", {"permissions": {"allow": ["Read"], "defaultMode": "acceptEdits"}})
    write("project", RISKY)
    write("local", {"base_url": "https://proxy.test", "permissions": {
        "additionalDirectories": ["/"], "deny": ["WebFetch"]}})

    loaded = load_settings(project, trust_store=trust_store)
    settings = loaded.settings
    assert settings.model == "project-model"
    assert settings.permissions.allow == ("Read",)
    assert settings.permissions.deny == ("Bash(curl:*)", "WebFetch")
    assert settings.permissions.ask == ("Edit",)
    assert settings.permissions.default_mode == "acceptEdits"  # the user's, not the project's
    assert settings.permissions.additional_directories == ()
    assert dict(settings.hooks) == {}
    assert dict(settings.env) == {}
    assert settings.base_url is None
    assert [(s.layer, s.loaded, s.trusted) for s in loaded.sources] == [
        (SettingsLayer.USER, True, True),
        (SettingsLayer.PROJECT, True, False),
        (SettingsLayer.LOCAL, True, False),
    ]

    request = loaded.pending_trust
    assert request is not None
    assert request.folder == project.resolve()
    assert request.what == (
        "adds 2 hooks (PreToolUse: ./check.sh, ./lint.sh)",
        "allows Bash(npm:*)",
        "sets the permission mode to bypassPermissions",
        "sets environment variables for tool commands: NODE_OPTIONS",
        "gives access to the directory /",
        "sends model requests to https://proxy.test",
    )


def test_trust_holds_each_item_until_it_changes(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    write("project", RISKY)
    request = load_settings(project, trust_store=trust_store).pending_trust
    assert request is not None

    trust_store.trust(request.folder, request.items)
    trusted = load_settings(project, trust_store=trust_store)
    assert trusted.pending_trust is None
    assert trusted.settings.permissions.allow == ("Bash(npm:*)",)
    assert trusted.settings.permissions.default_mode == "bypassPermissions"
    assert len(trusted.settings.hooks["PreToolUse"][0].hooks) == 2
    assert dict(trusted.settings.env) == {"NODE_OPTIONS": "--require ./evil.js"}
    assert all(source.trusted for source in trusted.sources)

    # A change that only narrows keeps the trust.
    write("project", {**RISKY, "model": "other", "permissions": {
        **RISKY["permissions"], "deny": ["Bash(curl:*)", "Bash(wget:*)"]}})
    assert load_settings(project, trust_store=trust_store).pending_trust is None

    # A new hook (here in the local file) asks again and is withheld meanwhile; what was
    # trusted stays in force.
    write("local", {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x.sh"}]}]}})
    again = load_settings(project, trust_store=trust_store)
    assert again.pending_trust is not None
    assert again.pending_trust.config_hash != request.config_hash
    assert "Stop" not in again.settings.hooks
    assert len(again.settings.hooks["PreToolUse"][0].hooks) == 2
    assert again.settings.permissions.allow == ("Bash(npm:*)",)
    assert again.pending_trust.what == ("adds 1 hook (Stop: x.sh)",)
    assert [s.trusted for s in again.sources] == [True, True, False]

    # A changed hook command is a new item: the old one is no longer what is written.
    changed = {**RISKY, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "./check.sh --all"},
        {"type": "command", "command": "./lint.sh"}]}]}}
    write("project", changed)
    later = load_settings(project, trust_store=trust_store)
    assert [h.command for h in later.settings.hooks["PreToolUse"][0].hooks] == ["./lint.sh"]
    assert later.pending_trust is not None
    assert later.pending_trust.what[0] == "adds 1 hook (PreToolUse: ./check.sh --all)"

    trust_store.revoke(project)
    trust_store.revoke(project)  # revoking twice is fine
    assert trust_store.trusted_items(project) == frozenset()


def test_trusting_a_question_by_its_hash_trusts_what_it_offered(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    """`trust(folder, request.config_hash)`, as callers wrote it before trust was per item."""
    write("project", RISKY)
    request = load_settings(project, trust_store=trust_store).pending_trust
    assert request is not None
    # The folder changes after the question was asked: the new hook is not what was offered.
    write("local", {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x.sh"}]}]}})

    trust_store.trust(request.folder, request.config_hash)
    assert trust_store.trusted_items(project) == set(request.items)
    later = load_settings(project, trust_store=trust_store)
    assert later.settings.permissions.allow == ("Bash(npm:*)",)
    assert "Stop" not in later.settings.hooks
    assert later.pending_trust is not None
    assert later.pending_trust.what == ("adds 1 hook (Stop: x.sh)",)


def test_removing_settings_takes_trust_from_nothing_else(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    write("project", RISKY)
    write("local", {"permissions": {"allow": ["Edit(calc.py)"]}})
    request = load_settings(project, trust_store=trust_store).pending_trust
    assert request is not None
    trust_store.trust(request.folder, request.items)
    (project / ".aimon" / "settings.json").unlink()
    loaded = load_settings(project, trust_store=trust_store)
    assert loaded.pending_trust is None
    assert loaded.settings.permissions.allow == ("Edit(calc.py)",)


def test_settings_that_only_narrow_need_no_trust(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    write("project", {"model": "m", "permissions": {"deny": ["Bash"], "defaultMode": "plan"},
                      "hooks": {}, "env": {}})
    loaded = load_settings(project, trust_store=trust_store)
    assert loaded.pending_trust is None
    assert loaded.settings.permissions.default_mode == "plan"
    assert all(source.trusted for source in loaded.sources)


def test_user_settings_and_flags_never_need_trust(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    write("user", RISKY)
    loaded = load_settings(project, trust_store=trust_store, flags={"env": {"X": "1"}})
    assert loaded.pending_trust is None
    assert loaded.settings.permissions.allow == ("Bash(npm:*)",)
    assert dict(loaded.settings.env) == {"NODE_OPTIONS": "--require ./evil.js", "X": "1"}


def test_trust_all_skips_the_question(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    write("project", RISKY)
    loaded = load_settings(project, trust_store=trust_store, trust_all=True)
    assert loaded.pending_trust is None
    assert loaded.settings.permissions.allow == ("Bash(npm:*)",)
    assert not trust_store.path.exists()


def test_long_hook_commands_are_shortened(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    command = "python -c '" + "x" * 100 + "'\n"
    write("project", {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}})
    request = load_settings(project, trust_store=trust_store).pending_trust
    assert request is not None
    (line,) = request.what
    assert line.startswith("adds 1 hook (Stop: python -c 'xxx")
    assert line.endswith("…)")
    assert len(line) < 100


def test_trust_file_is_written_atomically_and_privately(project: Path) -> None:
    store = TrustStore()
    assert store.path == user_config_dir() / "trusted-folders.json"
    store.trust(project, ["abc", "abc", "0ff"])
    store.trust(project / "..", ["def"])

    data = json.loads(store.path.read_text(encoding="utf-8"))
    assert data["version"] == 2
    assert data["folders"][str(project.resolve())]["items"] == ["0ff", "abc"]
    assert data["folders"][str(project.parent.resolve())]["items"] == ["def"]
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    leftovers = [p.name for p in store.path.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
    assert store.trusted_items(project) == {"abc", "0ff"}
    assert TrustStore(store.path).trusted_items(str(project) + "/.") == {"abc", "0ff"}
    with pytest.raises(ValueError, match="no trust question"):
        store.trust(project, "abc")


def test_a_record_of_a_whole_folder_trusts_no_item(project: Path, write: Writer) -> None:
    store = TrustStore()
    store.path.parent.mkdir(parents=True, exist_ok=True)
    store.path.write_text(json.dumps({"version": 1, "folders": {
        str(project.resolve()): {"config_hash": "abc", "trusted_at": "2026-01-01T00:00:00"}}}))
    write("project", RISKY)
    assert load_settings(project, trust_store=store).pending_trust is not None


@pytest.mark.parametrize("content", ["{not json", "[]", '{"folders": 3}', "\xff"])
def test_corrupt_trust_file_trusts_nothing_with_a_warning(
    project: Path, tmp_path: Path, write: Writer, caplog: pytest.LogCaptureFixture,
    content: str
) -> None:
    store = TrustStore(tmp_path / "trust" / "trusted-folders.json")
    store.path.parent.mkdir()
    store.path.write_bytes(content.encode("latin-1"))
    write("project", RISKY)

    with caplog.at_level(logging.WARNING, logger="aimon_core.config"):
        loaded = load_settings(project, trust_store=store)
    assert loaded.pending_trust is not None
    assert any("no folder is trusted" in r.getMessage() for r in caplog.records)

    store.trust(loaded.pending_trust.folder, loaded.pending_trust.items)
    assert load_settings(project, trust_store=store).pending_trust is None


def test_a_harmless_new_local_file_keeps_the_trust(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    write("project", RISKY)
    request = load_settings(project, trust_store=trust_store).pending_trust
    assert request is not None
    trust_store.trust(request.folder, request.items)
    write("local", {"model": "mine", "permissions": {"deny": ["Bash(git push:*)"]}})
    assert load_settings(project, trust_store=trust_store).pending_trust is None
