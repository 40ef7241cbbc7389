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
common case: an unquoted colon inside a description) is repaired by quoting such values, and
failing that read line by line, with a warning.
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
        if "{{" not in self.prompt_template:  # no Mustache tag (a delimiter change is one too)
            return self.prompt_template.strip()
        import chevron  # off the start-up path

        merged = {**self.variables, **(values or {})}
        return str(chevron.render(self.prompt_template, merged)).strip()


_CLOSING = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)


def split_frontmatter(text: str) -> tuple[str | None, str]:
    """Split `---` YAML frontmatter from the body; None when there is no frontmatter."""
    text = text.removeprefix("\ufeff")
    first_end = text.find("\n")
    first = text if first_end < 0 else text[:first_end]
    if first.strip() != "---" or first_end < 0:
        return None, text
    # A regex search, not splitlines(): this runs for every skill and agent at start-up.
    closing = _CLOSING.search(text, first_end + 1)
    if closing is None:
        return None, text
    body_start = text.find("\n", closing.end())
    return text[first_end + 1 : closing.start()], "" if body_start < 0 else text[body_start + 1 :]


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


_TOP_LEVEL = re.compile(r"^([A-Za-z_][\w-]*):[ \t]+(\S.*?)\s*$")


def _quote_colon_values(front: str) -> str | None:
    """Single-quote top-level plain values holding `: `; None when nothing needed quoting."""
    changed = False
    lines = []
    for line in front.splitlines():
        match = _TOP_LEVEL.match(line)
        if match and ": " in match.group(2) and match.group(2)[0] not in "'\"|>[{&*!#":
            value = match.group(2).replace("'", "''")
            line = f"{match.group(1)}: '{value}'"
            changed = True
        lines.append(line)
    return "\n".join(lines) + "\n" if changed else None


_KEY_LINE = re.compile(r"([A-Za-z_][\w-]*):(?:[ \t]+(\S(?:.*\S)?))?[ \t]*")
_ITEM = re.compile(r"- (\S(?:.*\S)?)[ \t]*")
_PLAIN_START = frozenset("-?:,[]{}#&*!|>'\"%@`")
_BLOCK_STYLES = frozenset({">", ">-", "|", "|-"})
# Keys PyYAML reads as bool or null (`on:` is True): leave those files to it.
_NOT_STR_KEYS = frozenset({"y", "n", "yes", "no", "on", "off", "true", "false", "null"})


def _simple_fields(front: str) -> dict[str, Any] | None:
    """Read the common shapes of frontmatter without PyYAML; None when YAML must decide.

    Handles top-level `key: value` lines whose values are one-line strings, `>`/`|` block
    scalars of evenly indented lines, and one level of `- item` lists or `key: value` maps. Most
    skill and agent files are like that; reading them here costs a fifth of PyYAML's ~0.1 ms a
    file. Anything else (other types, flow style, anchors, deeper nesting) returns None. PyYAML's
    own rules for plain values are followed (`plain_kind`), so `true`, `1.0`, `null` or `yes`
    are read as PyYAML reads them or go to it; PyYAML itself is not imported.
    """
    lines = front.replace("\r\n", "\n").split("\n")
    fields: dict[str, Any] = {}
    i = 0
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        match = _KEY_LINE.fullmatch(lines[i])
        if match is None or match.group(1) in fields or match.group(1).lower() in _NOT_STR_KEYS:
            return None
        key, value = match.groups()
        start = i = i + 1
        while i < len(lines) and (not lines[i].strip() or lines[i][0] in " \t"):
            i += 1
        block = lines[start:i]
        parsed: object
        if value is None:
            parsed = _nested(block)
        elif value in _BLOCK_STYLES:
            parsed = _block_scalar(block, value)
        else:
            parsed = None if any(line.strip() for line in block) else _value(value)
        if parsed is None:
            return None
        fields[key] = parsed
    return fields


