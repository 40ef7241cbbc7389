"""An approval of a compound command names the part that is not allowed, as it was written."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from aimon_core.agent import Turn
from aimon_core.filesystem import LocalFileSystem
from aimon_core.permission import (
    ApprovalAnswer,
    ApprovalRequest,
    ApprovalScope,
    PermissionMode,
    PermissionPolicy,
    PermissionRules,
    Verdict,
    evaluate_command,
    interactive_gate,
    print_mode_gate,
)
from aimon_core.shell import LocalShell
from aimon_core.tools import ToolContext, ToolState, builtin_tools

GIT_STATUS = ("Bash(git status:*)",)
REST = " (the rest is allowed)"

# (command, allow rules, the reason, the parts named in the decision)
CASES = [
    ("git status && rm -rf build", GIT_STATUS,
     "no rule allows `rm -rf build`" + REST, ("rm -rf build",)),
    ("git status; rm -rf \"my build\"", GIT_STATUS,
     "no rule allows `rm -rf \"my build\"`" + REST, ('rm -rf "my build"',)),
    ("git status || rm -rf 'my build'", GIT_STATUS,
     "no rule allows `rm -rf 'my build'`" + REST, ("rm -rf 'my build'",)),
    ("git status | sh", GIT_STATUS, "no rule allows `sh`" + REST, ("sh",)),
    ("git status |& tee  log.txt", GIT_STATUS,
     "no rule allows `tee  log.txt`" + REST, ("tee  log.txt",)),
    ("make && git status && npm test", GIT_STATUS,
     "no rule allows `make` or `npm test`" + REST, ("make", "npm test")),
    ("rm a; rm b; rm c; rm d; git status", GIT_STATUS,
     "no rule allows `rm a`, `rm b`, `rm c` or 1 more" + REST, ("rm a", "rm b", "rm c", "rm d")),
    ("git status > \"out file.txt\"", GIT_STATUS,
     "`> \"out file.txt\"` writes to a file" + REST, ('> "out file.txt"',)),
    ("git status 2>>err.log && ls", GIT_STATUS,
     "`2>>err.log` writes to a file" + REST, ("2>>err.log",)),
    ("ls; make > out.txt", (),
     "no rule allows `make > out.txt`" + REST, ("make > out.txt",)),
    ("git status && echo $(rm -rf build)", GIT_STATUS,
     "`$(...)` command substitution needs approval: `$(rm -rf build)`", ("$(rm -rf build)",)),
    ("git status && echo `rm -rf build`", GIT_STATUS,
     "`$(...)` command substitution needs approval: `` `rm -rf build` ``",
     ("`rm -rf build`",)),
    ("git status && diff <(ls a) b", GIT_STATUS,
     "`<(...)` process substitution needs approval: `<(ls a)`", ("<(ls a)",)),
    ("git status && FOO=$(id) ls", GIT_STATUS,
     "`$(...)` command substitution needs approval: `$(id)`", ("$(id)",)),
    ("git status && $CMD x", GIT_STATUS,
     "a command name that is an expansion (`$CMD`) needs approval: `$CMD x`", ("$CMD x",)),
    ("git status && for f in *.o; do\n  rm $f\ndone", GIT_STATUS,
     "control flow (`if`, `for`, `while`, `case`) needs approval: "
     "`for f in *.o; do\\n  rm $f\\ndone`", ("for f in *.o; do\n  rm $f\ndone",)),
    ("git status && (cd sub && make)", GIT_STATUS,
     "a `( ... )` subshell needs approval: `(cd sub && make)`", ("(cd sub && make)",)),
    ("git status\nrm -rf build", GIT_STATUS,
     "no rule allows `rm -rf build`" + REST, ("rm -rf build",)),
    # A single command that no rule allows: nothing else to set apart.
    ("rm -rf build", GIT_STATUS, "no rule allows `rm -rf build`", ("rm -rf build",)),
    # Look-alike letters stay visible.
    ("git status && rм -rf build", GIT_STATUS,
     "no rule allows `r\\u043c -rf build`" + REST, ("rм -rf build",)),
]


@pytest.mark.parametrize(("command", "allow", "reason", "parts"), CASES,
                         ids=[c[0] for c in CASES])
def test_the_reason_names_the_part_that_needs_approval(
        command: str, allow: tuple[str, ...], reason: str, parts: tuple[str, ...]) -> None:
    decision = evaluate_command(command, PermissionRules.parse(allow=allow))
    assert decision.verdict is Verdict.ASK
    assert (decision.reason, decision.parts) == (reason, parts)


def test_a_part_with_an_escape_hatch_is_named_before_its_reason(tmp_path: Path) -> None:
    decision = evaluate_command("git status && git -c core.pager=less log",
                                PermissionRules.parse(allow=("Bash(git:*)",)), cwd=tmp_path)
    assert decision.reason == (
        "`git -c core.pager=less log`: `git -c` can make git run other programs; "
        "rule Bash(git:*) does not cover that (the rest is allowed)")


@pytest.mark.parametrize("command", [
    "git status && git status --short", "git status | head -5", "git status > /dev/null 2>&1",
])
def test_allowed_lines_stay_allowed(command: str) -> None:
    assert evaluate_command(command, PermissionRules.parse(allow=GIT_STATUS)).verdict \
        is Verdict.ALLOW


def test_deny_rules_still_win_with_their_own_reason() -> None:
    rules = PermissionRules.parse(allow=GIT_STATUS, deny=("Bash(rm:*)",))
    decision = evaluate_command("git status && rm -rf build", rules)
    assert decision.verdict is Verdict.DENY and decision.rule == "Bash(rm:*)"


# ── where the wording reaches the user and the model ──────────────────────────────────


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(project_root=tmp_path, cwd=tmp_path, fs=LocalFileSystem(tmp_path),
                       shell=LocalShell(), state=ToolState())


def _bash(command: str) -> tuple[Any, dict[str, Any]]:
    tool = next(t for t in builtin_tools() if t.name == "Bash")
    return tool, {"command": command}


def test_the_approval_question_and_print_refusal_name_the_part(tmp_path: Path,
                                                               ctx: ToolContext) -> None:
    rules = PermissionRules.parse(allow=GIT_STATUS)
    policy = PermissionPolicy(rules, PermissionMode.DEFAULT, tmp_path)
    asked: list[ApprovalRequest] = []

    async def ask(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer(allowed=False, scope=ApprovalScope.ONCE)

    async def run() -> None:
        command = 'git status && rm -rf "my build"'
        await interactive_gate(policy)(*_bash(command), replace(ctx, turn=Turn(ask=ask)))
        assert asked[0].reason == 'no rule allows `rm -rf "my build"`' + REST
        # Print mode (no one to ask): the model is told the part and the flag for it.
        for gate, turn in ((interactive_gate(policy), Turn()),
                           (print_mode_gate(rules, project_root=tmp_path), None)):
            verdict = await gate(*_bash(command), replace(ctx, turn=turn))
            assert not verdict.allowed
            assert verdict.message.startswith(
                'Permission needed: no rule allows `rm -rf "my build"` (the rest is allowed), '
                "and print mode cannot ask the user.")
            assert '--allowed-tools "Bash(rm:*)"' in verdict.message

    asyncio.run(run())
