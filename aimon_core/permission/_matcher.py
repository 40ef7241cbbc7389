"""Decide a Bash command against permission rules.

Every simple command counts: DENY if any normalised form of any command (wrappers, inline
scripts and substitutions included) matches a deny rule; then ASK if one matches an ask
rule; ALLOW only if every command is allowed literally by an allow rule or is a known
read-only command, with no risky construct, no expansion in its words, no risky
``VAR=value`` prefix and no write redirection; ASK otherwise. A whole-tool ``Bash`` allow
rule counts as an allow rule for every command, so the other conditions still apply.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from aimon_core.permission._bash import parse_command
from aimon_core.permission._readonly import (
    assignment_problem,
    escape_hatches,
    is_read_only_argv,
)
from aimon_core.permission._rules import (
    Decision,
    PermissionRules,
    Rule,
    Verdict,
    command_pattern,
    describe,
    governs,
    match_argv,
)
from aimon_core.permission._syntax import (
    COULD_NOT_PARSE,
    UNUSUAL_CHARACTERS,
    Redirect,
    SimpleCommand,
)
from aimon_core.permission._unwrap import Forms, command_forms

READ_ONLY = "read-only command"

_OUTPUT_OPS = frozenset({">", ">>", "&>", "&>>", ">|", "<>"})
_INPUT_OPS = frozenset({"<", "<<", "<<-", "<<<", ">&-", "<&-"})
_HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_FD = re.compile(r"\d+-?|-")
_RISKY_REASONS = {
    COULD_NOT_PARSE: "the command could not be fully parsed, so it needs approval",
    UNUSUAL_CHARACTERS: "the command contains unusual (control, zero-width or bidi) characters",
    "command substitution": "`$(...)` command substitution needs approval",
    "process substitution": "`<(...)` process substitution needs approval",
    "subshell": "a `( ... )` subshell needs approval",
    "brace group": "a `{ ...; }` group needs approval",
    "arithmetic command": "a `(( ... ))` arithmetic command needs approval",
    "control flow": "control flow (`if`, `for`, `while`, `case`) needs approval",
    "function definition": "a function definition needs approval",
    "eval": "`eval` needs approval",
    "heredoc with expansion": "a heredoc that expands `$...` needs approval",
    "command name is an expansion": "a command name that is an expansion (`$CMD`) needs approval",
    "command name is a glob": "a command name that is a glob needs approval",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class _Allowed:
    """One command allowed by ``rule``, or by the read-only list when ``rule`` is None."""

    rule: Rule | None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Blocked:
    """One command that no rule allows, and why."""

    reason: str


def evaluate_command(command: str, rules: PermissionRules, *, tool: str = "Bash") -> Decision:
    """Decide ``command``; ASK means no rule allowed it (the caller consults modes next)."""
    parsed = parse_command(command)
    forms = [command_forms(c.argv) for c in parsed.commands]
    for verdict, group in ((Verdict.DENY, rules.deny), (Verdict.ASK, rules.ask)):
        for rule in group:
            if governs(rule.tool, tool) and _rule_hits(rule, forms):
                return Decision(verdict=verdict, reason=describe(verdict, rule), rule=rule.text)
    if parsed.risky:
        risky = parsed.risky[0]
        reason = _RISKY_REASONS.get(risky, f"{risky} needs approval")
        return Decision(verdict=Verdict.ASK, reason=reason)
    if not parsed.commands:
        return Decision(verdict=Verdict.ASK, reason="the command runs nothing that can be checked")
    used: list[Rule] = []
    for simple, form in zip(parsed.commands, forms, strict=True):
        match _allow(simple, form, rules, tool):
            case _Blocked(reason=reason):
                return Decision(verdict=Verdict.ASK, reason=reason)
            case _Allowed(rule=by) if by is not None and by not in used:
                used.append(by)
    if not used:
        return Decision(verdict=Verdict.ALLOW, reason=READ_ONLY)
    names = ", ".join(r.text for r in used)
    reason = f"allowed by rule {names}" if len(used) == 1 else f"allowed by rules {names}"
    return Decision(verdict=Verdict.ALLOW, reason=reason, rule=used[0].text)


def evaluate_tool(tool: str, rules: PermissionRules) -> Decision | None:
    """Decide ``tool`` from whole-tool rules such as ``Read``; None when no rule names it."""
    for verdict, group in (
        (Verdict.DENY, rules.deny),
        (Verdict.ASK, rules.ask),
        (Verdict.ALLOW, rules.allow),
    ):
        for rule in group:
            if rule.specifier is None and governs(rule.tool, tool):
                return Decision(verdict=verdict, reason=describe(verdict, rule), rule=rule.text)
    return None


def is_read_only_command(command: str) -> bool:
    """Tell whether the parser proves every simple command is read-only and writes nothing."""
    parsed = parse_command(command)
    if parsed.risky or not parsed.commands:
        return False
    for simple in parsed.commands:
        forms = command_forms(simple.argv)
        if _blocker(simple, forms) is not None or not is_read_only_argv(simple.argv):
            return False
    return True


def _rule_hits(rule: Rule, forms: list[Forms]) -> bool:
    if rule.specifier is None:
        return True
    pattern = command_pattern(rule.specifier, rule=rule.text)
    return any(match_argv(pattern, argv) is not None for f in forms for argv in f.argvs)


def _allow(simple: SimpleCommand, forms: Forms, rules: PermissionRules, tool: str) -> (
    _Allowed | _Blocked
):
    blocker = _blocker(simple, forms)
    if blocker is not None:
        return _Blocked(reason=blocker)
    hatch = ""
    for rule in rules.allow:
        if not governs(rule.tool, tool):
            continue
        if rule.specifier is None:
            return _Allowed(rule=rule)
        start = match_argv(command_pattern(rule.specifier, rule=rule.text), simple.argv)
        if start is None:
            continue
        # Arguments the rule spells out are the user's choice; wildcard ones are not.
        vetoes = [reason for index, reason in escape_hatches(simple.argv) if index >= start]
        if not vetoes:
            return _Allowed(rule=rule)
        hatch = hatch or f"{vetoes[0]}; rule {rule.text} does not cover that"
    if is_read_only_argv(simple.argv):
        return _Allowed(rule=None)
    return _Blocked(reason=hatch or f"no rule allows `{_show(simple.argv)}`")


def _blocker(simple: SimpleCommand, forms: Forms) -> str | None:
    """Say why ``simple`` cannot be allowed whatever the rules say, or None."""
    shown = _show(simple.argv)
    if simple.dynamic:
        return f"`{shown}` uses an expansion whose value is only known when it runs"
    if forms.problems:
        return f"`{shown}`: {forms.problems[0]}"
    for assignment in simple.assignments:
        problem = assignment_problem(assignment)
        if problem is not None:
            return f"`{' '.join(filter(None, (assignment, shown)))}` {problem}"
    if not simple.argv:
        return "a bare assignment or redirection needs approval"
    for redirect in simple.redirects:
        if is_write_redirect(redirect):
            return f"`{redirect.fd or ''}{redirect.op} {redirect.target}` writes to a file"
    return None


def is_write_redirect(redirect: Redirect) -> bool:
    """Tell whether a redirection may write to a file (fd duplication and /dev/null do not)."""
    if redirect.op in {">&", "<&"}:
        if _FD.fullmatch(redirect.target):
            return False
        return redirect.op == ">&" and (
            redirect.dynamic or redirect.target not in _HARMLESS_TARGETS
        )
    if redirect.op in _OUTPUT_OPS:
        return redirect.dynamic or redirect.target not in _HARMLESS_TARGETS
    return redirect.op not in _INPUT_OPS


def _show(argv: tuple[str, ...]) -> str:
    # Quote only what would be unreadable; spell out non-ASCII so look-alikes stand out.
    text = " ".join(
        ascii(w) if not w.isascii() else shlex.quote(w) if not w or " " in w else w
        for w in argv
    )
    return text if len(text) <= 80 else text[:77] + "..."