def _scalar(value: str) -> str | None:
    """Return the string a one-line YAML scalar reads as; None when it is not plainly a string."""
    if value[0] in "'\"":
        inner = value[1:-1]
        if len(value) < 2 or value[-1] != value[0]:
            return None
        if value[0] == "'":
            return None if "'" in inner.replace("''", "") else inner.replace("''", "'")
        return None if '"' in inner or "\\" in inner else inner
    if value[0] in _PLAIN_START or ": " in value or " #" in value or value.endswith(":"):
        return None
    return value if plain_kind(value) == "str" else None


_BOOLS = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}
_DECIMAL = re.compile(r"0|[1-9][0-9]*")
# PyYAML's implicit types (YAML 1.1, yaml/resolver.py) are chosen by a plain value's first
# character: these words are its booleans and nulls, and these first characters may make a
# number, a timestamp, `<<`, `=` or the `!`, `&`, `*` of its `yaml` tag.
_YAML_BOOL_WORDS = frozenset({
    "yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE",
    "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF"})
_YAML_NULL_WORDS = frozenset({"~", "null", "Null", "NULL"})
_YAML_TYPED_START = frozenset("-+.0123456789<=~!&*")


def plain_kind(value: str) -> str | None:
    """Return what PyYAML reads a non-empty plain scalar as: "str", "bool", "null", "int".

    None when it may be something else (a float, a timestamp, an octal or `1_000` int):
    PyYAML decides those. `tests/agent/test_plain_kind.py` holds this to PyYAML's resolver.
    """
    if value in _YAML_BOOL_WORDS:
        return "bool"
    if value in _YAML_NULL_WORDS:
        return "null"
    if value[0] not in _YAML_TYPED_START:
        return "str"
    return "int" if _DECIMAL.fullmatch(value) else None


def _value(value: str) -> object:
    """Return a one-line scalar as a string, a decimal int or a bool; None: ask YAML."""
    text = _scalar(value)
    if text is not None:
        return text
    kind = plain_kind(value) if value[0] not in _PLAIN_START else None
    if kind == "int":
        return int(value)
    if kind == "bool":
        return _BOOLS.get(value.lower())
    return None


def _indent(block: list[str]) -> int | None:
    """Return the one indentation (spaces) of the block's non-blank lines; None if uneven."""
    content = [line for line in block if line.strip()]
    if not content or not block[0].strip():
        return None
    width = len(content[0]) - len(content[0].lstrip(" "))
    if width == 0 or any(len(line) - len(line.lstrip(" ")) != width or line[width] == "\t"
                         for line in content):
        return None
    return width


def _block_scalar(block: list[str], style: str) -> str | None:
    width = _indent(block)
    if width is None or any(line and not line.strip() for line in block):
        return None
    rows = [line[width:] for line in block]
    while rows and not rows[-1]:
        rows.pop()
    if style[0] == "|":
        text = "\n".join(rows)
    else:
        text, pending = rows[0], 0
        for row in rows[1:]:
            if not row:
                pending += 1
            else:
                text += ("\n" * pending if pending else " ") + row
                pending = 0
    return text if style.endswith("-") else text + "\n"


def _nested(block: list[str]) -> list[str] | dict[str, object] | None:
    width = _indent(block)
    if width is None:
        return None
    rows = [line[width:] for line in block if line.strip()]
    if all(row.startswith("- ") for row in rows):
        items = [_ITEM.fullmatch(row) for row in rows]
        values = [None if m is None else _scalar(m.group(1)) for m in items]
        return None if None in values else [v for v in values if v is not None]
    mapping: dict[str, object] = {}
    for row in rows:
        match = _KEY_LINE.fullmatch(row)
        if match is None or match.group(2) is None or match.group(1) in mapping:
            return None
        key, value = _scalar(match.group(1)), _value(match.group(2))
        if key is None or value is None:
            return None
        mapping[key] = value
    return mapping


class FrontmatterYAMLError(ValueError):
    """PyYAML could not read a file's frontmatter; the message is PyYAML's."""


