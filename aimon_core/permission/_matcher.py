"""Decide a Bash command against permission rules.

Every simple command counts: DENY if any normalised form of any command (wrappers, inline
scripts and substitutions included) matches a deny rule; then ASK if one matches an ask
rule; ALLOW only if every command is allowed literally by an allow rule or is a known
read-only command, with no risky construct, no expansion in its words, no risky
``VAR=value`` prefix and no write redirection; ASK otherwise. A whole-tool ``Bash`` allow
rule counts as an allow rule for every command, so the other conditions still apply.

Deny and ask rules are about the effect, not the spelling: options are compared as sets,
and a command that may hide what a rule forbids (``_suspect``) or that names a path a path
rule covers or a protected file it may write (``_bashpaths``) asks instead of being allowed.
"""

from __future__ import annotations

import dataclasses
import logging
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aimon_core.permission._bash import parse_command
from aimon_core.permission._bashpaths import path_problem
from aimon_core.permission._expansions import glob_hatch, glob_problem
from aimon_core.permission._guard import PathGuard
from aimon_core.permission._readonly import (
    assignment_problem,
    escape_hatches,
    is_read_only_argv,
)
from aimon_core.permission._rules import (
    EDIT_TOOLS,
    Decision,
    ExactPattern,
    PermissionRules,
    Rule,
    Verdict,
    command_pattern,
    describe,
    governs,
    match_argv,
)
from aimon_core.permission._suspect import rule_hits, suspicion
from aimon_core.permission._syntax import (
    COULD_NOT_PARSE,
    UNUSUAL_CHARACTERS,
    ParsedCommand,
    Redirect,
    SimpleCommand,
    is_write_redirect,
)
from aimon_core.permission._unwrap import Forms, command_forms

if TYPE_CHECKING:
    from aimon_core.tools import RuleMatcher

log = logging.getLogger(__name__)

READ_ONLY = "read-only command"
_NAMED = 3

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
    """One command that cannot be allowed, and why.

    ``part`` is what needs approval as written: the command, or the redirection that makes it
    a write when the rest of the command is allowed (``partial``). ``unruled``: the only
    trouble is that no rule allows the command (such parts are named together).
    """

    reason: str
    part: str
    unruled: bool = False
    partial: bool = False


def evaluate_command(
    command: str,
    rules: PermissionRules,
    *,
    tool: str = "Bash",
    cwd: Path | None = None,
    project_root: Path | None = None,
) -> Decision:
    """Decide ``command``; ASK means no rule allowed it (the caller consults modes next).

    Args:
        cwd: where the command runs (relative operands); default ``project_root``.
        project_root: where project-relative path rules are anchored; default ``cwd``.
    """
    parsed = parse_command(command)
    forms = [command_forms(c.argv) for c in parsed.commands]
    for verdict, group in ((Verdict.DENY, rules.deny), (Verdict.ASK, rules.ask)):
        for rule in group:
            if governs(rule.tool, tool) and rule_hits(rule, forms):
                return Decision(verdict=verdict, reason=describe(verdict, rule), rule=rule.text)
    root = Path(project_root or cwd or Path.cwd())
    here = Path(cwd or root)
    path_rules = [r for r in (*rules.deny, *rules.ask)
                  if r.specifier is not None and (governs(r.tool, "Read") or r.tool in EDIT_TOOLS)]
    hidden = None if _exactly_allowed(parsed, rules, tool) else suspicion(
        forms, rules, tool, path_rule=path_rules[0] if path_rules else None,
        globs=_glob_words(parsed))
    if hidden is not None:
        return Decision(verdict=Verdict.ASK, reason=hidden)
    guard = PathGuard(rules, root, ask=True)
    paths = path_problem(parsed.commands, forms, guard, cwd=here,
                         read_only=lambda argv: _read_only(argv, here))
    if paths is not None:
        return Decision(verdict=Verdict.ASK, reason=paths)
    if parsed.risky:
        return _risky_decision(parsed)
    if not parsed.commands:
        return Decision(verdict=Verdict.ASK, reason="the command runs nothing that can be checked")
    used: list[Rule] = []
    blocked: list[_Blocked] = []
    for simple, form in zip(parsed.commands, forms, strict=True):
        match _allow(simple, form, rules, tool, here):
            case _Blocked() as why:
                blocked.append(why)
            case _Allowed(rule=by) if by is not None and by not in used:
                used.append(by)
    if blocked:
        return Decision(verdict=Verdict.ASK, reason=_needs_approval(blocked, len(forms)),
                        parts=tuple(dict.fromkeys(b.part for b in blocked)))
    if not used:
        return Decision(verdict=Verdict.ALLOW, reason=READ_ONLY)
    names = ", ".join(r.text for r in used)
    reason = f"allowed by rule {names}" if len(used) == 1 else f"allowed by rules {names}"
    return Decision(verdict=Verdict.ALLOW, reason=reason, rule=used[0].text)


