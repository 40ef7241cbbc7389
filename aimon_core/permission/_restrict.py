"""An agent's tool list narrows what its tools may do: `Bash(git:*)` allows git only.

An agent file may name a tool with a pattern (`tools: Read, Bash(git:*)`). The runtime then
offers the tool, but a call is allowed to reach the permission policy only when one of the
tool's patterns covers it, literally, as an allow rule would (read-only commands are not
covered unless a pattern names them). Everything else is denied, in every mode.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from aimon_core.agent import GateVerdict, ToolGate
from aimon_core.hook import PermissionDecision
from aimon_core.permission._gate import decide
from aimon_core.permission._rules import PermissionRules, Verdict, parse_rule
from aimon_core.tools import Tool, ToolContext


def tool_restrictions(entries: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Return, per tool, the patterns an agent's tool list allows (a bare name: no limit).

    Raises RuleError for an entry that is not a valid rule.
    """
    patterns: dict[str, list[str]] = {}
    bare: set[str] = set()
    for entry in entries:
        rule = parse_rule(entry)
        if rule.specifier is None:
            bare.add(rule.tool)
        else:
            patterns.setdefault(rule.tool, []).append(rule.text)
    return {tool: tuple(rules) for tool, rules in patterns.items() if tool not in bare}


def restricted_gate(inner: ToolGate, restrictions: Mapping[str, tuple[str, ...]], *,
                    project_root: Path, agent: str) -> ToolGate:
    """Return a gate that denies calls outside the agent's patterns, then asks `inner`."""
    if not restrictions:
        return inner
    rules = {tool: PermissionRules.parse(allow=allowed) for tool, allowed in restrictions.items()}

    async def gate(tool: Tool, tool_input: Mapping[str, Any], ctx: ToolContext, *,
                   hint: PermissionDecision | None = None,
                   tool_use_id: str = "") -> GateVerdict:
        allowed = rules.get(tool.name)
        if allowed is not None:
            decision = decide(tool, tool_input, allowed, project_root, cwd=ctx.cwd)
            if decision.verdict is not Verdict.ALLOW or decision.rule is None:
                only = ", ".join(restrictions[tool.name])
                return GateVerdict(
                    allowed=False, decided_by=f"agent {agent}'s tool list",
                    message=(f"Permission denied: agent {agent!r} may use {tool.name} only as "
                             f"{only}. Do not retry this call; stay within those patterns."))
        return await inner(tool, tool_input, ctx, hint=hint, tool_use_id=tool_use_id)

    return gate
