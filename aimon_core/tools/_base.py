"""The Tool value, its input, result and context, and the schema gate before every run."""

from __future__ import annotations

import asyncio
import enum
import functools
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aimon_core.llm import ImageBlock, TextBlock, ToolDefinition
from aimon_core.shell import OutputSink, redact
from aimon_core.tools._detail import FileChange, ToolDetail
from aimon_core.tools._fastcheck import plainly_fits
from aimon_core.tools._interrupt import InterruptBehavior
from aimon_core.tools._owned import RuleSubject
from aimon_core.tools._preview import Describer, Previewer

if TYPE_CHECKING:
    from aimon_core.agent import Turn
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


@dataclass(frozen=True, slots=True, kw_only=True)
class NameSubject:
    """The tool starts the thing named in parameter `param` (a skill, a subagent): rules say
    `Skill(name)`, `Task(name)`. The name is read as `subject_name` reads it."""

    param: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerSubject:
    """The tool reaches the MCP server named in parameter `param` (its resources): a rule on
    the whole server (`mcp__github`) covers the call; no server named means every server."""

    param: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DomainSubject:
    """The tool reaches the host of the URL in parameter `param` (WebFetch): rules say
    `WebFetch(domain:example.com)`, and a call no rule covers asks, read-only or not."""

    param: str


Subject = PathSubject | CommandSubject | NameSubject | ServerSubject | RuleSubject | DomainSubject


def url_host(url: str) -> tuple[str, int] | None:
    """Return the lower-case host and port of an http(s) URL, or None if it has none."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.hostname.lower().rstrip("."), port or (443 if parts.scheme == "https" else 80)


def subject_name(text: str) -> str:
    """Return a skill's or a subagent's name as typed (`/review `, ` review`) read as a name.

    The tools that start them look names up this way, and rules are matched this way, so a
    spelling the tool accepts is never one a rule misses.
    """
    return text.strip().lstrip("/").strip()

PathFilter = Callable[[Path], bool]
"""Tell whether a tool may read a path (False: a permission deny rule forbids it)."""


class ToolInputError(ValueError):
    """A tool parameter is missing or of the wrong type."""

    def __init__(self, name: str, expected: str) -> None:
        super().__init__(f"parameter {name!r} must be {expected}")
        self.name = name


@dataclass(frozen=True, slots=True)
class ToolInput:
    """The model's arguments for one tool call, with typed accessors."""

    raw: Mapping[str, Any]

    def string(self, name: str) -> str:
        """Return a required string parameter."""
        value = self.raw.get(name)
        if not isinstance(value, str):
            raise ToolInputError(name, "a string")
        return value

    def opt_string(self, name: str, default: str | None = None) -> str | None:
        """Return an optional string parameter."""
        value = self.raw.get(name, default)
        if value is not None and not isinstance(value, str):
            raise ToolInputError(name, "a string")
        return value

    def integer(self, name: str, default: int | None = None) -> int | None:
        """Return an optional integer parameter (whole floats are accepted)."""
        value = self.raw.get(name, default)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ToolInputError(name, "an integer")
        return value

    def boolean(self, name: str, default: bool = False) -> bool:
        """Return an optional boolean parameter."""
        value = self.raw.get(name, default)
        if not isinstance(value, bool):
            raise ToolInputError(name, "true or false")
        return value

    def array(self, name: str) -> list[Any]:
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
    # Raw facts for hooks (Claude Code's tool_response fields); never sent to the model.
    data: Mapping[str, Any] = field(default_factory=dict)
    # What the result means, typed, for front ends (a diff, a todo list, a read summary).
    detail: ToolDetail | None = None

    @classmethod
    def ok(cls, text: str, *, detail: ToolDetail | None = None, **data: Any) -> ToolResult:
        """Make a successful text result."""
        return cls(content=(TextBlock(text=text),), data=data, detail=detail)

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
    """What a tool run may use. Immutable; per-session state lives in `state`.

    `turn` is the execution the call belongs to (`aimon_core.agent.Turn`: its session, hooks,
    asker and event sink), set by the executor for every call; None outside an execution.
    """

    project_root: Path
    cwd: Path
    fs: VirtualFileSystem
    shell: VirtualShell
    state: ToolState
    turn: Turn | None = None
    agent_name: str = "default"
    # (name, value) of credentials to hide from tool results: `execute_tool` replaces each
    # value with `[REDACTED:name]`. By default the credentials in aimon's own environment.
    secrets: tuple[tuple[str, str], ...] = field(default_factory=lambda: _environ_secrets())
    # Set by the permission layer when path deny rules exist; search tools skip what it refuses.
    path_filter: PathFilter | None = None
    # Told a running call's output as it comes (set by the executor for each call; None
    # outside an execution): a front end shows a command's last lines while it runs.
    on_output: OutputSink | None = None


def _environ_secrets() -> tuple[tuple[str, str], ...]:
    import os

    from aimon_core.shell import secret_values

    return secret_values(os.environ)


def _redact_value(value: Any, secrets: tuple[tuple[str, str], ...]) -> Any:
    match value:
        case str():
            return redact(value, secrets)
        case list() | tuple():
            return type(value)(_redact_value(v, secrets) for v in value)
        case Mapping():
            return {k: _redact_value(v, secrets) for k, v in value.items()}
        case _:
            return value


