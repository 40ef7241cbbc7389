"""The permission policy chain, and the interactive gate that asks the user when it says ASK.

The chain, first match wins:

1. deny rules (settings and flags) → DENY, whatever the mode or approvals say;
2. plan mode → DENY anything not read-only; bypassPermissions mode → ALLOW;
   then a file tool writing a protected file (``.git/``, a bare git directory, ``.aimon/``,
   ``.claude/``, ``.mcp.json``, shell rc files, see ``_guard``) → ASK, whatever the allow
   rules, approvals and acceptEdits say (Bash writes there ask in the matcher);
3. ask rules → ASK, even for calls the user approved before; then the OS sandbox
   (``_sandboxed``): a call asking to leave it → ASK, a command that runs in it → ALLOW
   when ``autoAllowBashIfSandboxed`` is on;
4. remembered approvals, this turn → this session → this agent → ALLOW;
5. allow rules and read-only defaults (read-only tools and shell commands) → ALLOW;
6. acceptEdits mode: a file edit inside the project or an additional directory (after
   resolving symlinks) → ALLOW;
7. otherwise ASK.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from aimon_core.agent import ApprovalRefused, GateVerdict, RememberedApprovals, ToolGate, Turn
from aimon_core.hook import HookEvent, PermissionDecision
from aimon_core.permission._approvals import (
    AgentApprovalStore,
    ApprovalAnswer,
    ApprovalRequest,
    ApprovalResolved,
    ApprovalScope,
    CompiledApprovals,
    approval_rule,
    check_entry,
    compiled_approvals,
    exact_command_entry,
)
from aimon_core.permission._gate import apply_hint, decide, settled_verdict, unasked_verdict
from aimon_core.permission._guard import protected_reason
from aimon_core.permission._matcher import is_read_only_command
from aimon_core.permission._modes import PermissionMode, check_bypass_allowed
from aimon_core.permission._rules import Decision, PermissionRules, Rule, RuleError, Verdict
from aimon_core.permission._sandboxed import SandboxedBash, sandbox_decision
from aimon_core.tools import CommandSubject, PathSubject, Tool, ToolContext, call_label

log = logging.getLogger(__name__)

Approver = Callable[[ApprovalRequest], Awaitable[ApprovalAnswer]]

_SCOPE_WORDS = {
    ApprovalScope.TURN: "for this turn",
    ApprovalScope.SESSION: "for this session",
    ApprovalScope.AGENT: "for this agent",
}

ApprovalStore = RememberedApprovals


class PermissionPolicy:
    """Decide tool calls from rules, the mode and remembered approvals (see the module docs).

    Args:
        rules: settings and flag rules; their deny and ask rules beat every approval.
        mode: the permission mode; bypassPermissions is checked with ``check_bypass_allowed``.
        project_root: where relative paths and project-relative rules are anchored.
        agent: the agent-scope approval store; None means agent-scope answers are not
            remembered.
        extra_dirs: additional directories whose files acceptEdits mode may edit.
        agent_scope: where agent-scope answers apply, in words (shown with the question).

    The policy belongs to an agent runtime, which every session of the agent shares: it
    holds the rules, the mode and the agent-scope approvals, nothing of any one session.
    "This turn" and "this session" approvals are the session's own; they come with each
    call's Turn (``decide(..., turn=...)``).
    """

    def __init__(
        self,
        rules: PermissionRules,
        mode: PermissionMode,
        project_root: Path,
        agent: AgentApprovalStore | None = None,
        extra_dirs: Iterable[Path] = (),
        agent_scope: str = "",
    ) -> None:
        if mode is PermissionMode.BYPASS:
            check_bypass_allowed()
        self.rules = rules
        self._mode = mode
        self.project_root = Path(project_root)
        self.agent = agent
        self.extra_dirs = tuple(Path(d) for d in extra_dirs)
        # Where an agent-scope approval applies, as the user is told ("agent default in ~/x").
        self.agent_scope = agent_scope
        # The OS sandbox, when it is on and can run (`_sandboxed`); set by the runtime.
        self.sandbox: SandboxedBash | None = None

    @property
    def mode(self) -> PermissionMode:
        """Return the current permission mode."""
        return self._mode

    def set_rules(self, rules: PermissionRules, *, extra_dirs: Iterable[Path] = ()) -> None:
        """Replace the settings' rules and extra directories (settings were reloaded)."""
        self.rules = rules
        self.extra_dirs = tuple(Path(d) for d in extra_dirs)

    def set_mode(self, mode: PermissionMode, *, env: Mapping[str, str] | None = None,
                 euid: int | None = None) -> None:
        """Switch mode; raise PermissionModeError for bypassPermissions as root (no sandbox)."""
        if mode is PermissionMode.BYPASS:
            check_bypass_allowed(env, euid)
        self._mode = mode

    def store(self, scope: ApprovalScope, turn: Turn | None) -> ApprovalStore | None:
        """Return the store that keeps approvals of ``scope`` for ``turn``'s session.

        None for ONCE, for AGENT without an agent store, and for TURN or SESSION without a
        turn (work done for no session remembers nothing).
        """
        match scope:
            case ApprovalScope.TURN:
                return turn.turn_approvals if turn is not None else None
            case ApprovalScope.SESSION:
                return turn.session_approvals if turn is not None else None
            case ApprovalScope.AGENT:
                return self.agent
            case _:
                return None

    def remember(self, scope: ApprovalScope, rule: str, turn: Turn | None) -> bool:
        """Store ``rule`` at ``scope``; False if not stored. Raise RuleError or OSError."""
        store = self.store(scope, turn)
        return store.add(rule) if store is not None and rule else False

    def decide(self, tool: Tool, tool_input: Mapping[str, Any], *, cwd: Path | None = None,
               hint: PermissionDecision | None = None, turn: Turn | None = None) -> Decision:
        """Return the chain's decision on one call.

        Args:
            cwd: the directory relative paths are resolved against (default: the project root).
            hint: a PreToolUse hook's answer, applied last (it never overrides a DENY).
            turn: the execution the call belongs to; its session's turn and session approvals
                count (None: only agent-scope approvals do).
        """
        return apply_hint(self._chain(tool, tool_input, cwd, turn), hint)

    def _chain(self, tool: Tool, tool_input: Mapping[str, Any], cwd: Path | None,
               turn: Turn | None) -> Decision:
        base = decide(tool, tool_input, self.rules, self.project_root, cwd=cwd)
        if base.verdict is Verdict.DENY:
            return base
        here = cwd or self.project_root
        if self._mode is PermissionMode.PLAN and not _is_read_only(tool, tool_input, here):
            return Decision(
                verdict=Verdict.DENY,
                reason=(f"plan mode is on and this {tool.name} call is not read-only; "
                        "present your plan to the user instead of making changes"),
            )
        if self._mode is PermissionMode.BYPASS:
            return Decision(verdict=Verdict.ALLOW, reason="bypassPermissions mode allows it")
        protected = self._protected_write(tool, tool_input, cwd)
        if protected is not None:
            return protected
        if base.verdict is Verdict.ASK and base.rule is not None:
            return base
        sandboxed = sandbox_decision(self.sandbox, tool, tool_input, self.rules,
                                     project_root=self.project_root, cwd=cwd)
        if sandboxed is not None:
            return sandboxed
        remembered = self._remembered(tool, tool_input, cwd, turn)
        if remembered is not None:
            return remembered
        if base.verdict is Verdict.ALLOW:
            return base
        if self._mode is PermissionMode.ACCEPT_EDITS:
            return self._accept_edit(tool, tool_input, cwd) or base
        return base

    def approval_request(self, tool: Tool, tool_input: Mapping[str, Any], decision: Decision,
                         *, cwd: Path | None = None, tool_use_id: str = "") -> ApprovalRequest:
        """Return the request to show the user for a call the chain answered ASK."""
        rule = approval_rule(tool, tool_input, project_root=self.project_root, cwd=cwd)
        agent_rule = approval_rule(tool, tool_input, project_root=self.project_root, cwd=cwd,
                                   absolute=True)
        return ApprovalRequest(
            id=uuid.uuid4().hex[:12], tool_name=tool.name, tool_input=tool_input,
            subject_text=_subject_text(tool, tool_input), reason=decision.reason,
            suggested_rule=rule, agent_rule=agent_rule, agent_scope=self.agent_scope,
            tool_use_id=tool_use_id,
        )

    def _stores(self, turn: Turn | None) -> list[tuple[ApprovalScope, CompiledApprovals]]:
        scopes = (ApprovalScope.TURN, ApprovalScope.SESSION, ApprovalScope.AGENT)
        return [(s, compiled_approvals(store.entries())) for s in scopes
                if (store := self.store(s, turn)) is not None]

    def _remembered(self, tool: Tool, tool_input: Mapping[str, Any],
                    cwd: Path | None, turn: Turn | None) -> Decision | None:
        command = _command_of(tool, tool_input)
        stores = self._stores(turn)
        for scope, store in stores:
            words = _SCOPE_WORDS[scope]
            if command is not None and (tool.name, command.strip()) in store.commands:
                entry = exact_command_entry(tool.name, command)
                return Decision(verdict=Verdict.ALLOW, reason=f"allowed {words} ({entry})",
                                rule=entry)
            rules = store.rules
            if not rules.allow:
                continue
            # The settings' deny and ask rules still count: an approval of `python3:*` does
            # not prove that `python3 -c ...` stays outside `Bash(touch:*)`.
            found = decide(tool, tool_input, self._with_settings_limits(rules.allow),
                           self.project_root, cwd=cwd)
            if found.verdict is Verdict.ALLOW and found.rule is not None:
                return Decision(verdict=Verdict.ALLOW, reason=f"allowed {words} ({found.rule})",
                                rule=found.rule)
        if command is None:
            return None
        # `npm test && make` may be allowed by two rules from different scopes or settings.
        allow = [*self.rules.allow, *(r for _, store in stores for r in store.rules.allow)]
        if len(allow) < 2:
            return None
        joint = decide(tool, tool_input, self._with_settings_limits(tuple(dict.fromkeys(allow))),
                       self.project_root, cwd=cwd)
        if joint.verdict is Verdict.ALLOW and joint.rule is not None:
            return Decision(verdict=Verdict.ALLOW,
                            reason=f"{joint.reason} (remembered approvals and settings together)",
                            rule=joint.rule)
        return None

    def _with_settings_limits(self, allow: tuple[Rule, ...]) -> PermissionRules:
        return PermissionRules(allow=allow, ask=self.rules.ask, deny=self.rules.deny)

    def _protected_write(self, tool: Tool, tool_input: Mapping[str, Any],
                         cwd: Path | None) -> Decision | None:
        """Return ASK for a file tool writing a protected file (``.git/``, rc files ...)."""
        written = self._written_path(tool, tool_input, cwd)
        if written is None:
            return None
        joined, real = written
        for spelling in (os.path.normpath(joined), str(real)):
            reason = protected_reason(spelling)
            if reason is not None:
                return Decision(verdict=Verdict.ASK,
                                reason=f"{real} is part of {reason}; writing there always asks")
        return None

    def _written_path(self, tool: Tool, tool_input: Mapping[str, Any],
                      cwd: Path | None) -> tuple[Path, Path] | None:
        """Return the path a file tool writes, as given (joined to cwd) and resolved."""
        subject = tool.subject
        if not isinstance(subject, PathSubject) or not subject.writes:
            return None
        path = tool_input.get(subject.param)
        if not isinstance(path, str) or not path or "\x00" in path:
            return None
        joined = Path(cwd or self.project_root).absolute() / os.path.expanduser(path)  # noqa: PTH111
        return joined, Path(os.path.realpath(joined))

    def _accept_edit(self, tool: Tool, tool_input: Mapping[str, Any],
                     cwd: Path | None) -> Decision | None:
        written = self._written_path(tool, tool_input, cwd)
        if written is None:
            return None
        real = written[1]
        for root in (self.project_root, *self.extra_dirs):
            base = Path(os.path.realpath(root))
            if not real.is_relative_to(base):
                continue
            protected = protected_reason(str(real))
            if protected is not None:
                return Decision(
                    verdict=Verdict.ASK,
                    reason=f"{real} is part of {protected}; acceptEdits mode still asks",
                )
            return Decision(verdict=Verdict.ALLOW,
                            reason=f"acceptEdits mode allows edits inside {base}")
        return None


