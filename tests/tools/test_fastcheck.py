"""The quick schema check agrees with jsonschema wherever it answers (a generated table)."""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Iterator, Mapping
from typing import Any

import jsonschema
import pytest

from aimon_core.tools import builtin_tools
from aimon_core.tools._fastcheck import plainly_fits

SCALARS: tuple[Any, ...] = (None, True, False, 0, 1, -1, 7, 1.0, 2.5, -0.5, 10**30, "", "x",
                            "héllo", "a" * 40, float("inf"))
CONTAINERS: tuple[Any, ...] = ([], [1], ["a", "b"], [1, "a"], [{"k": "v"}], {}, {"k": "v"},
                               {"content": "c", "status": "pending"})
VALUES = SCALARS + CONTAINERS

SYNTHETIC: tuple[Any, ...] = (
    True, False, {},
    {"type": "integer"}, {"type": "number"}, {"type": "string"}, {"type": "boolean"},
    {"type": "null"}, {"type": "array"}, {"type": "object"}, {"type": ["string", "null"]},
    {"type": "integer", "minimum": 0, "maximum": 7}, {"type": "number", "minimum": -0.5},
    {"minimum": 1}, {"type": "string", "minLength": 1, "maxLength": 5},
    {"enum": ["x", "a"]}, {"enum": [1, True]}, {"type": "array", "items": {"type": "integer"}},
    {"type": "array", "minItems": 1, "maxItems": 1}, {"items": False},
    {"type": "object", "properties": {"k": {"type": "string"}}, "required": ["k"]},
    {"type": "object", "properties": {"k": {"enum": ["v"]}}, "additionalProperties": False},
    {"type": "object", "additionalProperties": {"type": "string"}},
    {"properties": {"content": {"type": "string"}, "status": {"enum": ["pending", "done"]}},
     "required": ["content", "status"], "additionalProperties": False},
    {"type": "string", "pattern": "^x"}, {"anyOf": [{"type": "string"}]}, {"$ref": "#"},
    {"type": "strnig"}, {"type": "object", "required": "k"}, {"minLength": -1},
    {"minItems": 1.5}, {"required": ["k", "k"]}, {"enum": []},
)


def _objects(schema: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Yield objects for an object schema: each property set to each scalar, one at a time,
    next to the required ones at a fitting value, without each required one, with an extra."""
    properties = schema.get("properties", {})
    base = {name: _example(properties.get(name, {})) for name in schema.get("required", [])}
    yield base
    yield {**base, "unexpected": 1}
    for name in base:
        yield {k: v for k, v in base.items() if k != name}
    for name, value in itertools.product(properties, VALUES):
        yield {**base, name: value}


def _example(schema: Mapping[str, Any]) -> Any:
    """Return a value that fits `schema` (of the built-in tools' kind)."""
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    match kind:
        case "string":
            return "a" * max(1, schema.get("minLength", 1))
        case "integer" | "number":
            return max(1, schema.get("minimum", 1))
        case "boolean":
            return True
        case "array":
            return [_example(schema.get("items", {}))] if schema.get("items") else []
        case "object":
            return next(_objects(schema))
    return "a"


def _cases() -> Iterator[tuple[str, Any, Any]]:
    for tool in builtin_tools():
        for value in itertools.chain(_objects(tool.input_schema), VALUES):
            yield tool.name, tool.input_schema, value
    for index, schema in enumerate(SYNTHETIC):
        for value in VALUES:
            yield f"synthetic {index}", schema, value


def test_the_quick_check_never_disagrees_with_jsonschema() -> None:
    answered = 0
    validators: dict[int, Any] = {}
    for name, schema, value in _cases():
        quick = plainly_fits(schema, value)
        if quick is None:
            continue
        answered += 1
        if id(schema) not in validators:
            try:
                jsonschema.Draft202012Validator.check_schema(schema)
            except jsonschema.SchemaError:
                pytest.fail(f"{name}: answered {quick} for an invalid schema {schema!r}")
            validators[id(schema)] = jsonschema.Draft202012Validator(schema)
        full = validators[id(schema)].is_valid(value)
        assert quick == full, f"{name}: {value!r} against {schema!r}: quick {quick}, full {full}"
    assert answered > 1000


@pytest.mark.parametrize("schema", [{"type": "string", "pattern": "^x"}, {"$ref": "#"},
                                    {"anyOf": [{"type": "string"}]}, {"enum": [1, True]},
                                    {"type": "strnig"}, {"items": [{"type": "string"}]}])
def test_keywords_it_does_not_know_are_left_to_jsonschema(schema: Any) -> None:
    assert plainly_fits(schema, "x") is None


def test_every_built_in_tool_is_checked_without_jsonschema() -> None:
    for tool in builtin_tools():
        assert plainly_fits(tool.input_schema, next(_objects(tool.input_schema))) is True, \
            tool.name


def test_a_tool_call_with_fitting_input_does_not_import_jsonschema() -> None:
    code = ("import sys; from aimon_core.tools import builtin_tools, check_input\n"
            "read = next(t for t in builtin_tools() if t.name == 'Read')\n"
            "assert check_input(read, {'file_path': '/x'}) is None\n"
            "print('jsonschema' in sys.modules)\n"
            "assert check_input(read, {'file_path': 1}) is not None\n"
            "print('jsonschema' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split() == ["False", "True"]
