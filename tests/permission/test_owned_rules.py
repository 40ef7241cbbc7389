"""Rules a library tool reads itself (RuleSubject): allow, ask and deny reach it like Bash's."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from aimon_core.permission import (
    PermissionMode,
    PermissionPolicy,
    PermissionRules,
    Verdict,
    approval_rule,
    decide,
    parse_rule,
)
from aimon_core.tools import ParamPatterns, RuleSubject, Tool, ToolResult


async def _run(_input: Any, _ctx: Any) -> ToolResult:
    return ToolResult.ok("deployed")


def _deploy(matcher: Any = None, *, read_only: bool = False) -> Tool:
    return Tool(name="Deploy", description="Deploy the service.", read_only=read_only,
                input_schema={"type": "object", "properties": {"env": {"type": "string"}}},
                run=_run, subject=RuleSubject(matcher=matcher or ParamPatterns(("env",))))


class _Broken:
    def matches(self, specifier: str, tool_input: Mapping[str, Any]) -> bool:
        raise RuntimeError("the matcher broke")

    def specifier(self, tool_input: Mapping[str, Any]) -> str | None:
        raise RuntimeError("the matcher broke")


def _rules(**groups: tuple[str, ...]) -> PermissionRules:
    return PermissionRules(**{k: tuple(parse_rule(r) for r in v) for k, v in groups.items()})


# Every group a rule can be in, a rule that covers the call or not: the verdict expected.
_COVERS, _MISSES = "Deploy(env:staging*)", "Deploy(env:prod*)"
_CASES = [
    (group, rule, {"allow": Verdict.ALLOW, "ask": Verdict.ASK, "deny": Verdict.DENY}[group]
     if rule == _COVERS else Verdict.ASK)
    for group, rule in itertools.product(("allow", "ask", "deny"), (_COVERS, _MISSES))
]


@pytest.mark.parametrize(("group", "rule", "verdict"), _CASES)
def test_each_group_reaches_the_tool_through_its_matcher(tmp_path: Path, group: str, rule: str,
                                                         verdict: Verdict) -> None:
    decision = decide(_deploy(), {"env": "staging-eu"}, _rules(**{group: (rule,)}), tmp_path)
    assert decision.verdict is verdict
    assert (decision.rule == rule) is (rule == _COVERS)


@pytest.mark.parametrize(("group", "verdict"), [("deny", Verdict.DENY), ("ask", Verdict.ASK),
                                                ("allow", Verdict.ASK)])
def test_a_broken_matcher_fails_closed(tmp_path: Path, group: str, verdict: Verdict) -> None:
    decision = decide(_deploy(_Broken()), {"env": "x"}, _rules(**{group: ("Deploy(env:x)",)}),
                      tmp_path)
    assert decision.verdict is verdict


def test_deny_beats_ask_beats_allow(tmp_path: Path) -> None:
    rules = _rules(allow=("Deploy(env:*)",), ask=("Deploy(env:stag*)",),
                   deny=("Deploy(env:staging-eu)",))
    assert decide(_deploy(), {"env": "staging-eu"}, rules, tmp_path).verdict is Verdict.DENY
    assert decide(_deploy(), {"env": "staging-us"}, rules, tmp_path).verdict is Verdict.ASK
    assert decide(_deploy(), {"env": "dev"}, rules, tmp_path).verdict is Verdict.ALLOW


def test_a_read_only_tool_is_still_denied_by_its_rule(tmp_path: Path) -> None:
    tool = _deploy(read_only=True)
    assert decide(tool, {"env": "prod"}, _rules(deny=("Deploy(env:prod)",)),
                  tmp_path).verdict is Verdict.DENY
    assert decide(tool, {"env": "dev"}, _rules(deny=("Deploy(env:prod)",)),
                  tmp_path).verdict is Verdict.ALLOW


@pytest.mark.parametrize(("env", "rule"), [("staging", "Deploy(env:staging)"),
                                           ("a*b", "Deploy(env:a[*]b)"),
                                           ("why?", "Deploy(env:why[?])"),
                                           ("f(x)", "")])
def test_always_allow_remembers_the_tools_own_rule(tmp_path: Path, env: str, rule: str) -> None:
    remembered = approval_rule(_deploy(), {"env": env}, project_root=tmp_path)
    assert remembered == rule
    if rule:  # the remembered rule covers this call and no other
        assert decide(_deploy(), {"env": env}, _rules(allow=(rule,)),
                      tmp_path).verdict is Verdict.ALLOW
        assert decide(_deploy(), {"env": env + "x"}, _rules(allow=(rule,)),
                      tmp_path).verdict is Verdict.ASK


def test_the_policy_decides_with_the_tools_matcher(tmp_path: Path) -> None:
    policy = PermissionPolicy(_rules(allow=("Deploy(env:dev)",)), PermissionMode.DEFAULT,
                              tmp_path)
    assert policy.decide(_deploy(), {"env": "dev"}).verdict is Verdict.ALLOW
    assert policy.decide(_deploy(), {"env": "prod"}).verdict is Verdict.ASK
