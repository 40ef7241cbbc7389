"""A quick yes for tool input that plainly fits its schema, without importing jsonschema.

jsonschema and its dependencies cost ~85 ms of import per process (`python -X importtime`),
about a sixth of everything `aimon -p` imports besides the SDK, and the built-in tools'
schemas use a handful of keywords. `plainly_fits(schema, value)` answers True only when every
keyword on the way is one it knows (an allowlist: anything else, such as `$ref`, `anyOf` or
`pattern`, answers None) and the value fits; it answers False on a misfit. The caller asks
jsonschema whenever the answer is not True, so jsonschema still decides every rejection and
words its message; this only skips it for input it would accept (tests/tools/test_fastcheck.py
compares the two over a generated table).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Keywords that only annotate: they never make a value invalid.
_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment",
                          "deprecated", "readOnly", "writeOnly"})
_ASSERTIONS = frozenset({"type", "properties", "required", "additionalProperties", "items",
                         "enum", "minimum", "maximum", "minLength", "maxLength", "minItems",
                         "maxItems"})
_KNOWN = _ANNOTATIONS | _ASSERTIONS


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _has_type(value: Any, name: str) -> bool:
    """Tell whether `value` is of the JSON Schema type `name` (one of `_TYPES`)."""
    match name:
        case "string":
            return isinstance(value, str)
        case "boolean":
            return isinstance(value, bool)
        case "null":
            return value is None
        case "object":
            return isinstance(value, Mapping)
        case "array":
            return isinstance(value, list)
        case "number":
            return _is_number(value)
    # "integer": 1.0 is an integer in JSON Schema; true is not
    return _is_number(value) and (isinstance(value, int) or value.is_integer())


_TYPES = frozenset({"string", "boolean", "null", "object", "array", "number", "integer"})
_BOUNDS = ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems")

# schema object's id -> (the schema, whether `_covered`): schemas are built once, checked often.
_COVERED: dict[int, tuple[Any, bool]] = {}


def plainly_fits(schema: Any, value: Any) -> bool | None:
    """Return True if `value` fits `schema`, False if not, None if the schema is beyond it."""
    entry = _COVERED.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = (schema, _covered(schema))
        _COVERED[id(schema)] = entry
    return _fits(schema, value) if entry[1] else None


def _covered(schema: Any) -> bool:
    """Tell whether `schema` is well formed and uses only keywords `_fits` knows."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, Mapping) or not _KNOWN.issuperset(schema):
        return False
    kind = schema.get("type", "string")
    kinds = [kind] if isinstance(kind, str) else kind
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    enum = schema.get("enum", [""])
    return (isinstance(kinds, list) and bool(kinds) and _TYPES.issuperset(kinds)
            and all(_is_number(schema.get(key, 0)) for key in _BOUNDS[:2])
            and all(_is_count(schema.get(key, 0)) for key in _BOUNDS[2:])
            # Only string members: Python's == would call true equal to 1; JSON Schema not.
            and isinstance(enum, list) and bool(enum) and all(isinstance(m, str) for m in enum)
            and isinstance(required, list) and all(isinstance(n, str) for n in required)
            and len(set(required)) == len(required)
            and isinstance(properties, Mapping) and all(map(_covered, properties.values()))
            and _covered(schema.get("additionalProperties", True))
            and _covered(schema.get("items", True)))


def _fits(schema: Any, value: Any) -> bool:
    """Tell whether `value` fits `schema`, which `_covered` accepted."""
    if isinstance(schema, bool):
        return schema
    kind = schema.get("type")
    if kind is not None and not any(
            _has_type(value, name) for name in ([kind] if isinstance(kind, str) else kind)):
        return False
    if "enum" in schema and not (isinstance(value, str) and value in schema["enum"]):
        return False
    if _is_number(value):
        return bool(schema.get("minimum", value) <= value <= schema.get("maximum", value))
    if isinstance(value, str):
        length = len(value)  # code points, as JSON Schema counts
        return bool(schema.get("minLength", 0) <= length <= schema.get("maxLength", length))
    if isinstance(value, list):
        items = schema.get("items", True)
        return (schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value))
                and all(_fits(items, item) for item in value))
    if isinstance(value, Mapping):
        properties, extra = schema.get("properties", {}), schema.get("additionalProperties", True)
        return (all(name in value for name in schema.get("required", []))
                and all(_fits(properties.get(name, extra), item) for name, item in value.items()))
    return True