def _command_of(tool: Tool, tool_input: Mapping[str, Any]) -> str | None:
    if isinstance(tool.subject, CommandSubject):
        command = tool_input.get(tool.subject.param)
        return command if isinstance(command, str) else None
    return None


def _is_read_only(tool: Tool, tool_input: Mapping[str, Any], cwd: Path | None) -> bool:
    if isinstance(tool.subject, CommandSubject):
        command = _command_of(tool, tool_input)
        return command is not None and is_read_only_command(command, cwd=cwd)
    return tool.read_only


def _subject_text(tool: Tool, tool_input: Mapping[str, Any]) -> str:
    match tool.subject:
        case CommandSubject(param=param) | PathSubject(param=param):
            return str(tool_input.get(param, ""))
        case _:
            text = json.dumps(dict(tool_input), ensure_ascii=False, default=str)
            return text if len(text) <= 200 else text[:197] + "..."


def denied_message(reason: str = "") -> str:
    """Return what the model is told when the user denies a call."""
    said = f' The user said: "{reason.strip()}".' if reason.strip() else ""
    return (f"The user denied this tool call.{said} "
            "Do not retry it; adjust your approach or ask the user.")


def interactive_gate(policy: PermissionPolicy) -> ToolGate:
    """Return a gate that runs the policy and, when it says ASK, asks through the turn.

    The call's Turn (``ctx.turn``) brings the session's turn and session approvals, the
    hooks (PermissionRequest hooks may allow or deny the call for the user before asking),
    the asker and the event sink. With no one to ask (no turn, ``turn.ask`` None or answering
    None: print mode) an ASK is refused with the ``--allowed-tools`` flag that would allow it.
    Questions are asked one at a time; a call that waited is decided again first, since the
    answer before it may cover it. Cancelling the turn while the user is being asked cancels
    the question too.
    """
    lock = asyncio.Lock()

    async def gate(tool: Tool, tool_input: Mapping[str, Any], ctx: ToolContext, *,
                   hint: PermissionDecision | None = None,
                   tool_use_id: str = "") -> GateVerdict:
        verdict = await decided(tool, tool_input, ctx, hint, tool_use_id)
        if verdict.allowed and not tool.read_only and _is_read_only(tool, tool_input, ctx.cwd):
            # The same check plan mode trusts; the command's parse is cached by now.
            return dataclasses.replace(verdict, read_only=True)
        return verdict

    async def decided(tool: Tool, tool_input: Mapping[str, Any], ctx: ToolContext,
                      hint: PermissionDecision | None, tool_use_id: str) -> GateVerdict:
        turn = ctx.turn
        decision = policy.decide(tool, tool_input, cwd=ctx.cwd, hint=hint, turn=turn)
        refused = _Refusals(turn, tool_use_id, policy, tool, tool_input)
        if decision.verdict is not Verdict.ASK:
            return refused.settled(decision)
        hooked = await _permission_request_hooks(turn, tool_use_id, tool, tool_input)
        if hooked is not None:
            return hooked if hooked.allowed else refused.denied(hooked)
        if turn is None or turn.ask is None:
            rule = approval_rule(tool, tool_input, project_root=policy.project_root, cwd=ctx.cwd)
            return refused.unasked(decision, rule)
        async with lock:
            decision = policy.decide(tool, tool_input, cwd=ctx.cwd, hint=hint, turn=turn)
            if decision.verdict is not Verdict.ASK:
                return refused.settled(decision)
            request = policy.approval_request(tool, tool_input, decision, cwd=ctx.cwd,
                                              tool_use_id=tool_use_id)
            preview = (await asyncio.to_thread(tool.preview, tool_input, ctx.cwd)
                       if tool.preview is not None else None)  # reads the file: off the loop
            request = dataclasses.replace(request, preview=preview, label=call_label(
                tool.name, tool_input, tool.describe, policy.project_root))
            answer = await turn.ask(request)
            if answer is None:
                return refused.unasked(decision, request.suggested_rule)
            if answer.updated_input is not None:  # remember nothing for an edited call
                answer = dataclasses.replace(answer, scope=ApprovalScope.ONCE)
            remembered = await _remember(policy, request, answer, turn)
            turn.emit(ApprovalResolved(request_id=request.id, answer=answer,
                                       remembered=remembered))
        if answer.allowed and answer.updated_input is not None:
            return _edited(policy, tool, answer.updated_input, ctx, turn)
        if answer.allowed:
            return GateVerdict(allowed=True, decided_by=f"user ({answer.scope.value})")
        return GateVerdict(allowed=False, message=denied_message(answer.reason),
                           decided_by="user")

    return gate


