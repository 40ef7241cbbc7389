"""The Tool value, its input, result and context, and the schema gate before every run."""

from __future__ import annotations

import asyncio
import builtins
import functools
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aimon_core.llm import ImageBlock, TextBlock, ToolDefinition

if TYPE_CHECKING:
    from aimon_core.filesystem import VirtualFileSystem
    from aimon_core.shell import VirtualShell
    from aimon_core.tools._state import ToolState

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class PathSubject:
    """The tool acts on the path in parameter `param`; `writes` if it changes it."""

    param: str
    writes: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandSubject:
    """The tool runs the shell command in parameter `param`."""

    param: str


Subject = PathSubject | CommandSubject


class ToolInputError(ValueError):
    """A tool parameter is missing or of the wrong type."""

    def __init__(self, name: str, expected: str) -> None:
        super().__init__(f"parameter {name!r} must be {expected}")
        self.name = name


@dataclass(frozen=True, slots=True)
class ToolInput:
    """The model's arguments for one tool call, with typed accessors."""

    raw: Mapping[str, Any]

    def str(self, name: str) -> str:
        """Return a required string parameter."""
        value = self.raw.get(name)
        if not isinstance(value, str):
            raise ToolInputError(name, "a string")
        return value

    def opt_str(
        self, name: builtins.str, default: builtins.str | None = None
    ) -> builtins.str | None:
        """Return an optional string parameter."""
        value = self.raw.get(name, default)
        if value is not None and not isinstance(value, str):
            raise ToolInputError(name, "a string")
        return value

    def int(self, name: builtins.str, default: builtins.int | None = None) -> builtins.int | None:
        """Return an optional integer parameter (whole floats are accepted)."""
        value = self.raw.get(name, default)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ToolInputError(name, "an integer")
        return value

    def bool(self, name: builtins.str, default: builtins.bool = False) -> builtins.bool:
        """Return an optional boolean parameter."""
        value = self.raw.get(name, default)
        if not isinstance(value, bool):
            raise ToolInputError(name, "true or false")
        return value

    def list(self, name: builtins.str) -> builtins.list[Any]:
        """Return a required list parameter."""
        value = self.raw.get(name)
        if not isinstance(value, list):
            raise ToolInputError(name, "an array")
        return value


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """What a tool run produced. Tools return errors as values; they never raise."""

    content: tuple[TextBlock | ImageBlock, ...]
    is_error: bool = False
    # Extra facts for the UI and hooks (a diff for edits, the todo list, ...); never sent
    # to the model.
    data: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def ok(cls, text: str, **data: Any) -> ToolResult:
        """Make a successful text result."""
        return cls(content=(TextBlock(text=text),), data=data)

    @classmethod
    def error(cls, message: str, exc: BaseException | None = None) -> ToolResult:
        """Make an error result the model can act on."""
        if exc is not None and str(exc) and str(exc) not in message:
            message = f"{message}: {exc}"
        return cls(content=(TextBlock(text=message),), is_error=True)

    @property
    def text(self) -> str:
        """Return the text parts joined."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """What a tool run may use. Immutable; per-session state lives in `state`."""

    project_root: Path
    cwd: Path
    fs: VirtualFileSystem
    shell: VirtualShell
    state: ToolState
    session_id: str = ""
    agent_name: str = "default"


ToolRun = Callable[[ToolInput, ToolContext], Awaitable[ToolResult]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """A tool the model can call: its definition, traits and the function that runs it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    run: ToolRun
    read_only: bool = False
    subject: Subject | None = None

    @property
    def definition(self) -> ToolDefinition:
        """Return what the model is told about this tool."""
        return ToolDefinition(
            name=self.name, description=self.description, input_schema=self.input_schema
        )


class ToolRegistry:
    """The tools one agent may use, by name, in a stable order."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        """Add a tool; a second tool with the same name is an error."""
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        self._tools[tool.name] = tool

    def get(self, name: str) -> Tool | None:
        """Return the tool called `name`, if any."""
        return self._tools.get(name)

    def names(self) -> tuple[str, ...]:
        """Return the tool names in registration order."""
        return tuple(self._tools)

    def definitions(self) -> tuple[ToolDefinition, ...]:
        """Return the definitions sent to the model."""
        return tuple(t.definition for t in self._tools.values())

    def only(self, names: Iterable[str]) -> ToolRegistry:
        """Return a registry holding just the named tools that exist here."""
        wanted = set(names)
        return ToolRegistry(t for t in self._tools.values() if t.name in wanted)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools


@functools.cache
def _validator(schema_json: str) -> Any:
    import jsonschema  # the gate is the only user; keep it off the start-up path

    schema = json.loads(schema_json)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def check_input(tool: Tool, raw: Mapping[str, Any]) -> str | None:
    """Return why `raw` does not fit the tool's schema, or None if it does."""
    validator = _validator(json.dumps(tool.input_schema, sort_keys=True))
    errors = sorted(validator.iter_errors(dict(raw)), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    lines = []
    for err in errors[:5]:
        where = ".".join(str(p) for p in err.absolute_path)
        lines.append(f"{where}: {err.message}" if where else err.message)
    return "; ".join(lines)


async def execute_tool(tool: Tool, raw: Mapping[str, Any], context: ToolContext) -> ToolResult:
    """Validate the input, run the tool, and turn any failure into an error result."""
    problem = check_input(tool, raw)
    if problem is not None:
        return ToolResult.error(
            f"Invalid input for {tool.name}: {problem}. Fix the arguments and call it again."
        )
    try:
        return await tool.run(ToolInput(raw), context)
    except asyncio.CancelledError:
        raise
    except ToolInputError as exc:
        return ToolResult.error(f"Invalid input for {tool.name}: {exc}")
    except Exception as exc:
        log.exception("tool %s failed", tool.name)
        return ToolResult.error(f"{tool.name} failed unexpectedly ({type(exc).__name__})", exc)