def _exactly_allowed(parsed: ParsedCommand, rules: PermissionRules, tool: str) -> bool:
    """Tell whether every simple command is one an allow rule names word for word.

    Such a rule (`Bash(python3 test_calc.py)`, or an approval remembered for that exact
    command) is the user's explicit decision: it is honoured although a deny rule names
    another program that the command might run inside (`Bash(rm:*)`), since what a program
    does inside is the sandbox's to contain. Deny and ask rules that match the command, its
    normal forms or the paths it names still win; nothing may surround it (no construct, no
    expansion or file name pattern, no assignment, no write redirection).
    """
    if parsed.risky or not parsed.commands:
        return False
    exact = set()
    for rule in rules.allow:
        if governs(rule.tool, tool) and rule.specifier is not None:
            pattern = command_pattern(rule.specifier, rule=rule.text)
            if isinstance(pattern, ExactPattern):
                exact.add(pattern.words)
    return all(
        simple.argv in exact and not simple.dynamic and not simple.globs
        and not simple.assignments and not any(is_write_redirect(r) for r in simple.redirects)
        for simple in parsed.commands)


def _risky_decision(parsed: ParsedCommand) -> Decision:
    """ASK for the first risky construct, naming it as written when the parser saw where."""
    risky = parsed.risky[0]
    reason = _RISKY_REASONS.get(risky, f"{risky} needs approval")
    source = parsed.source_of(risky)
    if not source:
        return Decision(verdict=Verdict.ASK, reason=reason)
    return Decision(verdict=Verdict.ASK, reason=f"{reason}: {_code(source)}", parts=(source,))


def _needs_approval(blocked: list[_Blocked], commands: int) -> str:
    """Say which parts of a command line need approval, and whether the rest is allowed.

    Parts no rule allows are named together (``no rule allows `rm -rf build` or `make```);
    other parts say their own reason; ``(the rest is allowed)`` follows when something else
    on the line was allowed.
    """
    unruled = list(dict.fromkeys(b.part for b in blocked if b.unruled))
    clauses: list[str] = []
    for why in blocked:
        if not why.unruled:
            named = commands == 1 or _code(why.part) in why.reason
            clauses.append(why.reason if named else f"{_code(why.part)}: {why.reason}")
        elif unruled:
            shown = [_code(part) for part in unruled[:_NAMED]]
            if len(unruled) > _NAMED:
                shown.append(f"{len(unruled) - _NAMED} more")
            last = shown.pop()
            clauses.append(f"no rule allows {', '.join(shown)} or {last}" if shown
                           else f"no rule allows {last}")
            unruled = []
    text = "; ".join(dict.fromkeys(clauses))
    rest = len(blocked) < commands or any(b.partial for b in blocked)
    return f"{text} (the rest is allowed)" if rest else text


def _code(source: str) -> str:
    """Return source text as a code span for a message: `rm -rf build`.

    On one line (a line break shows as ``\\n``), non-ASCII escaped (look-alike letters such
    as `rм` stand out, as in `_show`), at most 80 characters; text holding a backtick gets
    double ones.
    """
    text = source.strip().replace("\n", "\\n")
    text = text.encode("ascii", "backslashreplace").decode("ascii")
    text = text if len(text) <= 80 else text[:77] + "..."
    return f"`` {text} ``" if "`" in text else f"`{text}`"


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


def is_read_only_command(command: str, *, cwd: Path | None = None) -> bool:
    """Tell whether the parser proves every simple command is read-only and writes nothing."""
    parsed = parse_command(command)
    if parsed.risky or not parsed.commands:
        return False
    for simple in parsed.commands:
        forms = command_forms(simple.argv)
        if _blocker(simple, forms) is not None or not _read_only(simple.argv, cwd):
            return False
        if glob_problem(simple) is not None:
            return False
    return True


def _read_only(argv: tuple[str, ...], cwd: Path | None) -> bool:
    # git is read-only only where its configuration is inert, so it needs the folder.
    return is_read_only_argv(argv, cwd=cwd)


def _glob_words(parsed: ParsedCommand) -> tuple[frozenset[str], frozenset[str]]:
    """Return the words of the command that are file name patterns, and those that may be
    options, as text (the forms deny rules are matched against are rebuilt from words)."""
    return (frozenset(c.argv[i] for c in parsed.commands for i in c.globs),
            frozenset(c.argv[i] for c in parsed.commands for i in c.option_globs))


