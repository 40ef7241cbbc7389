"""The print-mode tool gate: rules decide; what no rule allows is refused, never asked."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aimon_core.agent import GateVerdict, ToolGate
from aimon_core.hook import PermissionDecision
from aimon_core.permission._bash import parse_command
from aimon_core.permission._guard import PathGuard
from aimon_core.permission._matcher import evaluate_command, evaluate_owned, evaluate_tool
from aimon_core.permission._paths import evaluate_path
from aimon_core.permission._rules import Decision, PermissionRules, Verdict, describe, governs
from aimon_core.tools import (
    CommandSubject,
    DomainSubject,
    NameSubject,
    PathSubject,
    RuleSubject,
    ServerSubject,
    Tool,
    ToolContext,
    subject_name,
    url_host,
)

PRINT_MODE = "print mode"
HOOK = "PreToolUse hook"


def decide(tool: Tool, tool_input: Mapping[str, Any], rules: PermissionRules,
           project_root: Path, *, cwd: Path | None = None) -> Decision:
    """Return the rules' decision on one call; ASK when no rule and no default allows it."""
    whole = evaluate_tool(tool.name, rules)
    if whole is not None and whole.verdict is Verdict.DENY:
        return whole
    match tool.subject:
        case CommandSubject(param=param):
            command = tool_input.get(param)
            if not isinstance(command, str):
                return Decision(verdict=Verdict.ASK, reason="no command given")
            return evaluate_command(command, rules, tool=tool.name, cwd=cwd,
                                    project_root=project_root)
        case PathSubject(param=param, writes=writes):
            path = tool_input.get(param)
            if isinstance(path, str) and path:
                decision = evaluate_path(tool.name, path, rules, project_root=project_root,
                                         cwd=cwd)
                if decision.verdict is not Verdict.DENY:
                    decision = _hard_link(path, rules, project_root, cwd, writes) or decision
                # An ASK that names a rule is an ask rule; other ASKs mean "no rule allows".
                if decision.verdict is not Verdict.ASK or decision.rule is not None:
                    return decision
        case NameSubject(param=param):
            name = tool_input.get(param)
            named = decide_name(tool.name, name, rules) if isinstance(name, str) else None
            if named is not None:
                return named
        case ServerSubject(param=param):
            server = tool_input.get(param)
            reached = _by_server(tool.name, server if isinstance(server, str) else None, rules)
            if reached is not None:
                return reached
        case RuleSubject(matcher=matcher):
            return evaluate_owned(tool.name, matcher, tool_input, rules) or _default(tool, whole)
        case DomainSubject(param=param):
            return _by_domain(tool.name, tool_input.get(param), whole, rules)
        case _:
            pass
    return _default(tool, whole)


def _default(tool: Tool, whole: Decision | None) -> Decision:
    """Decide a call no rule on its subject decided: a whole-tool rule, else read-only."""
    if whole is not None:
        return whole
    if tool.read_only:
        return Decision(verdict=Verdict.ALLOW, reason=f"{tool.name} is read-only")
    return Decision(verdict=Verdict.ASK, reason=f"no rule allows {tool.name}")


def decide_name(tool: str, name: str, rules: PermissionRules) -> Decision | None:
    """Decide rules that name what `tool` starts (`Skill(review)`, `Task(explore)`, Claude
    Code's `Agent(explore)`): deny, then ask, then allow; None when no rule names it.

    Names on both sides are read as the tools read them (`subject_name`: `/review` is
    `review`), so a spelling the tool accepts is one the rule matches.
    """
    wanted = subject_name(name)
    for verdict, group in ((Verdict.DENY, rules.deny), (Verdict.ASK, rules.ask),
                           (Verdict.ALLOW, rules.allow)):
        for rule in group:
            if (governs(rule.tool, tool) and rule.specifier is not None
                    and subject_name(rule.specifier) == wanted):
                return Decision(verdict=verdict, reason=describe(verdict, rule), rule=rule.text)
    return None


def decide_domain(tool: str, url: str, rules: PermissionRules) -> Decision | None:
    """Decide `Tool(domain:HOST)` rules for a call that reaches `url`'s host: deny, then ask,
    then allow; None when no rule covers the host. A URL with no http(s) host is denied."""
    from aimon_core.shell import domain_matches

    found = url_host(url)
    if found is None:
        return Decision(verdict=Verdict.DENY, reason=f"{tool} takes an http or https URL")
    host, port = found
    for verdict, group in ((Verdict.DENY, rules.deny), (Verdict.ASK, rules.ask),
                           (Verdict.ALLOW, rules.allow)):
        for rule in group:
            spec = rule.specifier or ""
            if (governs(rule.tool, tool) and spec.startswith("domain:")
                    and domain_matches(spec.removeprefix("domain:"), host, port)):
                return Decision(verdict=verdict, reason=describe(verdict, rule), rule=rule.text)
    return None


def _by_domain(tool: str, url: object, whole: Decision | None,
               rules: PermissionRules) -> Decision:
    """Decide a call that reaches a URL's host: its domain rules, else a rule on the whole
    tool, else ASK: reaching a host is never presumed harmless, whatever the tool reads."""
    reached = decide_domain(tool, url if isinstance(url, str) else "", rules)
    if reached is not None:
        return reached
    if whole is not None:
        return whole
    found = url_host(url) if isinstance(url, str) else None
    return Decision(verdict=Verdict.ASK, reason=(
        f"no rule allows {tool} to reach {found[0] if found else 'that address'}"))


