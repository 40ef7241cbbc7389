"""What hooks answer: a permission decision, a flow decision, feedback; and how answers combine."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from aimon_core.shell import SecretPairs, redact


class PermissionDecision(enum.Enum):
    """A hook's answer to "may this tool call run?" (PRE_TOOL, PERMISSION_REQUEST)."""

    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


class Flow(enum.Enum):
    """What the agent does next.

    CONTINUE: carry on. BLOCK: the event's action is blocked and `feedback` says why (ON_START:
    the prompt is dropped; ON_STOP: the agent keeps going with the feedback; PRE_TOOL: the
    call is denied; POST_TOOL: the feedback is shown to the model). STOP: end the turn now
    (Claude Code's `"continue": false`); `stop_reason` is shown to the user.
    """

    CONTINUE = "continue"
    BLOCK = "block"
    STOP = "stop"


_PERMISSION_RANK = {None: 0, PermissionDecision.ALLOW: 1, PermissionDecision.ASK: 2,
                    PermissionDecision.DENY: 3}
_FLOW_RANK = {Flow.CONTINUE: 0, Flow.BLOCK: 1, Flow.STOP: 2}


@dataclass(frozen=True, slots=True, kw_only=True)
class HookResult:
    """One hook's answer, or several combined; the default answer changes nothing.

    Args:
        feedback: for the model: why the action was blocked or the call denied.
        additional_context: for the model: more context (not a block).
        system_message: for the user (not the model).
        stop_reason: for the user, when `flow` is STOP.
        updated_input: PRE_TOOL / PERMISSION_REQUEST: replacement tool input.
        errors: non-blocking failures of hooks, for the user.
        source: which hook answered (its name or command).
    """

    permission: PermissionDecision | None = None
    flow: Flow = Flow.CONTINUE
    feedback: str = ""
    additional_context: str = ""
    system_message: str = ""
    stop_reason: str = ""
    updated_input: Mapping[str, Any] | None = None
    errors: tuple[str, ...] = ()
    source: str = ""

    @property
    def blocked(self) -> bool:
        """Return True when the event's action is blocked (flow BLOCK)."""
        return self.flow is Flow.BLOCK

    @property
    def denied(self) -> bool:
        """Return True when the tool call must not run (permission DENY)."""
        return self.permission is PermissionDecision.DENY

    @property
    def stopped(self) -> bool:
        """Return True when the turn must end now (flow STOP)."""
        return self.flow is Flow.STOP

    @classmethod
    def allow(cls, reason: str = "") -> HookResult:
        """Return an answer that allows the tool call without asking."""
        return cls(permission=PermissionDecision.ALLOW, system_message=reason)

    @classmethod
    def ask(cls, reason: str = "") -> HookResult:
        """Return an answer that makes the user approve the tool call."""
        return cls(permission=PermissionDecision.ASK, system_message=reason)

    @classmethod
    def deny(cls, reason: str) -> HookResult:
        """Return an answer that denies the tool call; `reason` goes to the model."""
        return cls(permission=PermissionDecision.DENY, feedback=reason)

    @classmethod
    def block(cls, reason: str) -> HookResult:
        """Return an answer that blocks the event's action; `reason` goes to the model."""
        return cls(flow=Flow.BLOCK, feedback=reason)

    @classmethod
    def context(cls, text: str) -> HookResult:
        """Return an answer that adds `text` to the model's context."""
        return cls(additional_context=text)


def _labelled(results: Iterable[HookResult], attribute: str) -> str:
    parts = []
    for result in results:
        text = str(getattr(result, attribute)).strip()
        if text:
            parts.append(f"[{result.source}] {text}" if result.source else text)
    return "\n".join(parts)


def combine(results: Iterable[HookResult]) -> HookResult:
    """Combine answers: DENY beats ASK beats ALLOW; STOP beats BLOCK beats CONTINUE.

    Feedback, context and messages are joined in order, each led by its hook's name; the
    last replacement input wins; errors are kept in order.
    """
    items = list(results)
    if not items:
        return HookResult()
    permission = max((r.permission for r in items), key=_PERMISSION_RANK.__getitem__)
    flow = max((r.flow for r in items), key=_FLOW_RANK.__getitem__)
    updated = [r.updated_input for r in items if r.updated_input is not None]
    return HookResult(
        permission=permission,
        flow=flow,
        feedback=_labelled(items, "feedback"),
        additional_context=_labelled(items, "additional_context"),
        system_message=_labelled(items, "system_message"),
        stop_reason=_labelled(items, "stop_reason"),
        updated_input=updated[-1] if updated else None,
        errors=tuple(error for r in items for error in r.errors),
        source=", ".join(dict.fromkeys(r.source for r in items if r.source)),
    )


def redacted(result: HookResult, secrets: SecretPairs) -> HookResult:
    """Return `result` with `secrets` redacted from every text a person or the model reads.

    Hooks run with aimon's whole environment (they are the user's own commands), so what
    they print may hold a credential. `updated_input` is left alone: it is a tool's input,
    which the model does not read back, and a hook may put a credential there on purpose.
    """
    if not secrets:
        return result

    def clean(text: str) -> str:
        return redact(text, secrets)

    cleaned = replace(
        result, feedback=clean(result.feedback), system_message=clean(result.system_message),
        additional_context=clean(result.additional_context), source=clean(result.source),
        stop_reason=clean(result.stop_reason), errors=tuple(map(clean, result.errors)))
    return result if cleaned == result else cleaned


def feedback_reminder(text: str) -> str:
    """Wrap hook feedback for the model in a `<system-reminder>` block ("" for blank text)."""
    text = text.strip()
    if not text:
        return ""
    return f"<system-reminder>\n{text}\n</system-reminder>"
