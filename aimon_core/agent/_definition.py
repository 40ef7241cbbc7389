"""Agent definitions: Markdown with YAML frontmatter, the body a Mustache prompt template.

Both aimon's own shape and Claude Code's subagent shape load:

    ---
    name: reviewer
    description: Reviews a diff
    model: {name: claude-sonnet-4-5, temperature: 0.2, maxTokens: 8000}   # or: model: sonnet
    maxIterations: 40                                                     # or: max-iterations
    variables: {language: Python}
    tools: [Read, Grep, Glob]                  # or: tools: Read, Grep / allowed-tools: Read Grep
    ---
    You review {{language}} code ...

Unknown keys are kept in `extra` and named in a warning. Frontmatter that is not valid YAML (a
common case: an unquoted colon inside a description) is read key by key as Claude Code reads
it (`agent._frontmatter.read_frontmatter`), with a warning per key. A name that cannot be typed
(spaces, capitals) loads under the file's name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from aimon_core.agent._frontmatter import (
    Frontmatter,
    NoFrontmatterError,
    read_frontmatter,
    split_frontmatter,
    usable_name,
)

# A model id, or an alias (`sonnet[1m]`); never words (`haiku | sonnet <pick one>`).
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/@\[\]-]*")

class AgentDefinitionError(ValueError):
    """An agent file cannot be used; says which file and why."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentModel:
    """The model an agent asks for; None fields fall back to the session's choice."""

    name: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentDefinition:
    """One agent: who it is, its prompt template, model, budget and tools."""

    name: str
    description: str
    prompt_template: str
    model: AgentModel = field(default_factory=AgentModel)
    max_iterations: int | None = None
    variables: Mapping[str, str] = field(default_factory=dict)
    # None: every tool the runtime has; (): no tools at all.
    tools: tuple[str, ...] | None = None
    # Claude Code's `disallowedTools`: tools taken away from `tools` (or from all of them);
    # an entry with a pattern (`Bash(rm:*)`) takes the whole tool away.
    disallowed_tools: tuple[str, ...] = ()
    source: str = "<memory>"
    extra: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    # The Mustache partials (`{{> name}}`) the template may use, read when the definition was
    # loaded, from its own folder only (subagent.read_partials); no other partial is found.
    partials: Mapping[str, str] = field(default_factory=dict)

    def render_prompt(self, values: Mapping[str, str] | None = None) -> str:
        """Render the prompt template with the agent's variables, overridden by `values`.

        Rendering reads no file: a partial that was not loaded with the definition renders
        as nothing (chevron would otherwise read `name.mustache` from the process's folder).
        """
        if "{{" not in self.prompt_template:  # no Mustache tag (a delimiter change is one too)
            return self.prompt_template.strip()
        import chevron  # off the start-up path

        merged = {**self.variables, **(values or {})}
        return str(chevron.render(self.prompt_template, merged, partials_path=None,
                                  partials_dict=dict(self.partials))).strip()


def parse_frontmatter(text: str, source: str) -> tuple[dict[str, Any], str, tuple[str, ...]]:
    """Return (fields, body, warnings) of a Markdown file with YAML frontmatter.

    YAML that Claude Code accepts and PyYAML does not is recovered key by key
    (`read_frontmatter`), one warning per key naming what was assumed.
    """
    return _read(text, source)[:3]


def _read(text: str, source: str
          ) -> tuple[dict[str, Any], str, tuple[str, ...], Frontmatter]:
    front, _ = split_frontmatter(text.replace("\r\n", "\n") if "\r" in text else text)
    if front is None:
        if text.lstrip().startswith("---"):
            raise AgentDefinitionError(
                source, "no YAML frontmatter: the opening --- must be the first line, at column 0,"
                " and a closing --- line must follow")
        raise AgentDefinitionError(source, "no YAML frontmatter (the file must start with ---)")
    try:
        read = read_frontmatter(text)
    except NoFrontmatterError as exc:
        raise AgentDefinitionError(source, str(exc)) from None
    warnings = tuple(f"{source}: frontmatter {w}" for w in read.warnings)
    return read.fields, read.body, warnings, read