def _edited(policy: PermissionPolicy, tool: Tool, edited: Mapping[str, Any], ctx: ToolContext,
            turn: Turn | None) -> GateVerdict:
    """Return the verdict on a call the person edited and allowed: it runs as edited,
    unless the rules deny the edited form (the person's approval lifts asks, not denies)."""
    decision = policy.decide(tool, edited, cwd=ctx.cwd, turn=turn)
    if decision.verdict is Verdict.DENY:
        return GateVerdict(allowed=False, decided_by=decision.reason,
                           message=f"The user edited this call, and the edited form is denied: "
                                   f"{decision.reason}.")
    return GateVerdict(allowed=True, decided_by="user (edited)", updated_input=dict(edited))


class _Refusals:
    """Emit `ApprovalRefused` for a call refused without asking, and return the verdict."""

    def __init__(self, turn: Turn | None, tool_use_id: str, policy: PermissionPolicy,
                 tool: Tool, tool_input: Mapping[str, Any]) -> None:
        self._turn, self._tool_use_id, self._tool, self._input = (
            turn, tool_use_id, tool, tool_input)
        self._label = call_label(tool.name, tool_input, tool.describe, policy.project_root)

    def settled(self, decision: Decision) -> GateVerdict:
        """Return an ALLOW or DENY decision's verdict (a DENY is told as refused)."""
        verdict = settled_verdict(decision, decided_by=decision.reason)
        if not verdict.allowed:
            self._emit(decision.reason, denied=True)
        return verdict

    def denied(self, verdict: GateVerdict) -> GateVerdict:
        """Tell a denial a hook decided; return it."""
        self._emit(verdict.message, denied=True)
        return verdict

    def unasked(self, decision: Decision, rule: str) -> GateVerdict:
        """Refuse an ASK nobody can answer; `rule` is what an approval would remember."""
        self._emit(decision.reason, denied=False, rule=rule)
        return unasked_verdict(self._tool, self._input, decision)

    def _emit(self, reason: str, *, denied: bool, rule: str = "") -> None:
        if self._turn is None:
            return
        self._turn.emit(ApprovalRefused(
            tool_use_id=self._tool_use_id, tool_name=self._tool.name,
            tool_input=dict(self._input), label=self._label, reason=reason, denied=denied,
            suggested_rule=rule))


