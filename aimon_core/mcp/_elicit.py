"""Elicitation: a server asks the person for input in the middle of a tool call.

The request becomes a form (`FormRequest`: one field per property of the server's schema,
its default pre-filled) on the session's one question channel, asked like an approval of the
running call. Where nobody can answer (print mode), the server's entry decides: `ask` (the
default) and `decline` decline, `acceptDefaults` sends the defaults when every required field
has one. An answer that leaves a field out gets its default (SEP-1034).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from aimon_core.agent import (
    ApprovalAnswer,
    ApprovalRequest,
    ApprovalResolved,
    FieldValue,
    FormField,
    FormRequest,
    Turn,
)

if TYPE_CHECKING:
    from aimon_core.config import Elicitation

_KINDS = {"string": "string", "number": "number", "integer": "integer", "boolean": "boolean"}


def form_fields(schema: Mapping[str, Any]) -> tuple[FormField, ...]:
    """Return the form of a requested schema: a flat object of primitive properties."""
    required = set(schema.get("required") or ())
    properties = schema.get("properties") or {}
    fields = []
    for name, spec in properties.items() if isinstance(properties, Mapping) else ():
        if not isinstance(spec, Mapping):
            continue
        options, titles = _options(spec)
        items = spec.get("items") if isinstance(spec.get("items"), Mapping) else None
        if spec.get("type") == "array" and items is not None:
            kind, (options, titles) = "choices", _options(items)
        elif options:
            kind = "choice"
        else:
            kind = _KINDS.get(str(spec.get("type")), "string")
        fields.append(FormField(
            name=str(name), title=str(spec.get("title") or name), kind=kind,  # type: ignore[arg-type]
            description=str(spec.get("description") or ""), required=name in required,
            default=_default(spec.get("default")), options=options, option_titles=titles))
    return tuple(fields)


def _options(spec: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Return an enum's values and titles (`enum`/`enumNames`, or `oneOf`/`anyOf` consts)."""
    if isinstance(spec.get("enum"), list):
        values = tuple(str(v) for v in spec["enum"])
        names = spec.get("enumNames")
        titles = tuple(str(n) for n in names) if isinstance(names, list) else values
        return values, titles
    for key in ("oneOf", "anyOf"):
        choices = spec.get(key)
        if isinstance(choices, list):
            consts = [c for c in choices if isinstance(c, Mapping) and "const" in c]
            return (tuple(str(c["const"]) for c in consts),
                    tuple(str(c.get("title") or c["const"]) for c in consts))
    return (), ()


def _default(value: object) -> FieldValue | None:
    if isinstance(value, list):
        return tuple(str(v) for v in value)
    if isinstance(value, str | int | float | bool):
        return value
    return None


def form_request(server: str, params: Any) -> FormRequest:
    """Return the form of the SDK's elicitation parameters (form or URL mode)."""
    message = str(getattr(params, "message", "") or "")
    if getattr(params, "mode", "form") == "url":
        return FormRequest(source=f"MCP server {server}", message=message,
                           url=str(getattr(params, "url", "")))
    schema = getattr(params, "requested_schema", None) or {}
    return FormRequest(source=f"MCP server {server}", message=message,
                       fields=form_fields(dict(schema)))


async def _open(form: FormRequest, notify: Callable[[str], None]) -> None:
    import asyncio
    import os

    from aimon_core.mcp._auth import has_browser, open_browser

    opened = has_browser(os.environ) and await asyncio.to_thread(open_browser, form.url)
    notify(f"{form.source}: {'opened' if opened else 'open'} {form.url}")


def with_defaults(form: FormRequest, values: Mapping[str, FieldValue] | None
                  ) -> dict[str, Any] | None:
    """Return the content to send: the answer's values, each field left out at its default.

    None when a required field has neither.
    """
    content: dict[str, Any] = {}
    for item in form.fields:
        value = (values or {}).get(item.name)
        if value is None:
            value = item.default
        if value is None:
            if item.required:
                return None
            continue
        content[item.name] = list(value) if isinstance(value, tuple) else value
    return content


async def elicit(server: str, tool: str, params: Any, turn: Turn | None,
                 policy: Elicitation, notify: Callable[[str], None]) -> Any:
    """Ask for the input a server's elicitation request wants; return the SDK's ElicitResult.

    `turn` is the running call's (None: the request came outside any call, nobody to ask).
    A page the person agreed to open is opened in the browser (or its address told).
    """
    from mcp import types

    form = form_request(server, params)
    answer: ApprovalAnswer | None = None
    if policy != "decline" and turn is not None and turn.ask is not None:
        request = ApprovalRequest(
            id=f"elicit-{uuid.uuid4().hex[:12]}", tool_name=tool, tool_input={},
            subject_text=form.message, reason=f"{form.source} asks for input",
            suggested_rule="", label=f"{tool} asks", form=form)
        answer = await turn.ask(request)
        if answer is not None:
            turn.emit(ApprovalResolved(request_id=request.id, answer=answer))
        if answer is not None and not answer.allowed:
            return types.ElicitResult(action="decline")
    if form.url:  # only a person can consent to opening a page
        if answer is None:
            return types.ElicitResult(action="decline")
        await _open(form, notify)
        return types.ElicitResult(action="accept")
    if answer is None and policy != "acceptDefaults":
        return types.ElicitResult(action="decline")
    content = with_defaults(form, None if answer is None else answer.values)
    if content is None:
        return types.ElicitResult(action="decline" if answer is None else "cancel")
    return types.ElicitResult(action="accept", content=content)
