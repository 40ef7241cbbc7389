"""The permission side of the OS sandbox: auto-allowed commands, excluded ones, network questions.

With `sandbox.autoAllowBashIfSandboxed`, a Bash command that will run inside the sandbox is not
asked about: the sandbox, not the parse, is what keeps it harmless. Deny rules still deny,
ask rules still ask, and a command that asks only because aimon cannot show it stays outside
a deny or ask rule still asks (the rule is about the effect). `excludedCommands` and a call
that asks to leave the sandbox (`dangerouslyDisableSandbox`) go through the normal rules; the
latter is always a question.

`NetworkQuestions` decides the sandbox proxy's connections: `sandbox.network.deniedDomains`
and `WebFetch(domain:...)` deny rules refuse, `allowedDomains` and `WebFetch(domain:...)` allow
rules (settings and remembered approvals) allow, anything else is asked through the session's
approval questions; with nobody to ask (print mode) it is refused and named.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aimon_core.agent import ApprovalRequest, Turn
from aimon_core.permission._approvals import ApprovalResolved, ApprovalScope
from aimon_core.permission._matcher import evaluate_command
from aimon_core.permission._rules import Decision, PermissionRules, Rule, Verdict
from aimon_core.tools import CommandSubject, Tool

if TYPE_CHECKING:
    from aimon_core.config import SandboxSettings
    from aimon_core.permission._policy import PermissionPolicy
    from aimon_core.shell import NetworkVerdict, SandboxConfig, SandboxPaths

LEAVE_PARAM = "dangerouslyDisableSandbox"
_DOMAIN_PREFIX = "domain:"


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxedBash:
    """What the permission chain knows of the OS sandbox (only when it is on and can run)."""

    config: SandboxConfig
    auto_allow: bool = True


def excluded_matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """Return a test for `excludedCommands`: Bash rule specifiers (`docker:*`, `npm run x`).

    A bare program name (`docker`) covers all its uses. Matching is a rule's (wrappers,
    quoting, every simple command of the line), so `sudo docker ps` and `make && docker ps`
    are excluded too.
    """
    if not patterns:
        return lambda command: False
    texts = [f"Bash({p}:*)" if p.replace("-", "").replace("_", "").isalnum() else f"Bash({p})"
             for p in patterns]
    rules = PermissionRules.parse(ask=texts)

    def excluded(command: str) -> bool:
        decision = evaluate_command(command, rules)
        return decision.verdict is Verdict.ASK and decision.rule is not None

    return excluded


def sandbox_decision(sandbox: SandboxedBash | None, tool: Tool, tool_input: Mapping[str, Any],
                     rules: PermissionRules, *, project_root: Path,
                     cwd: Path | None) -> Decision | None:
    """Return the sandbox's say on a call the rules did not settle, or None to go on.

    Called after deny rules, plan mode and ask rules: ASK for a call that asks to leave the
    sandbox (always), ALLOW for a command that runs inside it when auto-allow is on, unless the
    user's deny or ask rules are why it would be asked about.
    """
    if sandbox is None or not isinstance(tool.subject, CommandSubject):
        return None
    command = tool_input.get(tool.subject.param)
    if not isinstance(command, str):
        return None
    leave = tool_input.get(LEAVE_PARAM) is True
    if leave and sandbox.config.allow_unsandboxed:
        return Decision(verdict=Verdict.ASK, reason=(
            "the command asks to run outside the OS sandbox, which always needs the user's "
            "approval"))
    if not sandbox.auto_allow or not sandbox.config.runs_inside(command):
        return None
    full = evaluate_command(command, rules, tool=tool.name, cwd=cwd, project_root=project_root)
    if full.verdict is not Verdict.ASK or full.rule is not None:
        return None
    guarded = [r for r in (*rules.deny, *rules.ask) if r.tool != "WebFetch"]
    if guarded:
        plain = evaluate_command(command, PermissionRules(allow=rules.allow), tool=tool.name,
                                 cwd=cwd, project_root=project_root)
        if plain.reason != full.reason:
            return None  # a deny or ask rule is why it asks: it still does
    return Decision(verdict=Verdict.ALLOW,
                    reason="it runs in the OS sandbox (sandbox.autoAllowBashIfSandboxed)")


def _domains(rules: Iterable[Rule]) -> list[str]:
    return [r.specifier.removeprefix(_DOMAIN_PREFIX) for r in rules
            if r.tool == "WebFetch" and r.specifier and r.specifier.startswith(_DOMAIN_PREFIX)]


def _remembered_domains(entries: Iterable[str]) -> list[str]:
    """Return the domains of remembered `WebFetch(domain:...)` approvals."""
    head = f"WebFetch({_DOMAIN_PREFIX}"
    return [e.removeprefix(head).removesuffix(")") for e in entries
            if e.startswith(head) and e.endswith(")")]


class NetworkQuestions:
    """Decide a sandboxed command's connections (see the module docs); one per shell.

    `turn` is a Turn of the session the shell serves (`LiveSession.command_turn()`): its
    asker, event stream and approvals; None, or one with nobody to ask: a new domain is
    refused. One question per host:port at a time; a refusal holds for the rest of that
    command.
    """

    def __init__(self, policy: PermissionPolicy, *, allowed: tuple[str, ...] = (),
                 denied: tuple[str, ...] = ()) -> None:
        self.policy = policy
        self.allowed = allowed
        self.denied = denied
        self.turn: Turn | None = None
        self._asking: dict[tuple[str, int], asyncio.Future[bool | None]] = {}
        self._waiting: dict[tuple[str, int], int] = {}
        self._refused: set[tuple[str, str, int]] = set()

    def _allow_rules(self) -> list[str]:
        stores = [self.policy.store(s, self.turn) for s in
                  (ApprovalScope.TURN, ApprovalScope.SESSION, ApprovalScope.AGENT)]
        entries = [e for store in stores if store is not None for e in store.entries()]
        return [*self.allowed, *_domains(self.policy.rules.allow), *_remembered_domains(entries)]

    async def __call__(self, host: str, port: int, command: str) -> NetworkVerdict:
        """Return whether the command may reach host:port; ask if no setting says."""
        from aimon_core.shell import NetworkVerdict, domain_matches

        for pattern in (*self.denied, *_domains(self.policy.rules.deny)):
            if domain_matches(pattern, host, port):
                return NetworkVerdict(allowed=False, reason=f"denied by {pattern!r}")
        if any(domain_matches(p, host, port) for p in self._allow_rules()):
            return NetworkVerdict(allowed=True)
        if (command, host, port) in self._refused:
            return NetworkVerdict(allowed=False, reason="the user refused it")
        answer = await self._answer(host, port, command)
        if answer:
            return NetworkVerdict(allowed=True)
        self._refused.add((command, host, port))
        if answer is None:
            return NetworkVerdict(allowed=False, reason=(
                f"{host} is not an allowed domain and nobody can be asked (print mode); allow "
                f"it with sandbox.network.allowedDomains or --allowed-tools "
                f"\"WebFetch(domain:{host})\""))
        return NetworkVerdict(allowed=False, reason="the user refused it")

    async def _answer(self, host: str, port: int, command: str) -> bool | None:
        """Wait for the one question about host:port; the last waiter to go withdraws it."""
        key = (host, port)
        pending = self._asking.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._question(host, port, command))
            self._asking[key] = pending
            pending.add_done_callback(lambda _: self._asking.pop(key, None))
        self._waiting[key] = self._waiting.get(key, 0) + 1
        try:
            return await asyncio.shield(pending)
        finally:
            self._waiting[key] -= 1
            if not self._waiting[key]:
                del self._waiting[key]
                pending.cancel()  # nobody waits any more (their commands ended): withdraw it

    async def _question(self, host: str, port: int, command: str) -> bool | None:
        """Ask the session; None when nobody can answer."""
        turn = self.turn
        if turn is None or turn.ask is None:
            return None
        rule = f"WebFetch(domain:{host})"
        shown = " ".join(command.split())
        shown = shown if len(shown) <= 80 else shown[:79] + "…"
        request = ApprovalRequest(
            id=uuid.uuid4().hex[:12], tool_name="WebFetch",
            tool_input={"url": f"https://{host}:{port}/", "command": command},
            subject_text=f"domain:{host}", suggested_rule=rule, agent_rule=rule,
            agent_scope=self.policy.agent_scope, label=f"Network({host}:{port})",
            reason=f"the sandboxed command `{shown}` wants to connect to {host}:{port}")
        answer = await turn.ask(request)
        if answer is None:
            return None
        remembered = ""
        if answer.allowed and answer.scope is not ApprovalScope.ONCE:
            try:
                if answer.scope is ApprovalScope.AGENT:  # a file: off the loop
                    await asyncio.to_thread(self.policy.remember, answer.scope, rule, turn)
                else:
                    self.policy.remember(answer.scope, rule, turn)
                remembered = rule
            except (OSError, ValueError):
                remembered = ""
        turn.emit(ApprovalResolved(request_id=request.id, answer=answer, remembered=remembered))
        return answer.allowed


def sandbox_paths(settings: SandboxSettings, project_root: Path,
                  extra_dirs: tuple[Path, ...]) -> SandboxPaths:
    """Return the folders the sandbox is built from: the project, added folders, the settings.

    aimon's own settings folder (its `env` may hold secrets) and data folder (every project's
    sessions) are unreadable inside, unless the project is in one; so is Claude Code's user
    folder, `~/.claude` (`CREDENTIAL_PATHS`).
    """
    from aimon_core.session import user_config_dir, user_data_dir
    from aimon_core.shell import SandboxPaths

    own = tuple(p for p in (user_config_dir(), user_data_dir())
                if not project_root.is_relative_to(p))
    try:
        home: Path | None = Path.home()
    except RuntimeError:
        home = None
    return SandboxPaths(project=project_root, extra_dirs=extra_dirs,
                        allow_write=settings.allow_write, deny_write=settings.deny_write,
                        deny_read=(*settings.deny_read, *own), allow_read=settings.allow_read,
                        home=home)
