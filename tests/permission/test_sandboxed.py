"""The permission side of the OS sandbox: what runs inside is not asked about; rules still hold.

With `autoAllowBashIfSandboxed`, a command the rules would ask about (not read-only, risky
syntax, a protected write) is allowed when it runs in the sandbox. Deny rules deny, ask rules
ask, a command that may hide what a deny or ask rule forbids asks, `excludedCommands` go
through the rules, and a call asking to leave the sandbox is always a question. The network
questions: settings and `WebFetch(domain:...)` rules decide first, then the session is asked
once per host, and with nobody to ask (print mode) the host is refused and named.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from aimon_core.agent import ApprovalAnswer, ApprovalRequest, ApprovalScope, Turn
from aimon_core.permission import (
    PermissionMode,
    PermissionPolicy,
    PermissionRules,
    SessionApprovals,
    TurnApprovals,
    Verdict,
)
from aimon_core.permission._sandboxed import NetworkQuestions, SandboxedBash, excluded_matcher
from aimon_core.shell import SandboxConfig, SandboxPaths
from aimon_core.tools.builtin import builtin_tools

BASH_TOOL = next(t for t in builtin_tools() if t.name == "Bash")

# Commands the rules alone ask about (no rule allows them, or they are risky or protected).
ASKED = ("make test", "python3 test.py", "npm install", "rm -rf build", "echo x > out.txt",
         "cat $(ls)", "for f in *; do echo $f; done", "sh -c 'make'", "git commit -am x",
         "echo pwned > .git/hooks/pre-commit", "touch .aimon/settings.json", "curl example.com")


def policy(tmp_path: Path, *, allow: tuple[str, ...] = (), ask: tuple[str, ...] = (),
           deny: tuple[str, ...] = (), auto_allow: bool = True, excluded: tuple[str, ...] = (),
           allow_unsandboxed: bool = True, sandbox: bool = True,
           mode: PermissionMode = PermissionMode.DEFAULT) -> PermissionPolicy:
    rules = PermissionRules.parse(allow=allow, ask=ask, deny=deny)
    made = PermissionPolicy(rules, mode, tmp_path)
    if sandbox:
        config = SandboxConfig(paths=SandboxPaths(project=tmp_path),
                               excluded=excluded_matcher(excluded),
                               allow_unsandboxed=allow_unsandboxed)
        made.sandbox = SandboxedBash(config=config, auto_allow=auto_allow)
    return made


def verdict(made: PermissionPolicy, command: str, **extra: Any) -> Verdict:
    return made.decide(BASH_TOOL, {"command": command, **extra}).verdict


@pytest.mark.parametrize("command", ASKED)
def test_a_command_that_runs_in_the_sandbox_is_not_asked_about(command: str,
                                                                tmp_path: Path) -> None:
    assert verdict(policy(tmp_path, sandbox=False), command) is Verdict.ASK
    assert verdict(policy(tmp_path), command) is Verdict.ALLOW


@pytest.mark.parametrize("command", ASKED)
def test_regular_permissions_mode_asks_as_before(command: str, tmp_path: Path) -> None:
    assert verdict(policy(tmp_path, auto_allow=False), command) is Verdict.ASK


@pytest.mark.parametrize(("command", "rules", "expected"), [
    ("rm -rf build", {"deny": ("Bash(rm:*)",)}, Verdict.DENY),
    ("sudo rm -rf build", {"deny": ("Bash(rm:*)",)}, Verdict.DENY),
    ("make && rm -fr build", {"deny": ("Bash(rm -rf:*)",)}, Verdict.DENY),
    ("git push origin main", {"ask": ("Bash(git push:*)",)}, Verdict.ASK),
    # Cannot be shown to stay outside the deny rule: the rule is about the effect, it asks.
    ("python3 -c 'import os; os.system(\"rm -rf x\")'", {"deny": ("Bash(rm:*)",)}, Verdict.ASK),
    ("cat .env", {"deny": ("Read(./.env)",)}, Verdict.ASK),
    # A deny rule for another program does not make an unrelated command ask.
    ("make test", {"deny": ("Bash(rm:*)",)}, Verdict.ALLOW),
])
def test_deny_and_ask_rules_still_hold(command: str, rules: dict[str, tuple[str, ...]],
                                       expected: Verdict, tmp_path: Path) -> None:
    assert verdict(policy(tmp_path, **rules), command) is expected


@pytest.mark.parametrize("command", ["docker ps", "sudo docker ps", "make && docker build .",
                                     "npm run deploy"])
def test_an_excluded_command_goes_through_the_rules(command: str, tmp_path: Path) -> None:
    made = policy(tmp_path, excluded=("docker", "npm run deploy"))
    assert verdict(made, command) is Verdict.ASK
    assert verdict(policy(tmp_path, excluded=("docker", "npm run deploy"),
                          allow=("Bash",)), "docker ps") is Verdict.ALLOW


@pytest.mark.parametrize("rules", [{}, {"allow": ("Bash(ls:*)",)}, {"allow": ("Bash",)}])
def test_leaving_the_sandbox_is_always_a_question(rules: dict[str, tuple[str, ...]],
                                                  tmp_path: Path) -> None:
    made = policy(tmp_path, **rules)
    decision = made.decide(BASH_TOOL, {"command": "ls", "dangerouslyDisableSandbox": True})
    assert decision.verdict is Verdict.ASK
    assert "outside the OS sandbox" in decision.reason


def test_leaving_is_refused_by_a_deny_rule_and_allowed_in_bypass_mode(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIMON_SANDBOX", "1")  # bypassPermissions is refused as root otherwise
    leave = {"dangerouslyDisableSandbox": True}
    assert verdict(policy(tmp_path, deny=("Bash(rm:*)",)), "rm x", **leave) is Verdict.DENY
    made = policy(tmp_path, mode=PermissionMode.BYPASS)
    assert verdict(made, "make", **leave) is Verdict.ALLOW


def test_without_unsandboxed_commands_the_request_to_leave_is_ignored(tmp_path: Path) -> None:
    made = policy(tmp_path, allow_unsandboxed=False)
    assert verdict(made, "make", dangerouslyDisableSandbox=True) is Verdict.ALLOW


def test_plan_mode_still_refuses_what_is_not_read_only(tmp_path: Path) -> None:
    made = policy(tmp_path, mode=PermissionMode.PLAN)
    assert verdict(made, "make") is Verdict.DENY
    assert verdict(made, "ls") is Verdict.ALLOW


# ---------------------------------------------------------------------------- the network


def questions(tmp_path: Path, answer: ApprovalAnswer | None, *, allowed: tuple[str, ...] = (),
              denied: tuple[str, ...] = (), allow: tuple[str, ...] = (),
              deny: tuple[str, ...] = ()) -> tuple[NetworkQuestions, list[ApprovalRequest]]:
    made = policy(tmp_path, allow=allow, deny=deny)
    gate = NetworkQuestions(made, allowed=allowed, denied=denied)
    asked: list[ApprovalRequest] = []

    async def ask(request: ApprovalRequest) -> ApprovalAnswer | None:
        asked.append(request)
        await asyncio.sleep(0)  # other connections arrive while the user thinks
        return answer

    gate.turn = Turn(ask=ask, turn_approvals=TurnApprovals(), session_approvals=SessionApprovals())
    return gate, asked


@pytest.mark.parametrize(("settings", "host", "port", "allowed"), [
    ({"allowed": ("github.com",)}, "github.com", 443, True),
    ({"allowed": ("*.npmjs.org",)}, "registry.npmjs.org", 443, True),
    ({"allowed": ("github.com:22",)}, "github.com", 443, False),
    ({"allow": ("WebFetch(domain:pypi.org)",)}, "pypi.org", 443, True),
    ({"allowed": ("*",), "denied": ("evil.test",)}, "evil.test", 443, False),
    ({"allowed": ("*",), "deny": ("WebFetch(domain:evil.test)",)}, "evil.test", 80, False),
])
def test_settings_and_webfetch_rules_decide_without_asking(
        settings: dict[str, tuple[str, ...]], host: str, port: int, allowed: bool,
        tmp_path: Path) -> None:
    gate, asked = questions(tmp_path, None, **settings)  # nobody answers: print mode
    result = asyncio.run(gate(host, port, "npm install"))
    assert result.allowed is allowed
    assert asked == [] or not allowed


def test_a_new_domain_is_asked_once_and_remembered_for_the_session(tmp_path: Path) -> None:
    gate, asked = questions(tmp_path, ApprovalAnswer(allowed=True, scope=ApprovalScope.SESSION))

    async def main() -> list[bool]:
        first = await asyncio.gather(*(gate("example.com", 443, "curl x") for _ in range(3)))
        again = await gate("example.com", 443, "another command")
        return [r.allowed for r in (*first, again)]

    assert asyncio.run(main()) == [True, True, True, True]
    assert len(asked) == 1
    assert asked[0].suggested_rule == "WebFetch(domain:example.com)"
    assert asked[0].label == "Network(example.com:443)"
    assert "curl x" in asked[0].reason
    assert gate.turn is not None
    assert "WebFetch(domain:example.com)" in gate.turn.session_approvals.entries()


def test_a_refused_domain_stays_refused_for_that_command(tmp_path: Path) -> None:
    gate, asked = questions(tmp_path, ApprovalAnswer(allowed=False))

    async def main() -> list[str]:
        return [(await gate("example.com", 443, "curl x")).reason for _ in range(2)]

    assert asyncio.run(main()) == ["the user refused it", "the user refused it"]
    assert len(asked) == 1


def test_with_nobody_to_ask_a_new_domain_is_refused_and_named(tmp_path: Path) -> None:
    gate, _ = questions(tmp_path, None)
    result = asyncio.run(gate("example.com", 443, "curl x"))
    assert not result.allowed
    assert "example.com is not an allowed domain and nobody can be asked" in result.reason
    assert 'WebFetch(domain:example.com)' in result.reason
    gate.turn = None
    assert not asyncio.run(gate("other.test", 443, "curl y")).allowed