def split_tool_list(value: object, source: str) -> tuple[str, ...] | None:
    """Normalise a tools field: a YAML list or a comma/space separated string.

    A pattern stays attached to its tool: `Bash(git log:*)` is one entry even without commas.
    """
    if value is None:
        return None
    if isinstance(value, list):
        if not all(isinstance(v, str) for v in value):
            raise AgentDefinitionError(source, "tools must be a list of tool names")
        return tuple(v.strip() for v in value if v.strip())
    if not isinstance(value, str):
        raise AgentDefinitionError(source, "tools must be a list or a comma-separated string")
    value = value.strip()
    if value.startswith("[") and value.endswith("]"):  # a flow list read as text
        value = value[1:-1]
    separator = "," if "," in value else None
    if "(" not in value:
        return tuple(p.strip() for p in value.split(separator) if p.strip())
    parts: list[str] = []
    depth, current = 0, ""
    for char in value:
        depth += (char == "(") - (char == ")")
        is_sep = char == "," if separator else char.isspace()
        if is_sep and depth <= 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return tuple(p.strip() for p in parts if p.strip())


def _model(value: object, source: str) -> AgentModel:
    if value is None:
        return AgentModel()
    if isinstance(value, str):
        name = value.strip()
        return AgentModel(name=None if name in ("", "inherit") else name)
    if not isinstance(value, dict):
        raise AgentDefinitionError(source, "model must be a name or {name, temperature, maxTokens}")
    model_name = value.get("name")
    temperature = value.get("temperature")
    max_tokens = value.get("maxTokens", value.get("max_tokens"))
    if model_name is not None and not isinstance(model_name, str):
        raise AgentDefinitionError(source, "model.name must be a string")
    if temperature is not None and not isinstance(temperature, int | float):
        raise AgentDefinitionError(source, "model.temperature must be a number")
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens <= 0):
        raise AgentDefinitionError(source, "model.maxTokens must be a positive whole number")
    return AgentModel(
        name=None if model_name in (None, "inherit") else model_name,
        temperature=None if temperature is None else float(temperature),
        max_tokens=max_tokens,
    )


