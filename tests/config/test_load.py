"""Layering, merging and validation of settings files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aimon_core.config import (
    HookCommandConfig,
    HookMatcherConfig,
    LoadedSettings,
    Settings,
    SettingsError,
    SettingsLayer,
    TrustStore,
    load_settings,
)
from aimon_core.permission import PermissionRules
from aimon_core.session import user_config_dir

from .conftest import Writer


def load(project: Path, store: TrustStore, **kwargs: Any) -> LoadedSettings:
    return load_settings(project, trust_store=store, trust_all=True, **kwargs)


def test_no_files_gives_defaults(project: Path, trust_store: TrustStore) -> None:
    loaded = load_settings(project, trust_store=trust_store)
    assert loaded.settings == Settings()
    assert loaded.settings.permissions.default_mode == "default"
    assert [(s.layer, s.loaded, s.trusted) for s in loaded.sources] == [
        (SettingsLayer.USER, False, True),
        (SettingsLayer.PROJECT, False, True),
        (SettingsLayer.LOCAL, False, True),
    ]
    assert loaded.sources[0].path == user_config_dir() / "settings.json"
    assert loaded.pending_trust is None
    assert dict(loaded.origin) == {}


def test_later_layers_override_earlier_ones(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    write("user", {"model": "user-model", "provider": "openai", "base_url": "http://u.test"})
    write("project", {"model": "project-model", "permissions": {"defaultMode": "plan"}})
    write("local", {"model": "local-model"})

    loaded = load(project, trust_store)
    assert loaded.settings.model == "local-model"
    assert loaded.settings.provider == "openai"
    assert loaded.settings.permissions.default_mode == "plan"
    assert loaded.origin["model"] is SettingsLayer.LOCAL
    assert loaded.origin["provider"] is SettingsLayer.USER
    assert loaded.origin["permissions.defaultMode"] is SettingsLayer.PROJECT

    flagged = load(project, trust_store, flags={"model": "flag-model", "provider": None})
    assert flagged.settings.model == "flag-model"
    assert flagged.settings.provider == "openai"  # None in flags means "not given"
    assert flagged.origin["model"] is SettingsLayer.FLAGS
    assert flagged.sources[-1].layer is SettingsLayer.FLAGS
    assert flagged.sources[-1].path is None


def test_lists_concatenate_without_duplicates_and_env_merges(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    write("user", {
        "permissions": {"allow": ["Read", "Bash(git status)"], "deny": ["Bash(rm:*)"]},
        "env": {"A": "user", "B": "user"},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "user.sh"}]}]},
    })
    write("project", {
        "permissions": {"allow": ["Bash(npm:*)", "Read"], "ask": ["Edit"],
                        "additionalDirectories": ["../shared", "/opt/data"]},
        "env": {"B": "project"},
        "hooks": {"PreToolUse": [{"hooks": [
            {"type": "command", "command": "./check.sh", "timeout": 5}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]},
    })
    write("local", {"permissions": {"allow": [" Bash(ls) "], "deny": ["Bash(rm:*)", "WebFetch"]}})

    loaded = load(project, trust_store)
    permissions = loaded.settings.permissions
    assert permissions.allow == ("Read", "Bash(git status)", "Bash(npm:*)", "Bash(ls)")
    assert permissions.deny == ("Bash(rm:*)", "WebFetch")
    assert permissions.ask == ("Edit",)
    assert permissions.additional_directories == (project.parent / "shared", Path("/opt/data"))
    assert dict(loaded.settings.env) == {"A": "user", "B": "project"}
    assert loaded.settings.hooks["PreToolUse"] == (
        HookMatcherConfig(matcher="Bash", hooks=(HookCommandConfig(type="command",
                                                                   command="user.sh"),)),
        HookMatcherConfig(hooks=(HookCommandConfig(type="command", command="./check.sh",
                                                   timeout=5.0),)),
    )
    assert loaded.origin["permissions.allow[2]"] is SettingsLayer.PROJECT
    assert loaded.origin["permissions.allow[3]"] is SettingsLayer.LOCAL
    assert loaded.origin["permissions.deny[1]"] is SettingsLayer.LOCAL
    assert loaded.origin["hooks.PreToolUse[1]"] is SettingsLayer.PROJECT
    assert loaded.origin["env.B"] is SettingsLayer.PROJECT
    assert isinstance(permissions.rules(), PermissionRules)
    assert [r.text for r in permissions.rules().deny] == ["Bash(rm:*)", "WebFetch"]


def test_hooks_json_is_the_settings_file_shape(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    hooks: dict[str, Any] = {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "./check.sh", "timeout": 60}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}
    write("user", {"hooks": hooks})
    write("project", {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "p"}]}]}})

    loaded = load(project, trust_store)
    assert loaded.settings.hooks_json() == {
        "PreToolUse": hooks["PreToolUse"],
        "Stop": [*hooks["Stop"], {"hooks": [{"type": "command", "command": "p"}]}],
    }
    by_source = loaded.hooks_by_source()
    assert [(s.layer, h) for s, h in by_source] == [
        (SettingsLayer.USER, hooks),
        (SettingsLayer.PROJECT, {"Stop": [{"hooks": [{"type": "command", "command": "p"}]}]}),
    ]


def error_of(project: Path, store: TrustStore, **kwargs: Any) -> SettingsError:
    with pytest.raises(SettingsError) as info:
        load(project, store, **kwargs)
    return info.value


def test_unknown_keys_load_with_one_warning_naming_them(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    # Unknown is not invalid: Claude Code's keys, or a later aimon's, load with a warning.
    write("project", {"$schema": "https://example.com/s.json", "modle": "x", "zzz": 1,
                      "permissions": {"default_mode": "plan"},
                      "hooks": {"Stop": [{"hooks": [{"command": "x", "timout": 5}]}]}})
    loaded = load_settings(project, trust_store=trust_store, trust_all=True)
    assert loaded.warnings == (
        ".aimon/settings.json: not used by aimon: modle (did you mean 'model'?); zzz; "
        "permissions.default_mode (did you mean 'defaultMode'?); "
        "hooks.Stop[0].hooks[0].timout (did you mean 'timeout'?)",
    )
    assert loaded.settings.model is None


def test_a_near_miss_of_a_protective_key_still_fails(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    path = write("project", {"permissions": {"dney": ["Bash"]}})
    error = error_of(project, trust_store)
    assert str(error) == ".aimon/settings.json: permissions.dney: unknown key; did you mean 'deny'?"
    assert (error.path, error.key) == (path, "permissions.dney")


def test_malformed_json_names_line_and_column(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    write("local", '{\n  "model": "x",\n  "provider" "openai"\n}\n')
    error = error_of(project, trust_store)
    assert (error.line, error.column) == (3, 14)
    assert str(error) == (
        ".aimon/settings.local.json: line 3, column 14: invalid JSON: Expecting ':' delimiter"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"permissions": {"deny": [5]}},
         "permissions.deny[0]: expected a string, got a number"),
        ({"permissions": {"allow": ["Read", "Edit", None]}},
         "permissions.allow[2]: expected a string, got null"),
        ({"permissions": {"deny": "Bash(rm:*)"}},
         "permissions.deny: expected a list, got a string"),
        ({"permissions": {"deny": ["Bash(rm"]}},
         "permissions.deny[0]: invalid rule 'Bash(rm': unbalanced parentheses"),
        ({"permissions": {"defaultMode": "yolo"}},
         "permissions.defaultMode: 'yolo' is not one of 'default', 'acceptEdits'"),
        ({"provider": "azure"}, "provider: 'azure' is not one of 'anthropic', 'openai'"),
        ({"model": ""}, "model: must not be empty"),
        ({"base_url": "localhost:8080"}, "base_url: 'localhost:8080' is not an http"),
        ({"env": {"A": 1}}, "env.A: expected a string, got a number"),
        ({"env": {"A=B": "1"}}, "env['A=B']: is not a valid environment variable name"),
        ({"hooks": []}, "hooks: expected an object, got a list"),
        ({"hooks": {"PreToolUse": [{"matcher": "Bash"}]}},
         "hooks.PreToolUse[0]: missing 'hooks'"),
        ({"hooks": {"PreToolUse": [{"hooks": [{"type": "command"}]}]}},
         "hooks.PreToolUse[0].hooks[0]: missing 'command'"),
        ({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}},
         "hooks.Stop[0].hooks[0].timeout: expected a positive number of seconds, got 0"),
        ([], "expected an object, got a list"),
        ("", "the file is empty; write {} for no settings"),
        ('{"model": "a", "model": "b"}', "the key 'model' appears twice in one object"),
        ('{"model": NaN}', "NaN is not valid JSON"),
    ],
)
def test_wrong_shapes_fail_the_whole_load(
    project: Path, trust_store: TrustStore, write: Writer, content: Any, message: str
) -> None:
    write("user", {"model": "fine"})
    write("project", content)
    error = error_of(project, trust_store)
    assert str(error).startswith(".aimon/settings.json: ")
    assert message in str(error)


def test_unreadable_file_is_an_error_not_empty_settings(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    (project / ".aimon" / "settings.json").mkdir(parents=True)
    assert "cannot read" in str(error_of(project, trust_store))
    (project / ".aimon" / "settings.json").rmdir()
    (project / ".aimon" / "settings.local.json").write_bytes(b'{"model": "\xff"}')
    assert "not valid UTF-8" in str(error_of(project, trust_store))


def test_user_file_errors_name_the_user_file(trust_store: TrustStore, project: Path,
                                             write: Writer) -> None:
    path = write("user", {"permissions": {"deny": [1]}})
    error = error_of(project, trust_store)
    assert error.path == path
    assert str(error) == f"{path}: permissions.deny[0]: expected a string, got a number"


def test_flags_are_validated_like_a_file(project: Path, trust_store: TrustStore) -> None:
    error = error_of(project, trust_store, flags={"permissions": {"defaultMode": "nope"}})
    assert error.path is None
    assert str(error).startswith("command-line flags: permissions.defaultMode: 'nope'")
    loaded = load(project, trust_store, flags={"permissions": {"defaultMode": "acceptEdits"}})
    assert loaded.settings.permissions.default_mode == "acceptEdits"


def test_deeply_nested_json_is_an_error(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    write("project", '{"env": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert "nested too deeply" in str(error_of(project, trust_store))


def test_hooks_feed_the_hook_parser(project: Path, trust_store: TrustStore,
                                    write: Writer) -> None:
    from aimon_core.hook import parse_hooks_config

    write("project", {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"command": "./check.sh", "timeout": 5}]}]}})
    loaded = load(project, trust_store)
    assert loaded.settings.hooks["PreToolUse"][0].hooks[0].type == "command"
    for source, hooks in loaded.hooks_by_source():
        (spec,) = parse_hooks_config({"hooks": hooks}, source=str(source.path))
        assert spec.command == "./check.sh"
        assert spec.matcher == "Bash"