def _allow(simple: SimpleCommand, forms: Forms, rules: PermissionRules, tool: str,
           cwd: Path | None) -> _Allowed | _Blocked:
    blocker = _blocker(simple, forms)
    if blocker is not None:
        return _blocked_part(simple, forms, blocker, rules, tool, cwd)
    hatch = ""
    for rule in rules.allow:
        if not governs(rule.tool, tool):
            continue
        if rule.specifier is None:
            return _Allowed(rule=rule)
        start = match_argv(command_pattern(rule.specifier, rule=rule.text), simple.argv)
        if start is None:
            continue
        # Arguments the rule spells out are the user's choice; wildcard ones are not, nor
        # what a pattern among them may expand to.
        vetoes = [reason for index, reason in escape_hatches(simple.argv, cwd=cwd)
                  if index >= start]
        vetoes += filter(None, [glob_hatch(simple, start)])
        if not vetoes:
            return _Allowed(rule=rule)
        hatch = hatch or f"{vetoes[0]}; rule {rule.text} does not cover that"
    read_only = _read_only(simple.argv, cwd)
    expanded = glob_problem(simple) if read_only else None
    if read_only and expanded is None:
        return _Allowed(rule=None)
    part = simple.source or _show(simple.argv)
    if hatch or expanded:
        return _Blocked(reason=hatch or f"{_written(simple)}: {expanded}", part=part)
    return _Blocked(reason=f"no rule allows {_written(simple)}", part=part, unruled=True)


def _blocked_part(simple: SimpleCommand, forms: Forms, blocker: str, rules: PermissionRules,
                  tool: str, cwd: Path | None) -> _Blocked:
    """Return ``simple`` blocked; a write redirection alone is the part when the rest is fine."""
    writes = [r for r in simple.redirects if is_write_redirect(r)]
    part = simple.source or _show(simple.argv)
    if writes and simple.argv and blocker == _redirect_reason(writes[0]):
        rest = dataclasses.replace(
            simple, redirects=tuple(r for r in simple.redirects if r not in writes))
        without = _allow(rest, forms, rules, tool, cwd)
        if isinstance(without, _Allowed):
            return _Blocked(reason=blocker, part=writes[0].source or part, partial=True)
        return without  # not allowed even without the redirection: say why (it keeps `part`)
    return _Blocked(reason=blocker, part=part)


def _blocker(simple: SimpleCommand, forms: Forms) -> str | None:
    """Say why ``simple`` cannot be allowed whatever the rules say, or None."""
    shown = _written(simple)
    if simple.dynamic:
        return f"{shown} uses an expansion whose value is only known when it runs"
    if forms.problems:
        return f"{shown}: {forms.problems[0]}"
    for assignment in simple.assignments:
        problem = assignment_problem(assignment)
        if problem is not None:
            return f"{shown} {problem}"
    if not simple.argv:
        return "a bare assignment or redirection needs approval"
    for redirect in simple.redirects:
        if is_write_redirect(redirect):
            return _redirect_reason(redirect)
    return None


def _redirect_reason(redirect: Redirect) -> str:
    shown = redirect.source or f"{redirect.fd or ''}{redirect.op} {redirect.target}"
    return f"{_code(shown)} writes to a file"


def _written(simple: SimpleCommand) -> str:
    """Return ``simple`` as written, as a code span, or rebuilt from its words."""
    if simple.source:
        return _code(simple.source)
    return f"`{' '.join(filter(None, (*simple.assignments, _show(simple.argv))))}`"


def _show(argv: tuple[str, ...]) -> str:
    # Quote only what would be unreadable; spell out non-ASCII so look-alikes stand out.
    text = " ".join(
        ascii(w) if not w.isascii() else shlex.quote(w) if not w or " " in w else w
        for w in argv
    )
    return text if len(text) <= 80 else text[:77] + "..."


def evaluate_owned(tool: str, matcher: RuleMatcher, tool_input: Mapping[str, Any],
                   rules: PermissionRules) -> Decision | None:
    """Decide `Tool(specifier)` rules that the tool reads itself: deny, then ask, then allow;
    None when none covers the call. A matcher that fails covers the call for deny and ask
    rules and not for allow rules (fail closed)."""
    for verdict, group in ((Verdict.DENY, rules.deny), (Verdict.ASK, rules.ask),
                           (Verdict.ALLOW, rules.allow)):
        for rule in group:
            if rule.specifier is None or not governs(rule.tool, tool):
                continue
            try:
                covered = matcher.matches(rule.specifier, tool_input)
            except Exception:
                log.warning("%s: its rule matcher failed on %s", tool, rule.text, exc_info=True)
                covered = verdict is not Verdict.ALLOW
            if covered:
                return Decision(verdict=verdict, reason=describe(verdict, rule), rule=rule.text)
    return None