def positive_int(value: object, source: str, key: str) -> int | None:
    """Read a positive whole number (also from a string of digits); None when absent."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise AgentDefinitionError(source, f"{key} must be a positive whole number, not {value!r}")
    return value


_ITERATION_KEYS = ("maxIterations", "max-iterations", "max_iterations")
_TOOL_KEYS = ("tools", "allowed-tools", "allowedTools")
_DENIED_KEYS = ("disallowedTools", "disallowed-tools")
# Keys Claude Code reads that change nothing here (`color` tints its UI): no warning.
# `hooks` is read by the subagent registry (aimon_core.subagent), from `extra`; `bundles` by
# aimon_core.bundle (the bundles an agent carries).
_IGNORED = frozenset({"color", "hooks", "bundles"})
_KNOWN = frozenset({"name", "description", "model", "variables", *_ITERATION_KEYS, *_TOOL_KEYS,
                    *_DENIED_KEYS})


def _tools(fields: Mapping[str, Any], source: str) -> tuple[str, ...] | None:
    present = [k for k in _TOOL_KEYS if k in fields]
    if len(present) > 1:
        raise AgentDefinitionError(
            source, f"give the tool list once, not as {' and '.join(present)}")
    return split_tool_list(fields[present[0]], source) if present else None


def _tool_lists(fields: Mapping[str, Any], read: Frontmatter, source: str
                ) -> tuple[tuple[str, ...] | None, tuple[str, ...], tuple[str, ...]]:
    """Return the agent's tools, the tools taken away (`disallowedTools`), and warnings.

    Never more than the text says: a list that cannot be read gives no tools.
    """
    tools = _tools(fields, source)
    present = [k for k in _DENIED_KEYS if k in fields]
    if len(present) > 1:
        raise AgentDefinitionError(source, f"give {present[0]} once, not as "
                                           f"{' and '.join(present)}")
    denied = (split_tool_list(fields[present[0]], source) or ()) if present else ()
    lost = sorted(read.unreadable.intersection((*_TOOL_KEYS, *_DENIED_KEYS)))
    if lost:
        return (), denied, (f"{source}: {lost[0]} cannot be read; the agent gets no tools",)
    notes = tuple(f"{source}: {present[0]} entry {entry!r} takes {entry.split('(')[0].strip()!r}"
                  " away entirely (a tool list names whole tools)"
                  for entry in denied if "(" in entry)
    if tools is not None and denied:
        gone = {entry.split("(", 1)[0].strip() for entry in denied}
        tools = tuple(t for t in tools if t.split("(", 1)[0].strip() not in gone)
    return tools, denied, notes


def _max_iterations(fields: Mapping[str, Any], source: str) -> int | None:
    for key in _ITERATION_KEYS:
        if key in fields:
            return positive_int(fields[key], source, key)
    return None


def _description(value: object, source: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise AgentDefinitionError(source, "description must be a string")
    # Claude Code files often hold `\n` as two characters in a plain scalar ("Examples:\n\n
    # <example>…"): the author meant line breaks.
    return value.replace("\\n", "\n").strip()


def parse_agent(text: str, *, source: str = "<memory>", default_name: str | None = None
                ) -> AgentDefinition:
    """Parse an agent definition; raise AgentDefinitionError naming the source and the field."""
    fields, body, warnings, read = _read(text, source)
    written = fields.get("name")
    if written is not None and not isinstance(written, str):
        raise AgentDefinitionError(source, f"name {written!r} must be text")
    name, note = usable_name(written.strip() if written else None, default_name or "")
    if name is None:
        raise AgentDefinitionError(source, f"name {written!r} must be letters, digits, - _ . or :")
    if note:
        warnings += (f"{source}: {note} (the file's name)",)
    description = _description(fields.get("description"), source)
    variables = fields.get("variables") or {}
    if not isinstance(variables, dict):
        raise AgentDefinitionError(source, "variables must be a mapping of names to values")
    if not body.strip():
        raise AgentDefinitionError(source, "the prompt (the Markdown body) is empty")
    if "hooks" in read.unreadable:
        raise AgentDefinitionError(source, "hooks cannot be read (not valid YAML); hooks are "
                                           "code, never half read")
    tools, denied, notes = _tool_lists(fields, read, source)
    warnings += notes
    model = _model(fields.get("model"), source)
    if model.name is not None and not _MODEL_NAME.fullmatch(model.name):
        warnings += (f"{source}: model {model.name!r} is not a model name; the session's "
                     "model is used",)
        model = replace(model, name=None)
    unknown = sorted(k for k in fields if k not in _KNOWN and k not in _IGNORED)
    if unknown:
        warnings += (f"{source}: unknown frontmatter key(s) {', '.join(unknown)}; ignored",)
    return AgentDefinition(
        name=name,
        description=description,
        prompt_template=body.strip() + "\n",
        model=model,
        max_iterations=_max_iterations(fields, source),
        variables={str(k): "" if v is None else str(v) for k, v in variables.items()},
        tools=tools,
        disallowed_tools=denied,
        source=source,
        extra={k: v for k, v in fields.items() if k not in _KNOWN},
        warnings=warnings,
    )


def load_agent_file(path: Path) -> AgentDefinition:
    """Read and parse an agent file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise AgentDefinitionError(str(path), f"cannot be read ({exc})") from exc
    return parse_agent(text, source=str(path), default_name=path.stem)


def load_builtin_agent(name: str = "default") -> AgentDefinition:
    """Load an agent shipped in builtin_bundles."""
    from importlib import resources

    root = resources.files("builtin_bundles")
    if name == "default":
        entry = root / "default" / "agent.md"
    else:
        entry = root / "default" / "agents" / f"{name}.md"
    if not entry.is_file():
        raise AgentDefinitionError(f"builtin:{name}", "no such built-in agent")
    return parse_agent(entry.read_text(encoding="utf-8"), source=f"builtin:{name}",
                       default_name=name)