def _load_yaml(front: str) -> object:
    """Load frontmatter YAML: simple files directly, others through python-frontmatter.

    Raises FrontmatterYAMLError (PyYAML's message) for YAML that does not parse.
    """
    simple = _simple_fields(front)
    if simple is not None:
        return simple
    # Lazy: `import frontmatter` costs ~4.5 ms on top of PyYAML's ~11.5 ms (-X importtime,
    # 2 cores, 2026-11-30); start-up skips both when every file is simple.
    import yaml
    from frontmatter.default_handlers import YAMLHandler

    try:
        return YAMLHandler().load(front)
    except yaml.YAMLError as exc:
        raise FrontmatterYAMLError(str(exc)) from exc


def parse_frontmatter(text: str, source: str) -> tuple[dict[str, Any], str, tuple[str, ...]]:
    """Return (fields, body, warnings) of a Markdown file with YAML frontmatter."""
    front, body = split_frontmatter(text)
    if front is None:
        if text.lstrip().startswith("---"):
            raise AgentDefinitionError(
                source, "no YAML frontmatter: the opening --- must be the first line, at column 0,"
                " and a closing --- line must follow")
        raise AgentDefinitionError(source, "no YAML frontmatter (the file must start with ---)")
    # A top-level plain value holding ": " is never valid YAML; quoting it is the usual fix, and
    # trying it first spares PyYAML's failed parse (and the frontmatter import) for such files.
    repaired = _quote_colon_values(front)
    if repaired is not None:
        fields = _simple_fields(repaired)
        if fields is not None:
            return fields, body, (f"{source}: frontmatter is not valid YAML (a value holds "
                                  "': ' without quotes); quoted values holding ': '",)
    try:
        loaded = _load_yaml(front) if front.strip() else {}
    except FrontmatterYAMLError as exc:
        reason = str(exc).splitlines()[0]
        fields = None
        if repaired is not None:
            try:
                again = _load_yaml(repaired)
                fields = again if isinstance(again, dict) else None
            except FrontmatterYAMLError:
                fields = None
        how = "quoted values holding ': '" if fields is not None else "read it line by line"
        if fields is None:
            fields = _fallback_fields(front)
        return fields, body, (f"{source}: frontmatter is not valid YAML ({reason}); {how}",)
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise AgentDefinitionError(source, "frontmatter must be a mapping of keys to values")
    return {str(k): v for k, v in loaded.items()}, body, ()


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
# Keys Claude Code reads that change nothing here (`color` tints its UI): no warning.
_IGNORED = frozenset({"color"})
_KNOWN = frozenset({"name", "description", "model", "variables", *_ITERATION_KEYS, *_TOOL_KEYS})


def _tools(fields: Mapping[str, Any], source: str) -> tuple[str, ...] | None:
    present = [k for k in _TOOL_KEYS if k in fields]
    if len(present) > 1:
        raise AgentDefinitionError(
            source, f"give the tool list once, not as {' and '.join(present)}")
    return split_tool_list(fields[present[0]], source) if present else None


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
    fields, body, warnings = parse_frontmatter(text, source)
    name = fields.get("name", default_name)
    if not isinstance(name, str) or not _NAME.match(name.strip()):
        raise AgentDefinitionError(source, f"name {name!r} must be letters, digits, - _ . or :")
    description = _description(fields.get("description"), source)
    variables = fields.get("variables") or {}
    if not isinstance(variables, dict):
        raise AgentDefinitionError(source, "variables must be a mapping of names to values")
    if not body.strip():
        raise AgentDefinitionError(source, "the prompt (the Markdown body) is empty")
    tools = _tools(fields, source)
    unknown = sorted(k for k in fields if k not in _KNOWN and k not in _IGNORED)
    if unknown:
        warnings += (f"{source}: unknown frontmatter key(s) {', '.join(unknown)}; ignored",)
    return AgentDefinition(
        name=name.strip(),
        description=description,
        prompt_template=body.strip() + "\n",
        model=_model(fields.get("model"), source),
        max_iterations=_max_iterations(fields, source),
        variables={str(k): "" if v is None else str(v) for k, v in variables.items()},
        tools=tools,
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
