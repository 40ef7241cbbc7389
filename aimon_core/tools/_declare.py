"""Declare a tool from a typed async function: its name, docstring and parameters."""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Awaitable, Callable
from typing import Any, overload

from aimon_core.tools._base import Tool, ToolContext, ToolInput, ToolResult

_JSON_TYPES: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    list[str]: {"type": "array", "items": {"type": "string"}},
}

ToolFunction = Callable[..., Awaitable[Any]]


@overload
def tool(function: ToolFunction, /) -> Tool: ...


@overload
def tool(*, name: str | None = None, read_only: bool = False) -> Callable[[ToolFunction], Tool]:
    ...


def tool(function: ToolFunction | None = None, /, *, name: str | None = None,
         read_only: bool = False) -> Tool | Callable[[ToolFunction], Tool]:
    """Make a Tool of an async function; use as `@tool` or `@tool(read_only=True)`.

    The docstring is what the model is told; each parameter (str, int, float, bool or
    list[str]; required unless it has a default) becomes a property of the input schema. A
    parameter named `ctx` receives the ToolContext instead (its `turn` is the execution the
    call belongs to). The return value becomes the result's text (a ToolResult is kept as it
    is); an exception becomes an error result the model can read.
    """
    def make(fn: ToolFunction) -> Tool:
        return _declare(fn, name=name or fn.__name__, read_only=read_only)

    return make if function is None else make(function)


def _declare(fn: ToolFunction, *, name: str, read_only: bool) -> Tool:
    hints = typing.get_type_hints(fn)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in inspect.signature(fn).parameters.values():
        if param.name == "ctx":
            continue
        schema = _JSON_TYPES.get(_unoptional(hints.get(param.name, str)))
        if schema is None:
            raise TypeError(f"tool {name!r}: parameter {param.name!r} needs a str, int, float, "
                            "bool or list[str] annotation")
        properties[param.name] = dict(schema)
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
    takes_ctx = "ctx" in inspect.signature(fn).parameters

    async def run(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        arguments = dict(tool_input.raw)
        if takes_ctx:
            arguments["ctx"] = ctx
        try:
            value = await fn(**arguments)
        except Exception as exc:  # the model reads what went wrong and may try again
            return ToolResult.error(f"{name} failed: {exc}", exc)
        return value if isinstance(value, ToolResult) else ToolResult.ok(str(value))

    return Tool(name=name, description=inspect.getdoc(fn) or name, run=run, read_only=read_only,
                input_schema={"type": "object", "properties": properties, "required": required,
                              "additionalProperties": False})


def _unoptional(hint: Any) -> Any:
    """Return `X` for `X | None`, else the hint."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0] if len(args) == 1 else hint
    return hint