async def _permission_request_hooks(
    turn: Turn | None, tool_use_id: str, tool: Tool, tool_input: Mapping[str, Any],
) -> GateVerdict | None:
    """Let PermissionRequest hooks answer for the user; None when none decided."""
    hooks = turn.hooks if turn is not None else None
    if hooks is None or not hooks.active(HookEvent.PERMISSION_REQUEST, tool.name):
        return None
    from aimon_core.hook import PermissionRequestInput  # the input types load when one fires

    result = await hooks.fire(PermissionRequestInput(
        tool_name=tool.name, tool_input=dict(tool_input), tool_use_id=tool_use_id or None))
    if result.permission is PermissionDecision.ALLOW:
        return GateVerdict(allowed=True, decided_by=f"PermissionRequest hook {result.source}")
    if result.permission is PermissionDecision.DENY or result.blocked:
        reason = result.feedback or "a PermissionRequest hook denied this call"
        return GateVerdict(allowed=False, message=f"Permission denied: {reason}",
                           decided_by=f"PermissionRequest hook {result.source}")
    return None


async def _remember(policy: PermissionPolicy, request: ApprovalRequest,
                    answer: ApprovalAnswer, turn: Turn) -> str:
    """Store an allowing answer at its scope (the turn's session's, or the agent's); return
    the entry stored, or ""."""
    if not answer.allowed or answer.scope is ApprovalScope.ONCE:
        return ""
    agent = answer.scope is ApprovalScope.AGENT
    suggested = request.agent_rule if agent else request.suggested_rule
    rule = suggested
    if answer.rule:
        try:
            rule = check_entry(answer.rule)
        except RuleError as exc:
            log.warning("remembering %s instead of the answer's rule: %s", suggested, exc)
    if not rule:
        return ""
    try:
        if agent:
            stored = await asyncio.to_thread(policy.remember, answer.scope, rule, turn)
        else:
            stored = policy.remember(answer.scope, rule, turn)
    except OSError as exc:
        log.warning("could not remember the approval %s: %s", rule, exc)
        return ""
    return rule if stored or _kept(policy, answer.scope, rule, turn) else ""


def _kept(policy: PermissionPolicy, scope: ApprovalScope, rule: str, turn: Turn) -> bool:
    """Tell whether ``rule`` is among the entries kept at ``scope`` (added before)."""
    store = policy.store(scope, turn)
    return store is not None and rule in store.entries()
