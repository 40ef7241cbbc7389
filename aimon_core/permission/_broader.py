"""A broader rule to offer with an approval question, where one is safe to offer.

"Yes, and don't ask again for `python3 -m pytest *`" saves a question per test run. It is
offered only for one plain simple command whose program and sub-command are on an allowlist
of tools whose arguments choose *what* to build, test or check, never *code to run*: a
prefix rule over `python3` would allow `python3 -c ...`, over `npm` `npm exec ...`, over
`git` `git -c core.pager=...` (the matcher also keeps escape hatches outside broad rules).
Anything else is offered only as the exact command. The rule is checked to allow the call
it is offered for, by the same matcher as settings rules.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from aimon_core.permission._bash import parse_command
from aimon_core.permission._matcher import evaluate_command
from aimon_core.permission._rules import PermissionRules, RuleError, Verdict, parse_rule

# program → the sub-commands (first word) a prefix may stop after; () : the program alone.
# A sub-command listed with a following word (`run`, `-m`) takes that word into the prefix.
_SUBCOMMANDS: Mapping[str, frozenset[str]] = {
    "git": frozenset({"add", "commit", "stash", "switch", "checkout", "restore", "fetch",
                      "pull", "merge", "branch", "tag"}),
    "python": frozenset({"-m"}),
    "python3": frozenset({"-m"}),
    "uv": frozenset({"run"}),
    "pytest": frozenset(),
    "ruff": frozenset({"check", "format"}),
    "black": frozenset(),
    "tsc": frozenset(),
}
# Not offered, because an argument can name code to run or load: any npm, pnpm or yarn call
# (`--script-shell=X`, `--node-options=--require=X` are settings on every command), an
# installer's package or index (`pip install URL`, `uv sync --index-url`), a build tool's
# file or setting (`make -f`, `make --eval`, `cargo --config runner=...`, `go test -exec`,
# `gradle -I`, `tox -c`), a checker's config, which is code or loads plugins (mypy, eslint,
# prettier, jest, vitest), `git rebase --exec`. Each of those is asked about, or allowed as
# the exact command approved.
# Sub-commands whose next word names the thing run (a script, a module): it joins the prefix.
_NAMED_NEXT = frozenset({"run", "-m"})
# Modules `python3 -m` may be generalised for (their arguments pick tests or files).
_MODULES = frozenset({"pytest", "unittest", "ruff", "black"})


def broader_rule(tool_name: str, tool_input: Mapping[str, Any], param: str = "command") -> str:
    """Return a prefix rule (`Bash(python3 -m pytest:*)`) worth offering for this call, or ""."""
    command = tool_input.get(param)
    if not isinstance(command, str):
        return ""
    prefix = _prefix(command)
    if not prefix:
        return ""
    text = f"{tool_name}({shlex.join(prefix)}:*)"
    try:
        rule = parse_rule(text)
    except RuleError:
        return ""
    decision = evaluate_command(command, PermissionRules(allow=(rule,)), tool=tool_name)
    return text if decision.verdict is Verdict.ALLOW and decision.rule == rule.text else ""


def _prefix(command: str) -> tuple[str, ...]:
    """Return the words a broader rule keeps (program, sub-command, what it names), or ()."""
    parsed = parse_command(command)
    if len(parsed.commands) != 1 or parsed.risky:
        return ()
    simple = parsed.commands[0]
    if simple.assignments or simple.redirects or simple.dynamic or not simple.argv:
        return ()
    argv = simple.argv
    program = argv[0]
    allowed = _SUBCOMMANDS.get(program)
    if allowed is None:
        return ()
    if not allowed:
        return (program,)
    if len(argv) < 2 or argv[1] not in allowed:
        return ()
    if argv[1] not in _NAMED_NEXT:
        return argv[:2]
    if len(argv) < 3 or argv[2].startswith("-"):
        return ()
    if argv[1] == "-m" and argv[2] not in _MODULES:
        return ()
    return argv[:3]
