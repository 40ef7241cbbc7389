"""Elicitation: a server asks for input during a call; the session's questions answer it.

The form is asked of whoever answers for the call's session (the REPL); in print mode nobody
does, and the server entry's `elicitation` decides: declined, or the defaults sent.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from aimon_core.agent import (
    AgentEvent,
    ApprovalAnswer,
    ApprovalRequest,
    ApprovalResolved,
    FormField,
    FormRequest,
    Turn,
)
from aimon_core.config import Elicitation, StdioServerConfig
from aimon_core.mcp import MCPOptions, MCPServers, form_fields, with_defaults
from aimon_core.tools import ToolRegistry

FAKE = str(Path(__file__).with_name("fake_server.py"))

SCHEMAS: list[tuple[dict[str, Any], FormField]] = [
    ({"type": "string", "title": "Name", "default": "Ada"},
     FormField(name="f", title="Name", default="Ada")),
    ({"type": "integer", "description": "in years"},
     FormField(name="f", title="f", kind="integer", description="in years")),
    ({"type": "number", "default": 95.5}, FormField(name="f", title="f", kind="number",
                                                    default=95.5)),
    ({"type": "boolean", "default": True}, FormField(name="f", title="f", kind="boolean",
                                                     default=True)),
    ({"type": "string", "enum": ["a", "b"], "enumNames": ["Apple", "Banana"]},
     FormField(name="f", title="f", kind="choice", options=("a", "b"),
               option_titles=("Apple", "Banana"))),
    ({"type": "string", "oneOf": [{"const": "a", "title": "Apple"}, {"const": "b"}]},
     FormField(name="f", title="f", kind="choice", options=("a", "b"),
               option_titles=("Apple", "b"))),
    ({"type": "array", "items": {"type": "string", "enum": ["x", "y"]}, "default": ["y"]},
     FormField(name="f", title="f", kind="choices", options=("x", "y"), option_titles=("x", "y"),
               default=("y",))),
    ({"type": "array", "items": {"anyOf": [{"const": "x", "title": "Ex"}]}},
     FormField(name="f", title="f", kind="choices", options=("x",), option_titles=("Ex",))),
]


@pytest.mark.parametrize(("schema", "field"), SCHEMAS)
def test_each_schema_becomes_a_field(schema: dict[str, Any], field: FormField) -> None:
    assert form_fields({"type": "object", "properties": {"f": schema}}) == (field,)


READS: list[tuple[FormField, str, Any]] = [
    (FormField(name="f", title="F", kind="integer"), "42", 42),
    (FormField(name="f", title="F", kind="number"), "2.5", 2.5),
    (FormField(name="f", title="F", kind="boolean"), "yes", True),
    (FormField(name="f", title="F", kind="boolean"), "No", False),
    (FormField(name="f", title="F", kind="choice", options=("a", "b"),
               option_titles=("Apple", "Banana")), "Banana", "b"),
    (FormField(name="f", title="F", kind="choices", options=("x", "y")), "x, y", ("x", "y")),
    (FormField(name="f", title="F"), "  text  ", "text"),
    (FormField(name="f", title="F"), "", None),
]


@pytest.mark.parametrize(("field", "text", "value"), READS)
def test_a_typed_value_is_read_for_its_field(field: FormField, text: str, value: Any) -> None:
    assert field.read(text) == value


@pytest.mark.parametrize(("field", "text"), [
    (FormField(name="f", title="F", kind="integer"), "4.5"),
    (FormField(name="f", title="F", kind="boolean"), "maybe"),
    (FormField(name="f", title="F", kind="choice", options=("a",)), "z"),
    (FormField(name="f", title="F", required=True), " "),
])
def test_a_value_that_does_not_fit_is_refused(field: FormField, text: str) -> None:
    with pytest.raises(ValueError):
        field.read(text)


def test_values_left_out_get_their_defaults() -> None:
    form = FormRequest(source="s", message="m", fields=(
        FormField(name="a", title="a", default="x"), FormField(name="b", title="b",
                                                               required=True),
        FormField(name="c", title="c", kind="choices", default=("p",))))
    assert with_defaults(form, {"b": 1}) == {"a": "x", "b": 1, "c": ["p"]}
    assert with_defaults(form, None) is None  # b is required and has no default
    assert form.defaults() is None


def asker(answer: ApprovalAnswer | None, asked: list[ApprovalRequest]) -> Any:
    async def ask(request: ApprovalRequest) -> ApprovalAnswer | None:
        asked.append(request)
        return answer

    return ask


async def ask_through_a_server(policy: Elicitation, turn: Turn) -> dict[str, Any]:
    config = StdioServerConfig(command=sys.executable, args=(FAKE, "--elicit"),
                               elicitation=policy)
    servers = MCPServers({"fake": config}, tools=ToolRegistry(), roots=lambda: (Path.cwd(),),
                         env={"PATH": "/usr/bin:/bin"},
                         options=MCPOptions(ping_interval=3600.0))
    servers.start()
    try:
        await servers.wait_ready(20)
        result = await servers.call_tool("fake", "ask", {}, turn=turn)
    finally:
        await servers.aclose()
    answer: dict[str, Any] = json.loads(result.text)
    return answer


CASES: list[tuple[Elicitation, ApprovalAnswer | None, dict[str, Any], bool]] = [
    # (the entry's policy, the person's answer (None: nobody answers), sent, asked)
    ("ask", ApprovalAnswer(allowed=True, values={"age": 7}),
     {"action": "accept", "content": {"name": "Ada", "age": 7, "color": "blue",
                                      "subscribed": False}}, True),
    ("ask", ApprovalAnswer(allowed=False), {"action": "decline"}, True),
    ("ask", None, {"action": "decline"}, True),
    # A required field has no default: print mode cannot accept the defaults.
    ("acceptDefaults", None, {"action": "decline"}, True),
    ("decline", ApprovalAnswer(allowed=True, values={"age": 7}), {"action": "decline"}, False),
]


@pytest.mark.parametrize(("policy", "answer", "sent", "asked"), CASES)
def test_a_servers_question_is_asked_in_the_session(policy: Elicitation,
                                                    answer: ApprovalAnswer | None,
                                                    sent: dict[str, Any], asked: bool) -> None:
    requests: list[ApprovalRequest] = []
    events: list[AgentEvent] = []
    turn = Turn(ask=asker(answer, requests), emit=events.append)
    assert asyncio.run(ask_through_a_server(policy, turn)) == sent
    assert bool(requests) == asked
    if requests:
        [request] = requests
        assert request.tool_name == "mcp__fake__ask" and request.form is not None
        assert request.form.message == "Who are you?"
        assert [f.name for f in request.form.fields] == ["name", "age", "color", "subscribed"]
        resolved = [e for e in events if isinstance(e, ApprovalResolved)]
        assert [e.request_id for e in resolved] == ([request.id] if answer else [])


def test_print_mode_sends_the_defaults_only_when_the_entry_accepts_them() -> None:
    from mcp import types

    from aimon_core.mcp._elicit import elicit

    params = types.ElicitRequestFormParams(message="Defaults?", requested_schema={
        "type": "object", "properties": {"name": {"type": "string", "default": "John Doe"},
                                         "age": {"type": "integer", "default": 30}}})
    nobody = Turn()  # print mode: no one answers

    def run(policy: Elicitation) -> Any:
        return asyncio.run(elicit("s", "mcp__s__t", params, nobody, policy, print))

    accepted = run("acceptDefaults")
    assert (accepted.action, accepted.content) == ("accept", {"name": "John Doe", "age": 30})
    assert run("ask").action == "decline" and run("decline").action == "decline"
