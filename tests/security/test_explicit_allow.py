"""An exact allow is the user's decision, even beside a deny rule for another program (part 6).

`Bash(python3 test_calc.py)` allowed and `Bash(rm:*)` denied is the most common shape of a
Claude Code settings file. aimon used to ask anyway (print mode: refuse), since it cannot show
that `python3` stays outside `rm`: unattended test runs were impossible. A rule, or a
remembered approval, that names the exact command is honoured now; deny and ask rules still
win wherever they match (the command, its normal forms, the paths it names), and nothing may
surround the exact command. What a program does inside is the OS sandbox's to contain.

The table: exact commands x deny rules for other programs x the routes an exact allow takes
(settings or flag rule, a session approval, an exact-command entry, an agent approval), then
the controls that must still ask or deny. One print-mode run shows it end to end.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aimon_core.agent import Turn
from aimon_core.permission import (
    AgentApprovalStore,
    PermissionMode,
    PermissionPolicy,
    PermissionRules,
    SessionApprovals,
    Verdict,
)
from aimon_core.tools import Tool, builtin_tools

from ._attempts import Attempt, Batch, Exists, Outcome, bash
from .conftest import cases, check_attempt

# The first test waits for every batch of the suite (see `outcomes`).
pytestmark = pytest.mark.timeout(600)

BASH: Tool = next(t for t in builtin_tools() if t.name == "Bash")
COMMANDS = ("python3 test_calc.py", "make test", "npm run build", "./run_tests.sh",
            "node scripts/check.js --fast")
DENIES = ("Bash(rm:*)", "Bash(curl:*)", "Bash(git push:*)", "Read(./.env)")
ROUTES = ("settings", "session", "exact-entry", "agent")


def decide(command: str, deny: str, route: str, tmp_path: Path,
           allow: str | None = None) -> Verdict:
    """Return the policy's verdict on `command` with `deny`, allowed through `route`."""
    rule = allow or f"Bash({command})"
    settings_allow = (rule,) if route == "settings" else ()
    agent = AgentApprovalStore(tmp_path / "agent.json")
    session = SessionApprovals()
    if route == "session":
        session.add(rule)
    elif route == "exact-entry":
        session.add(f"Bash(exact:{command})")
    elif route == "agent":
        agent.add(rule)
    policy = PermissionPolicy(PermissionRules.parse(allow=settings_allow, deny=(deny,)),
                              PermissionMode.DEFAULT, tmp_path, agent=agent)
    turn = Turn(session_approvals=session)
    return policy.decide(BASH, {"command": command}, turn=turn).verdict


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("deny", DENIES)
@pytest.mark.parametrize("command", COMMANDS)
def test_an_exact_allow_is_honoured_beside_a_deny_rule_for_another_program(
        command: str, deny: str, route: str, tmp_path: Path) -> None:
    assert decide(command, deny, route, tmp_path) is Verdict.ALLOW


CONTROLS = [
    # (command, allow rule, deny rule, verdict): what the exact allow does not lift.
    ("python3 test_calc.py", "Bash(python3:*)", "Bash(rm:*)", Verdict.ASK),  # not exact
    ("python3 -c 'import os'", "Bash(python3:*)", "Bash(rm:*)", Verdict.ASK),
    ("rm -rf build", "Bash(rm -rf build)", "Bash(rm:*)", Verdict.DENY),  # the deny matches
    ("python3 test_calc.py; rm -rf x", "Bash(python3 test_calc.py)", "Bash(rm:*)",
     Verdict.DENY),
    ("python3 test_calc.py && make", "Bash(python3 test_calc.py)", "Bash(rm:*)", Verdict.ASK),
    ("python3 test_calc.py > out.txt", "Bash(python3 test_calc.py)", "Bash(rm:*)",
     Verdict.ASK),
    ("X=1 python3 test_calc.py", "Bash(python3 test_calc.py)", "Bash(rm:*)", Verdict.ASK),
    ("python3 test_calc.py $(id)", "Bash(python3 test_calc.py)", "Bash(rm:*)", Verdict.ASK),
    ("python3 test_calc.py .env", "Bash(python3 test_calc.py .env)", "Read(./.env)",
     Verdict.ASK),  # the path the deny rule names
    ("sudo rm -rf /", "Bash(sudo rm -rf /)", "Bash(rm:*)", Verdict.DENY),  # a normal form
]


@pytest.mark.parametrize(("command", "allow", "deny", "verdict"), CONTROLS)
@pytest.mark.parametrize("route", ["settings", "session"])
def test_what_an_exact_allow_does_not_lift(command: str, allow: str, deny: str,
                                          verdict: Verdict, route: str,
                                          tmp_path: Path) -> None:
    assert decide(command, deny, route, tmp_path, allow=allow) is verdict


# ------------------------------------------------------------ print mode, end to end

TEST_RUN = Attempt(
    id="exact_allow_runs", call=bash("python3 test_calc.py"), checks=(Exists(),),
    files={"@P@/test_calc.py": "open('@M@', 'w').write('ran')\n"})
BATCHES = (Batch(name="exact_allow", attempts=(TEST_RUN,), settings={"permissions": {
    "allow": ["Bash(python3 test_calc.py)"], "deny": ["Bash(rm:*)"]}}),)


@pytest.mark.parametrize(("batch", "attempt"), cases(BATCHES))
def test_print_mode_runs_the_exactly_allowed_test(batch: Batch, attempt: Attempt,
                                                  outcomes: dict[str, Outcome]) -> None:
    check_attempt(batch, outcomes, attempt)
