"""A rule aimon cannot read: an allow rule is skipped with a warning, deny and ask stop loading.

Skipping an allow rule only means being asked where it would have allowed (fail closed); a
deny or ask rule read wrongly would leave the user unprotected, so it stops start-up. The table
is every shape of unreadable rule seen in real files, in every list, in Claude Code's file and
aimon's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aimon_core.config import SettingsError, TrustStore, load_settings
from aimon_core.permission import PermissionRules, RuleError, Verdict, decide, parse_rule
from aimon_core.tools import builtin_tools

UNREADABLE = ["Edit:*", "Bash:*", "Write:*", "Bash(git:*", "Bash(git)x", "(x)", "Read()",
              "Web Fetch", "Bash((x)", "mcp__a b"]
FILES = [".claude/settings.json", ".claude/settings.local.json", ".aimon/settings.json"]


def write(project: Path, file: str, permissions: dict[str, list[str]]) -> None:
    path = project / file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": permissions}))


@pytest.mark.parametrize("rule", UNREADABLE)
def test_every_case_is_a_rule_aimon_cannot_read(rule: str) -> None:
    with pytest.raises(RuleError):
        parse_rule(rule)


@pytest.mark.parametrize("file", FILES)
@pytest.mark.parametrize("rule", UNREADABLE)
def test_an_unreadable_allow_rule_is_skipped_with_a_warning(project: Path, rule: str,
                                                            file: str) -> None:
    write(project, file, {"allow": [rule, "Read"]})
    loaded = load_settings(project, trust_store=TrustStore(), trust_all=True)
    assert loaded.settings.permissions.allow == ("Read",)
    [warning] = [w for w in loaded.warnings if "skipped" in w]
    assert warning.startswith(f"{file}: permissions.allow[0]: allow rule {rule!r} skipped: ")


@pytest.mark.parametrize("kind", ["deny", "ask"])
@pytest.mark.parametrize("file", FILES)
@pytest.mark.parametrize("rule", UNREADABLE)
def test_an_unreadable_deny_or_ask_rule_stops_loading(project: Path, rule: str, file: str,
                                                      kind: str) -> None:
    write(project, file, {kind: ["Read", rule]})
    with pytest.raises(SettingsError) as info:
        load_settings(project, trust_store=TrustStore(), trust_all=True)
    assert info.value.key == f"permissions.{kind}[1]"
    assert rule in str(info.value)


def test_a_skipped_allow_rule_allows_nothing(project: Path) -> None:
    write(project, ".claude/settings.json", {"allow": ["Edit:*", "Write:*", "Bash:*"]})
    loaded = load_settings(project, trust_store=TrustStore(), trust_all=True)
    rules = PermissionRules.parse(allow=loaded.settings.permissions.allow)
    tools = {tool.name: tool for tool in builtin_tools()}
    calls = [("Edit", {"file_path": str(project / "a.py"), "old_string": "a", "new_string": "b"}),
             ("Write", {"file_path": str(project / "a.py"), "content": "x"}),
             ("Bash", {"command": "touch a.py"})]
    for name, tool_input in calls:
        assert decide(tools[name], tool_input, rules, project).verdict is not Verdict.ALLOW