def redact_result(result: ToolResult, secrets: tuple[tuple[str, str], ...]) -> ToolResult:
    """Return `result` with every secret value replaced in its text and its data."""
    if not secrets:
        return result
    content = tuple(
        TextBlock(text=redact(b.text, secrets)) if isinstance(b, TextBlock) else b
        for b in result.content
    )
    data = _redact_value(result.data, secrets) if result.data else result.data
    detail = result.detail
    if isinstance(detail, FileChange):  # a diff is shown to the user: no secrets there either
        detail = replace(detail, diff=redact(detail.diff, secrets))
    if content == result.content and data == result.data and detail == result.detail:
        return result
    return replace(result, content=content, data=data, detail=detail)


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
    # What Ctrl-C does to a call while it runs: cancel it (a command) or let it end (a write).
    interrupt: InterruptBehavior = InterruptBehavior.CANCEL
    # How a call is shown: the argument of its one-line label (`calc.py` in `Read(calc.py)`),
    # and the change it would make, shown by an approval question. None: the defaults.
    describe: Describer | None = None
    preview: Previewer | None = None

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
        # Past this many tokens of schemas, MCP tools go without theirs (ToolSearch loads
        # them: `aimon_core.tools._search`); None sends every schema.
        self.schema_budget: int | None = None
        self._version = 0  # changes with every add and remove
        self._sent: tuple[int, int | None, tuple[ToolDefinition, ...]] | None = None
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        """Add a tool; a second tool with the same name is an error."""
        if tool.name in self._tools:
            raise ValueError(f"tool {tool.name!r} is registered twice")
        self._tools[tool.name] = tool
        self._version += 1

    def remove(self, name: str) -> bool:
        """Remove the tool called `name`; return whether there was one.

        Tools that join late (an MCP server's, once it connects) come and go this way; the
        executor reads `definitions()` before every model call, so the next call sees it.
        """
        self._version += 1
        return self._tools.pop(name, None) is not None

    def get(self, name: str) -> Tool | None:
        """Return the tool called `name`, if any."""
        return self._tools.get(name)

    def names(self) -> tuple[str, ...]:
        """Return the tool names in registration order."""
        return tuple(self._tools)

    def definitions(self) -> tuple[ToolDefinition, ...]:
        """Return the definitions sent to the model (the same tuple while nothing changed)."""
        from aimon_core.tools._search import sent_definitions

        if self._sent is None or self._sent[:2] != (self._version, self.schema_budget):
            self._sent = (self._version, self.schema_budget,
                          sent_definitions(tuple(self._tools.values()), self.schema_budget))
        return self._sent[2]

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


# schema object's id -> (the schema, its validator). Keyed by identity: a tool's schema is
# built once and checked on every call, and dumping it to JSON as a cache key cost more than
# the check itself. The schema is held so that its id cannot be reused.
_VALIDATORS: dict[int, tuple[Mapping[str, Any], Any]] = {}


@functools.cache
def _validator_for(schema_json: str) -> Any:
    import jsonschema  # the gate is the only user; keep it off the start-up path

    schema = json.loads(schema_json)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _validator(schema: Mapping[str, Any]) -> Any:
    entry = _VALIDATORS.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = (schema, _validator_for(json.dumps(schema, sort_keys=True)))
        _VALIDATORS[id(schema)] = entry
    return entry[1]


def warm_validators(tools: Iterable[Tool]) -> None:
    """Import jsonschema and build every tool's validator now (blocking: run it in a thread).

    A call whose input `check_input` cannot accept at a glance otherwise pays for both.
    """
    for tool in tools:
        _validator(tool.input_schema)


class SchemaGate(enum.Enum):
    """What the schema gate does with input that does not fit (settings `tools.schemaGate`)."""

    STRICT = "strict"  # refuse the call: the model gets the reason and sends it again
    WARN = "warn"  # log the reason and run the call (the tool still reads its input strictly)


def check_input(tool: Tool, raw: Mapping[str, Any],
                gate: SchemaGate = SchemaGate.STRICT) -> str | None:
    """Return why `raw` does not fit the tool's schema, or None if it does (or if `gate` is
    WARN: then the reason is logged).

    Input that plainly fits a schema of the common keywords is accepted without jsonschema
    (`_fastcheck`: its import is ~85 ms); jsonschema decides everything else and words why.
    """
    problem = _misfit(tool, raw)
    if problem is not None and gate is SchemaGate.WARN:
        log.warning("%s: input does not fit its schema (%s); run anyway (schemaGate warn)",
                    tool.name, problem)
        return None
    return problem


def _misfit(tool: Tool, raw: Mapping[str, Any]) -> str | None:
    if plainly_fits(tool.input_schema, raw) is True:
        return None
    validator = _validator(tool.input_schema)
    errors = sorted(validator.iter_errors(dict(raw)), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    lines = []
    for err in errors[:5]:
        where = ".".join(str(p) for p in err.absolute_path)
        lines.append(f"{where}: {err.message}" if where else err.message)
    return "; ".join(lines)


async def execute_tool(
    tool: Tool, raw: Mapping[str, Any], context: ToolContext, *, checked: bool = False
) -> ToolResult:
    """Validate the input, run the tool, turn any failure into an error result, and redact.

    `checked`: the caller has just passed `raw` through `check_input` (the executor does,
    before the hooks and the permission gate); it is not checked a second time.

    This is the one place where credentials (`context.secrets`) are removed from tool
    results, before they are stored, shown or sent.
    """
    return redact_result(await _run_tool(tool, raw, context, checked=checked), context.secrets)


async def _run_tool(
    tool: Tool, raw: Mapping[str, Any], context: ToolContext, *, checked: bool
) -> ToolResult:
    problem = None if checked else check_input(tool, raw)
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
