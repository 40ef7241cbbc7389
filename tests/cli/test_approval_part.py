"""The REPL's approval question names the part of a compound command that needs approval."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

from rich.console import Console

from aimon_cli.render import approval_lines
from aimon_core.permission import PermissionMode, PermissionPolicy, PermissionRules
from aimon_core.tools import builtin_tools


def test_the_question_says_which_part_needs_approval(tmp_path: Path) -> None:
    policy = PermissionPolicy(PermissionRules.parse(allow=("Bash(git status:*)",)),
                              PermissionMode.DEFAULT, tmp_path)
    bash = next(t for t in builtin_tools() if t.name == "Bash")
    tool_input = {"command": "git status && rm -rf 'old build'"}
    decision = policy.decide(bash, tool_input)
    request = policy.approval_request(bash, tool_input, decision)
    out = StringIO()
    console = Console(file=out, width=120, color_system=None)
    for line in approval_lines(request, None, tmp_path):
        console.print(line)
    assert out.getvalue().splitlines()[:2] == [
        "? Bash(git status && rm -rf 'old build') needs your approval",
        "  Why: no rule allows `rm -rf 'old build'` (the rest is allowed)"]
