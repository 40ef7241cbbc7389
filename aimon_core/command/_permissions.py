"""Permission commands: /pending, /approve, /deny, /revoke, /permissions, /mode, /trust."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aimon_core.command._format import plural
from aimon_core.command._registry import (
    CANCELLED,
    CommandError,
    CommandHost,
    CommandOutcome,
    SlashCommand,
    pick,
)

if TYPE_CHECKING:
    from aimon_core.agent import Turn
    from aimon_core.config import LoadedSettings
    from aimon_core.live import LiveSession
    from aimon_core.permission import ApprovalRequest, PermissionPolicy

APPROVE_USAGE = "/approve [ID] [turn|session|agent]"
DENY_USAGE = "/deny [ID] [REASON]"
MODE_USAGE = "/mode [default|acceptEdits|plan|bypassPermissions]"
SUBJECT_CHARS = 80
_LAYER_NAMES = {"user": "user settings", "project": "project settings",
                "local": "local project settings", "flags": "command line"}


def request_label(request: ApprovalRequest) -> str:
    """Return a one-line name for an approval request: `Bash(npm test)`."""
    subject = " ".join(request.subject_text.split())
    if len(subject) > SUBJECT_CHARS:
        subject = subject[: SUBJECT_CHARS - 1] + "…"
    return f"{request.tool_name}({subject})" if subject else request.tool_name


def pending_text(pending: tuple[ApprovalRequest, ...]) -> str:
    """Return what /pending shows: each waiting approval with its id, oldest first."""
    if not pending:
        return "No approvals are waiting."
    rows = "\n".join(f"  {r.id}  {request_label(r)}" + (f" · {r.reason}" if r.reason else "")
                     for r in pending)
    return (f"Waiting for your answer (oldest first):\n{rows}\n"
            f"Answer with {APPROVE_USAGE} or {DENY_USAGE}.")


async def _pending(args: str, host: CommandHost) -> CommandOutcome:
    if args:
        raise CommandError("/pending takes no arguments.")
    return CommandOutcome.message(pending_text(host.pending_approvals()))


def _pick(words: list[str], pending: tuple[ApprovalRequest, ...]) -> tuple[ApprovalRequest,
                                                                          list[str]]:
    """Return the request the first word names (by id or id prefix), else the oldest one."""
    if not pending:
        raise CommandError("no approval is waiting (see /pending).")
    if words:
        named = [r for r in pending if r.id.startswith(words[0])]
        if len(named) == 1:
            return named[0], words[1:]
    return pending[0], words


def _scope_word(rest: list[str], args: str) -> str:
    """Return the scope word of `/approve [ID] [SCOPE]`; say what is wrong with the rest."""
    if not rest:
        return "turn"
    word = rest[0].lower()
    if len(rest) == 1 and word in ("once", "turn", "session", "agent"):
        return word
    if len(rest) == 1 and word.isalnum() and len(word) >= 4:
        raise CommandError(f"no waiting approval has the id {rest[0]!r} (/pending lists them).")
    raise CommandError(f"expected an approval id and then once, turn, session or agent, "
                       f"not {args!r}.")


async def _approve(args: str, host: CommandHost) -> CommandOutcome:
    from aimon_core.permission import ApprovalAnswer, ApprovalScope

    request, rest = _pick(args.split(), host.pending_approvals())
    scopes = {"once": ApprovalScope.ONCE, "turn": ApprovalScope.TURN,
              "session": ApprovalScope.SESSION, "agent": ApprovalScope.AGENT}
    scope = scopes[_scope_word(rest, args)]
    if not host.answer_approval(request.id, ApprovalAnswer(allowed=True, scope=scope)):
        return CommandOutcome.error(f"{request.id} was answered already.")
    return CommandOutcome()


async def _deny(args: str, host: CommandHost) -> CommandOutcome:
    from aimon_core.permission import ApprovalAnswer

    request, rest = _pick(args.split(), host.pending_approvals())
    reason = " ".join(rest)
    if not host.answer_approval(request.id, ApprovalAnswer(allowed=False, reason=reason)):
        return CommandOutcome.error(f"{request.id} was answered already.")
    return CommandOutcome()


async def _policy(host: CommandHost) -> PermissionPolicy:
    """Return the host's policy, waiting for the session (and so the runtime) to open."""
    if host.policy is None:
        await host.live_session()
    policy = host.policy
    if policy is None:
        raise CommandError("permissions are not managed here.")
    return policy


async def _revoke(args: str, host: CommandHost) -> CommandOutcome:

    policy = await _policy(host)
    if args not in ("", "--agent"):
        raise CommandError(f"unknown argument {args!r}.")
    if args == "--agent":
        store = policy.agent
        if store is None:
            return CommandOutcome.message("This agent keeps no remembered approvals.")
        gone = store.clear()
        where = f" ({store.path} deleted)" if gone else ""
        return CommandOutcome.message(_forgot(gone, "of this agent") + where)
    live = host.live
    gone = () if live is None else live.turn_approvals.clear() + live.session_approvals.clear()
    return CommandOutcome.message(_forgot(tuple(dict.fromkeys(gone)), "of this session"))


def _forgot(entries: tuple[str, ...], whose: str) -> str:
    if not entries:
        return f"No approvals {whose} were remembered."
    return f"Forgot {plural(len(entries), 'approval')} {whose}: " + ", ".join(entries)


