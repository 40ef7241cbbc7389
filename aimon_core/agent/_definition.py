"""Agent definitions: Markdown with YAML frontmatter, the body a Mustache prompt template.

Both aimon's own shape and Claude Code's subagent shape load:

    ---
    name: reviewer
    description: Reviews a diff
    model: {name: claude-sonnet-4-5, temperature: 0.2, maxTokens: 8000}   # or: model: sonnet
    maxIterations: 40
    variables: {language: Python}
    tools: [Read, Grep, Glob]                                             # or: tools: Read, Grep
    ---
    You review {{language}} code ...

Unknown keys are kept in `extra` and ignored. Frontmatter that is not valid YAML (a common
case: an unquoted colon inside a description) is recovered line by line, with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")


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
    source: str = "<memory>"
    extra: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def render_prompt(self, values: Mapping[str, str] | None = None) -> str:
        """Render the prompt template with the agent's variables, overridden by `values`."""
        import chevron  # off the start-up path

        merged = {**self.variables, **(values or {})}
        return str(chevron.render(self.prompt_template, merged)).strip()


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Split `---` YAML frontmatter from the body; None when there is no frontmatter."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return None, text
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return "".join(lines[1:i]), "".join(lines[i + 1 :])
    return None, text


def _fallback_fields(front: str) -> dict[str, Any]:
    """Read `key: rest of line` pairs when the frontmatter is not valid YAML."""
    fields: dict[str, Any] = {}
    key: str | None = None
    for line in front.splitlines():
        match = re.match(r"^([A-Za-z_][\w-]*):\s*(.*)$", line)
        if match:
            key, value = match.group(1), match.group(2).strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            fields[key] = value
        elif key is not None and line.startswith((" ", "\t")) and line.strip():
            fields[key] = f"{fields[key]} {line.strip()}".strip()
    return fields


def parse_frontmatter(text: str, source: str) -> tuple[dict[str, Any], str, tuple[str, ...]]:
    """Return (fields, body, warnings) of a Markdown file with YAML frontmatter."""
    import yaml

    front, body = split_frontmatter(text)
    if front is None:
        raise AgentDefinitionError(source, "no YAML frontmatter (the file must start with ---)")
    try:
        loaded = yaml.safe_load(front) if front.strip() else {}
    except yaml.YAMLError as exc:
        reason = str(exc).splitlines()[0]
        return _fallback_fields(front), body, (f"{source}: frontmatter is not valid YAML "
                                               f"({reason}); read it line by line",)
    if not isinstance(loaded, dict):
        raise AgentDefinitionError(source, "frontmatter must be a mapping of keys to values")
    return loaded, body, ()


def split_tool_list(value: object, source: str) -> tuple[str, ...] | None:
    """Normalise a tools field: a YAML list or a comma/space separated string."""
    if value is None:
        return None
    if isinstance(value, list):
        if not all(isinstance(v, str) for v in value):
            raise AgentDefinitionError(source, "tools must be a list of tool names")
        return tuple(v.strip() for v in value if v.strip())
    if not isinstance(value, str):
        raise AgentDefinitionError(source, "tools must be a list or a comma-separated string")
    separator = "," if "," in value else None
    parts: list[str] = []
    depth, current = 0, ""
    for char in value:
        depth += (char == "(") - (char == ")")
        is_sep = char == "," if separator else char.isspace()
        if is_sep and depth == 0:
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


_KNOWN = {"name", "description", "model", "maxIterations", "max_iterations", "variables", "tools"}


def parse_agent(text: str, *, source: str = "<memory>", default_name: str | None = None
                ) -> AgentDefinition:
    """Parse an agent definition; raise AgentDefinitionError naming the source and the field."""
    fields, body, warnings = parse_frontmatter(text, source)
    name = fields.get("name", default_name)
    if not isinstance(name, str) or not _NAME.match(name.strip()):
        raise AgentDefinitionError(source, f"name {name!r} must be letters, digits, - _ . or :")
    description = fields.get("description", "")
    if not isinstance(description, str):
        raise AgentDefinitionError(source, "description must be a string")
    max_iterations = fields.get("maxIterations", fields.get("max_iterations"))
    if max_iterations is not None and (
        not isinstance(max_iterations, int) or isinstance(max_iterations, bool)
        or max_iterations <= 0
    ):
        if isinstance(max_iterations, str) and max_iterations.strip().isdigit():
            max_iterations = int(max_iterations)
        else:
            raise AgentDefinitionError(source, "maxIterations must be a positive whole number")
    variables = fields.get("variables") or {}
    if not isinstance(variables, dict):
        raise AgentDefinitionError(source, "variables must be a mapping of names to values")
    if not body.strip():
        raise AgentDefinitionError(source, "the prompt (the Markdown body) is empty")
    return AgentDefinition(
        name=name.strip(),
        description=description.strip(),
        prompt_template=body.strip() + "\n",
        model=_model(fields.get("model"), source),
        max_iterations=max_iterations,
        variables={str(k): "" if v is None else str(v) for k, v in variables.items()},
        tools=split_tool_list(fields.get("tools"), source),
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
