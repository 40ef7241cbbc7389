"""A form in the REPL: input a tool's server asks for during the call (MCP elicitation).

Each field is one line with its default already typed (Enter keeps it, or edit it); a value
that does not fit the field is said and asked again. Then the person sends the values or
declines; Ctrl-C or Esc declines too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aimon_cli._choose import Choice, ask_line, choose

if TYPE_CHECKING:
    from aimon_core.agent import FieldValue, FormField, FormRequest
    from aimon_core.permission import ApprovalAnswer

SEND = "send"
DECLINE = "decline"
FORM_CHOICES = (
    Choice(keys=("s", "S", "y", "Y"), value=SEND, label="s", hint="send these values"),
    Choice(keys=("d", "D", "n", "N"), value=DECLINE, label="d",
           hint="decline: the server is told no"),
    Choice(keys=("escape",), value="cancel", immediate=True),
    Choice(keys=("c-c",), value="cancel", immediate=True),
)
PAGE_CHOICES = (
    Choice(keys=("o", "O", "y", "Y"), value=SEND, label="o", hint="open the page"),
    *FORM_CHOICES[1:],
)


def shown(value: FieldValue | None) -> str:
    """Return a value as it is typed into its field (the pre-filled default)."""
    match value:
        case None:
            return ""
        case bool():
            return "yes" if value else "no"
        case tuple():
            return ", ".join(value)
    return str(value)


def field_prompt(field: FormField) -> str:
    """Return the line a field is asked with: its title, kind or options, and whether needed."""
    if field.kind in ("choice", "choices"):
        what = " / ".join(field.option_titles or field.options)
        what += ", several joined by commas" if field.kind == "choices" else ""
    else:
        what = {"boolean": "yes or no"}.get(field.kind, field.kind)
    need = "" if field.required else ", may stay empty"
    return f"{field.title} ({what}{need}): "


async def ask_form(form: FormRequest, *, done: asyncio.Future[Any],
                   say: Callable[[str, str], None],
                   on_typed: Callable[[str], None]) -> ApprovalAnswer | None:
    """Ask the form's fields, then whether to send them; None when the question went away."""
    from aimon_core.permission import ApprovalAnswer

    declined = ApprovalAnswer(allowed=False, reason="the person declined")
    say(f"{form.source} asks: {form.message}", "bold")
    if form.url:
        say(f"  {form.url}", "")
        value = await choose("Open this page?", PAGE_CHOICES, done=done, on_typed=on_typed)
        if value is None or done.done():
            return None
        return ApprovalAnswer(allowed=True) if value == SEND else declined
    values: dict[str, FieldValue] = {}
    for field in form.fields:
        if field.description:
            say(f"  {field.description}", "dim")
        while True:
            text = await ask_line(field_prompt(field), done=done, default=shown(field.default))
            if text is None:
                return None if done.done() else declined
            try:
                read = field.read(text)
            except ValueError as exc:
                say(f"  {exc}", "yellow")
                continue
            if read is not None:
                values[field.name] = read
            break
    value = await choose("Send this to the server?", FORM_CHOICES, done=done, on_typed=on_typed)
    if value is None or done.done():
        return None
    return ApprovalAnswer(allowed=True, values=values) if value == SEND else declined
