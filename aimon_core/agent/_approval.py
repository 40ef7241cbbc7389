"""Approval values: what the gate asks a person, their answer, and the events around it.

They live with the executor because they travel on its one event stream: the gate emits
`ApprovalRequested`, whoever answers for the session (the REPL, a library caller) answers it
through the live session, and the gate emits `ApprovalResolved` (or the live session emits
`ApprovalWithdrawn` when the turn ended first).
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from aimon_core.tools import ProposedChange


class ApprovalScope(enum.Enum):
    """How long an approval lasts, narrowest first."""

    ONCE = "once"
    TURN = "turn"
    SESSION = "session"
    AGENT = "agent"


FieldKind = Literal["string", "number", "integer", "boolean", "choice", "choices"]
FieldValue = str | int | float | bool | tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class FormField:
    """One input of a form: its name, what to show, its kind, and its default."""

    name: str
    title: str
    kind: FieldKind = "string"
    description: str = ""
    required: bool = False
    default: FieldValue | None = None
    # The values a `choice` (one) or `choices` (several) field takes, and their titles.
    options: tuple[str, ...] = ()
    option_titles: tuple[str, ...] = ()

    def read(self, text: str) -> FieldValue | None:
        """Return the value typed as `text` ("" leaves the field out: None).

        Raises ValueError, with a message for the person, when `text` is not such a value.
        """
        text = text.strip()
        if not text:
            if self.required:
                raise ValueError(f"{self.title} is required")
            return None
        match self.kind:
            case "boolean":
                if text.lower() not in ("y", "yes", "true", "n", "no", "false"):
                    raise ValueError(f"{self.title}: answer yes or no")
                return text.lower() in ("y", "yes", "true")
            case "integer":
                return int(text)  # ValueError: "invalid literal for int()"
            case "number":
                return float(text)
            case "choice":
                return self._option(text)
            case "choices":
                return tuple(self._option(part) for part in text.split(",") if part.strip())
        return text

    def _option(self, text: str) -> str:
        text = text.strip()
        for value, title in zip(self.options, self.option_titles or self.options, strict=False):
            if text in (value, title):
                return value
        raise ValueError(f"{self.title}: one of {', '.join(self.options)}")


@dataclass(frozen=True, slots=True, kw_only=True)
class FormRequest:
    """Input a tool's server asks of the person (MCP elicitation), as a form.

    With `url`, the server asks the person to open that page instead (no fields).
    """

    source: str
    message: str
    fields: tuple[FormField, ...] = ()
    url: str = ""

    def defaults(self) -> dict[str, FieldValue] | None:
        """Return the fields' defaults; None when a required field has none."""
        values: dict[str, FieldValue] = {}
        for item in self.fields:
            if item.default is not None:
                values[item.name] = item.default
            elif item.required:
                return None
        return values


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequest:
    """A tool call the policy wants the user to approve, or input its server asks for.

    ``suggested_rule`` is what a turn or session answer remembers, ``agent_rule`` what an
    agent answer remembers; either is "" when only this one call can be allowed.
    ``agent_scope`` names where an agent answer applies (the agent, in this project).
    With ``form``, the call is running and its server asks for input: an answer that allows
    sends ``ApprovalAnswer.values`` (the form's defaults when None), one that denies declines.
    """

    id: str
    tool_name: str
    tool_input: Mapping[str, Any]
    subject_text: str
    reason: str
    suggested_rule: str
    agent_rule: str = ""
    agent_scope: str = ""
    tool_use_id: str = ""
    # The call's one-line form, as its tool describes it (`Edit(src/app.py)`).
    label: str = ""
    # The change the call would make (an edit's diff), as the tool previews it; None: none.
    preview: ProposedChange | None = None
    form: FormRequest | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalAnswer:
    """The user's answer: allow or deny, for how long, and (on deny) why.

    ``rule`` replaces the request's rule as what is remembered (e.g. a broader one the user
    chose); ``reason`` is shown to the model on deny. Denials are never remembered.
    ``values`` answer a request's form.
    ``updated_input`` is the call's input as the user edited it before allowing it (a
    command made right): the call runs with it, if the rules do not deny it.
    """

    allowed: bool
    scope: ApprovalScope = ApprovalScope.ONCE
    reason: str = ""
    rule: str = ""
    values: Mapping[str, FieldValue] | None = None
    updated_input: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequested:
    """The gate is waiting for someone to answer ``request`` (``LiveSession.answer``)."""

    request: ApprovalRequest


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalResolved:
    """The user answered; ``remembered`` is the entry stored at the answer's scope, or ""."""

    request_id: str
    answer: ApprovalAnswer
    remembered: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRefused:
    """The gate refused a call without asking anyone: a deny (``denied``), or nobody to ask.

    ``suggested_rule`` is what an approval of the call would have remembered ("" when no
    rule can say it, and for denials); print mode names it as the flag that would allow it.
    """

    tool_use_id: str
    tool_name: str
    tool_input: Mapping[str, Any]
    label: str
    reason: str
    denied: bool
    suggested_rule: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalWithdrawn:
    """A question went away unanswered (the turn was interrupted or the session closed)."""

    request_id: str


# Ask someone to answer a request; None means nobody can answer (print mode): refuse.
Asker = Callable[[ApprovalRequest], Awaitable[ApprovalAnswer | None]]