def decide_server(server: str, rules: PermissionRules) -> Decision | None:
    """Decide the rules on a whole MCP server (`mcp__github`, `mcp__github__*`) for something
    that reaches it without a tool of its own: its resources, an `@github:uri` mention, a
    prompt of it run as a slash command. Deny, then ask; None when no rule names it."""
    probe = f"mcp__{server}__"
    for verdict, group in ((Verdict.DENY, rules.deny), (Verdict.ASK, rules.ask)):
        for rule in group:
            if rule.specifier is None and governs(rule.tool, probe):
                return Decision(verdict=verdict, reason=describe(verdict, rule), rule=rule.text)
    return None


def _by_server(tool: str, server: str | None, rules: PermissionRules) -> Decision | None:
    """Decide a call that reaches one MCP server (or, with no server named, all of them)."""
    if server is not None:
        return decide_server(server, rules)
    for rule in rules.deny:
        if rule.specifier is None and rule.tool.startswith("mcp__") and \
                rule.tool.removesuffix("__*").count("__") == 1:
            return Decision(verdict=Verdict.DENY, rule=rule.text, reason=(
                f"{tool} without a server reaches every MCP server, and rule {rule.text} "
                "denies one of them; name the server (server=...)"))
    return None


def _hard_link(path: str, rules: PermissionRules, project_root: Path, cwd: Path | None,
               writes: bool) -> Decision | None:
    """DENY a path that is another name (a hard link) of a file a deny rule names."""
    rule = PathGuard(rules, project_root).covering(path, cwd=cwd, writes=writes)
    if rule is None:
        return None
    return Decision(verdict=Verdict.DENY, rule=rule.text,
                    reason=f"{path} is the same file as one denied by rule {rule.text}")


def apply_hint(decision: Decision, hint: PermissionDecision | None) -> Decision:
    """Apply a PreToolUse hook's answer: ALLOW skips asking, ASK asks, DENY denies.

    Any DENY already reached (deny rules, plan mode) stands whatever the hook says.
    """
    if hint is None or decision.verdict is Verdict.DENY:
        return decision
    match hint:
        case PermissionDecision.DENY:
            return Decision(verdict=Verdict.DENY, reason=f"a {HOOK} denied it")
        case PermissionDecision.ALLOW if decision.verdict is Verdict.ASK:
            return Decision(verdict=Verdict.ALLOW, reason=f"a {HOOK} allowed it")
        case PermissionDecision.ASK if decision.verdict is Verdict.ALLOW:
            return Decision(verdict=Verdict.ASK, reason=f"a {HOOK} requires approval")
        case _:
            return decision


def allowed_tools_hint(tool: Tool, tool_input: Mapping[str, Any],
                       parts: tuple[str, ...] = ()) -> str:
    """Return the ``--allowed-tools`` flag that would allow a call like this one.

    ``parts`` (a decision's parts that need approval) name the program: for ``git status &&
    make`` the flag is about ``make``, not ``git``.
    """
    if isinstance(tool.subject, CommandSubject):
        programs = [c.argv[0] for part in parts for c in parse_command(part).commands if c.argv]
        command = str(tool_input.get(tool.subject.param, "")).split()
        program = programs[0] if programs else command[0] if command else "COMMAND"
        return f'--allowed-tools "{tool.name}({program}:*)"'
    if isinstance(tool.subject, DomainSubject):
        url = tool_input.get(tool.subject.param)
        found = url_host(url) if isinstance(url, str) else None
        if found is not None:
            return f'--allowed-tools "{tool.name}(domain:{found[0]})"'
    return f'--allowed-tools "{tool.name}"'


def settled_verdict(decision: Decision, *, decided_by: str = "") -> GateVerdict:
    """Turn an ALLOW or DENY decision into the gate's answer."""
    decided_by = decided_by or decision.rule or decision.reason
    if decision.verdict is Verdict.ALLOW:
        return GateVerdict(allowed=True, decided_by=decided_by)
    return GateVerdict(
        allowed=False,
        message=f"Permission denied: {decision.reason}. Do not retry this call.",
        decided_by=decided_by,
    )


def unasked_verdict(tool: Tool, tool_input: Mapping[str, Any], decision: Decision, *,
                    decided_by: str = PRINT_MODE) -> GateVerdict:
    """Refuse an ASK decision when nobody can be asked, naming the flag that would allow it."""
    flag = allowed_tools_hint(tool, tool_input, decision.parts)
    return GateVerdict(
        allowed=False,
        message=(
            f"Permission needed: {decision.reason}, and print mode cannot ask the user. "
            f"The user can allow it by running aimon with {flag}. "
            "Continue without it if you can, or say what you need."
        ),
        decided_by=decided_by,
    )


def print_mode_gate(rules: PermissionRules, *, project_root: Path) -> ToolGate:
    """Return a gate for runs without a person to ask: ASK becomes a refusal with a hint."""

    async def gate(tool: Tool, tool_input: Mapping[str, Any], ctx: ToolContext, *,
                   hint: PermissionDecision | None = None,
                   tool_use_id: str = "") -> GateVerdict:
        decision = apply_hint(decide(tool, tool_input, rules, project_root, cwd=ctx.cwd), hint)
        if decision.verdict is Verdict.ASK:
            return unasked_verdict(tool, tool_input, decision)
        return settled_verdict(decision)

    return gate