def rules_rows(policy: PermissionPolicy, settings: LoadedSettings | None
               ) -> list[tuple[str, str, str]]:
    """Return (kind, rule, where it comes from) for every rule the policy applies."""
    sources = {s.layer.value: s.path for s in settings.sources} if settings else {}
    rows: list[tuple[str, str, str]] = []
    for kind in ("deny", "ask", "allow"):
        from_settings: dict[str, str] = {}
        if settings is not None:
            texts = getattr(settings.settings.permissions, kind)
            for index, text in enumerate(texts):
                layer = settings.origin.get(f"permissions.{kind}[{index}]")
                name = layer.value if layer is not None else "flags"
                path = sources.get(name)
                from_settings[text] = _LAYER_NAMES.get(name, name) + (f" ({path})" if path else "")
        for rule in getattr(policy.rules, kind):
            rows.append((kind, rule.text, from_settings.get(rule.text, "command line")))
    return rows


def permissions_text(policy: PermissionPolicy, settings: LoadedSettings | None,
                     turn: Turn | None) -> str:
    """Return what /permissions shows: the mode, the rules and the remembered approvals
    (`turn`'s session's, and the agent's)."""
    from aimon_core.permission import ApprovalScope

    lines = [f"Mode: {policy.mode.value} ({policy.mode.summary}). Change it with {MODE_USAGE}.",
             "", "Rules (deny beats ask beats allow):"]
    rows = rules_rows(policy, settings)
    width = max((len(rule) for _, rule, _ in rows), default=0)
    lines += [f"  {kind:<5}  {rule:<{width}}  {where}" for kind, rule, where in rows] or \
        ["  (none: read-only tools are allowed, everything else asks)"]
    if settings is not None and settings.pending_trust is not None:
        lines += ["", "Held back until you trust this folder (run /trust to trust it):",
                  *(f"  {what}" for what in settings.pending_trust.what)]
    lines += ["", "Remembered approvals:"]
    for scope, name in ((ApprovalScope.TURN, "this turn"), (ApprovalScope.SESSION, "this session"),
                        (ApprovalScope.AGENT, "this agent")):
        store = policy.store(scope, turn)
        entries = store.entries() if store is not None else ()
        where = f" (in {policy.agent.path})" if scope is ApprovalScope.AGENT and \
            policy.agent is not None and entries else ""
        if scope is ApprovalScope.AGENT and policy.agent_scope:  # (R) say where they apply
            where = f" (for {policy.agent_scope} only){where}"
        lines.append(f"  {name:<12}  {', '.join(entries) or '(none)'}{where}")
    lines.append("Forget them with /revoke (this session) or /revoke --agent.")
    return "\n".join(lines)


async def _permissions(args: str, host: CommandHost) -> CommandOutcome:
    if args:
        raise CommandError("/permissions takes no arguments.")
    policy = await _policy(host)
    live = host.live
    turn = live.command_turn() if live is not None else None
    return CommandOutcome.message(permissions_text(policy, host.settings, turn))


async def _mode(args: str, host: CommandHost) -> CommandOutcome:
    from aimon_core.permission import PermissionMode, PermissionModeError, parse_mode

    policy = await _policy(host)
    if not args:
        picked = await pick(host, "Switch to which permission mode?", mode_choices(None),
                            policy.mode.value)
        if picked is None:
            modes = "\n".join(f"  {m.value:<17}  {m.summary}" for m in PermissionMode)
            return CommandOutcome.message(
                f"Permission mode: {policy.mode.value} ({policy.mode.summary}).\n"
                f"Modes:\n{modes}\nChange it with {MODE_USAGE}")
        if picked == CANCELLED:
            return CommandOutcome.message(f"Permission mode unchanged: {policy.mode.value}.")
        args = picked
    try:
        mode = parse_mode(args)
        policy.set_mode(mode)
    except PermissionModeError as exc:
        return CommandOutcome.error(f"Mode not changed: {exc.reason}.")
    return CommandOutcome.message(f"Permission mode: {mode.value} ({mode.summary}).")


def mode_choices(live: LiveSession | None) -> tuple[tuple[str, str], ...]:
    """Return the permission modes with what each allows (/mode's choices)."""
    from aimon_core.permission import PermissionMode

    return tuple((mode.value, mode.summary) for mode in PermissionMode)


async def _trust(args: str, host: CommandHost) -> CommandOutcome:
    """(R) Trust this folder's settings that wait for it; the REPL's host does the work."""
    if args:
        raise CommandError("/trust takes no arguments.")
    trust_folder = getattr(host, "trust_folder", None)
    if not callable(trust_folder):
        return CommandOutcome.error(
            "Folder trust is asked in the interactive mode: run aimon here and answer /trust.")
    text = await trust_folder()
    return CommandOutcome.message(str(text))


def permission_commands() -> tuple[SlashCommand, ...]:
    """Return the permission commands, in the order /help lists them."""
    return (
        SlashCommand(name="pending", description="List the approvals waiting for an answer",
                     run=_pending),
        SlashCommand(name="approve", description="Allow a waiting tool call (default: oldest)",
                     run=_approve, usage=APPROVE_USAGE, changes_permissions=True),
        SlashCommand(name="deny", description="Deny a waiting tool call, saying why",
                     run=_deny, usage=DENY_USAGE, changes_permissions=True),
        SlashCommand(name="permissions",
                     description="Show the mode, the rules and the remembered approvals",
                     run=_permissions),
        SlashCommand(name="mode", description="Show or change the permission mode (also "
                     "Shift-Tab)", run=_mode, usage=MODE_USAGE, changes_permissions=True,
                     choices=mode_choices),
        SlashCommand(name="revoke", description="Forget this session's approvals (--agent: "
                     "the agent's)", run=_revoke, usage="/revoke [--agent]",
                     changes_permissions=True),
        SlashCommand(name="trust", description="Trust this folder's settings that wait for it "
                     "(hooks, env, wider permissions)", run=_trust, changes_permissions=True),
    )
