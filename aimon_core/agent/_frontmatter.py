"""Markdown files with YAML frontmatter: split, and read as Claude Code reads them.

Agents, skills and custom commands all start with a `---` block; this module finds it and
reads it, one way for all three (`read_frontmatter`). What the fields mean is each reader's
business.

Files written for Claude Code are often not valid YAML: a description holding `: `, a block
indented with tabs, quotes inside quotes (`"Use "x" here"`), `argument-hint: [file] [mode]`,
a value starting with `*` (an alias to YAML). PyYAML reads the whole block first; when it
refuses, each top-level key is read on its own, so one bad line costs only its key: a
block indented with tabs is read with spaces, and a value on the key's line is read as the
text it says. A key that still cannot be read is left out. Each recovery is one warning
naming the key and what was assumed; callers never get more than the text says (a value
read as text stays a string; a key left out is named in `unreadable`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_CLOSING = re.compile(r"^(?:---|\.\.\.)[ \t]*\r?$", re.MULTILINE)
# A top-level key at column 0: what starts a new entry when the block is read key by key.
_KEY_LINE = re.compile(r"^([A-Za-z_][\w.-]*)[ \t]*:(?:[ \t]+(.*?))?[ \t]*$")
_LEADING_TABS = re.compile(r"^([ \t]+)", re.MULTILINE)
_BLOCK_SCALAR = re.compile(r"[|>][+-]?[1-9]?|[|>][1-9]?[+-]?")


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


class FrontmatterYAMLError(ValueError):
    """PyYAML could not read a file's frontmatter; the message is PyYAML's."""


def load_frontmatter_yaml(front: str) -> object:
    """Load frontmatter YAML with PyYAML's safe loader (libyaml's where installed).

    Raises FrontmatterYAMLError (PyYAML's message) for YAML that does not parse.
    """
    # Lazy: PyYAML is imported when the first file is read, not when aimon starts
    # (`aimon --version` never loads it).
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(front, Loader=loader)
    except yaml.YAMLError as exc:
        raise FrontmatterYAMLError(" ".join(str(exc).split())) from exc


@dataclass(frozen=True, slots=True, kw_only=True)
class Frontmatter:
    """A file's frontmatter fields and body, and what reading them had to assume."""

    fields: dict[str, Any]
    body: str
    # One line per recovery: the key and what was assumed (no file name: callers add it).
    warnings: tuple[str, ...] = ()
    # Keys whose value PyYAML could not read, taken as the text on their line.
    as_text: frozenset[str] = frozenset()
    # Keys that could not be read at all and are left out of `fields`.
    unreadable: frozenset[str] = frozenset()


class NoFrontmatterError(ValueError):
    """The file has no `---` block, or its fields are not a mapping; the message says which."""


def read_frontmatter(text: str) -> Frontmatter:
    """Read a Markdown file's frontmatter and body, recovering from YAML Claude Code accepts.

    A file without frontmatter has no fields. Raises NoFrontmatterError when the block is
    there but is not a mapping of keys (a list, a lone word).
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    front, body = split_frontmatter(text)
    if front is None or not front.strip():
        return Frontmatter(fields={}, body=body)
    try:
        loaded = load_frontmatter_yaml(front)
    except FrontmatterYAMLError:
        return _by_key(front, body)
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise NoFrontmatterError("the frontmatter must be a YAML mapping of keys to values")
    return Frontmatter(fields={str(k): v for k, v in loaded.items()}, body=body)


# Keys of skills, agents and commands (Claude Code's and aimon's). When a value runs on at
# column 0 (`<example>` lines under a description), a `word:` line that is none of these is
# part of that text (`user: "Create an agent"`), not a key of its own.
_FRONTMATTER_KEYS = frozenset({
    "name", "description", "tools", "allowed-tools", "allowedTools", "disallowedTools",
    "disallowed-tools", "model", "color", "argument-hint", "arguments", "disable-model-invocation",
    "user-invocable", "license", "compatibility", "metadata", "hooks", "execution", "context",
    "agent", "effort", "version", "permissionMode", "maxTurns", "skills", "mcpServers", "memory",
    "background", "isolation", "variables", "invoke", "maxIterations", "max-iterations",
    "max_iterations", "when_to_use", "paths", "shell", "initialPrompt"})


def _entries(front: str) -> list[tuple[str, list[str]]]:
    """Split the block into top-level entries: (key, its lines); stray lines join the last."""
    lines = front.split("\n")
    # A line at column 0 that is no key and no comment: some value's text runs on unindented.
    runs_on = any(line[:1].strip() and line[0] != "#" and not _KEY_LINE.match(line)
                  for line in lines)
    entries: list[tuple[str, list[str]]] = []
    for line in lines:
        match = _KEY_LINE.match(line)
        if match is not None and runs_on and entries \
                and match.group(1) not in _FRONTMATTER_KEYS:
            entries[-1][1].append(line)
        elif match is not None:
            entries.append((match.group(1), [line]))
        elif entries:
            entries[-1][1].append(line)
        elif line.strip() and not line.lstrip().startswith("#"):
            entries.append(("", [line]))
    return entries


def _by_key(front: str, body: str) -> Frontmatter:
    fields: dict[str, Any] = {}
    warnings: list[str] = []
    as_text: set[str] = set()
    unreadable: set[str] = set()
    for key, lines in _entries(front):
        if not key:
            warnings.append(f"a line that is no key ({lines[0].strip()[:40]!r}) is ignored")
            continue
        value, note = _read_entry(key, lines)
        match value:
            case _Unreadable():
                unreadable.add(key)
                fields.pop(key, None)
            case _Text(text=read):
                as_text.add(key)
                fields[key] = read
            case _:
                fields[key] = value
        if note:
            warnings.append(f"{key}: {note}")
    return Frontmatter(fields=fields, body=body, warnings=tuple(warnings),
                       as_text=frozenset(as_text), unreadable=frozenset(unreadable))


@dataclass(frozen=True, slots=True)
class _Text:
    text: str


@dataclass(frozen=True, slots=True)
class _Unreadable:
    pass


def _read_entry(key: str, lines: list[str]) -> tuple[Any, str]:
    """Return one entry's value and a note on what was assumed ("" when none was)."""
    entry = "\n".join(lines)
    try:
        return _value(key, entry), ""
    except FrontmatterYAMLError as exc:
        reason = str(exc).split(" in \"<")[0]
    if "\t" in entry:
        spaced = _LEADING_TABS.sub(lambda m: m.group(1).replace("\t", "  "), entry)
        try:
            return _value(key, spaced), "indented with tabs; read with spaces"
        except FrontmatterYAMLError:
            pass
    inline = _KEY_LINE.match(lines[0])
    rest = inline.group(2) if inline is not None else None
    if rest and _BLOCK_SCALAR.fullmatch(rest):
        return _Text(_block_text(rest, lines[1:])), f"not valid YAML ({reason}); read as text"
    if rest:
        return _Text(_as_text(rest, lines[1:])), f"not valid YAML ({reason}); read as text"
    return _Unreadable(), f"not valid YAML ({reason}); left out"


def _value(key: str, entry: str) -> Any:
    loaded = load_frontmatter_yaml(entry)
    if not isinstance(loaded, dict) or len(loaded) != 1:
        raise FrontmatterYAMLError("not one key")
    return next(iter(loaded.values()))


def _block_text(indicator: str, lines: list[str]) -> str:
    """Return a `|` or `>` block's text: its lines without their common indentation."""
    import textwrap

    text = textwrap.dedent("\n".join(line.expandtabs(2) for line in lines)).strip()
    return text if indicator.startswith("|") else " ".join(text.split())


def _as_text(first: str, more: list[str]) -> str:
    """Return a value as the text it says: its lines folded, one pair of outer quotes off."""
    parts = [first.strip(), *(line.strip() for line in more)]
    text = " ".join(part for part in parts if part and not part.startswith("#"))
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    return text


# What a skill, agent or command may be called: it is typed (`/name`, `subagent_type`), and
# typed names are read in lower case.
_NAME_SIGNS = frozenset("_.:-")


def _typeable(name: str) -> bool:
    return (bool(name) and name[0].isalnum() and name == name.lower()
            and all(c.isalnum() or c in _NAME_SIGNS for c in name))


def usable_name(written: str | None, fallback: str) -> tuple[str | None, str]:
    """Return the name a definition loads under, and a note when it is not `written`.

    A written name with spaces, capitals or other signs cannot be typed: as in Claude Code,
    the file's (or folder's) name is used instead, in lower case with runs of other signs as
    `-`. None when neither gives a name.
    """
    if written is not None and _typeable(written):
        return written, ""
    name = re.sub(r"[^\w.:-]+", "-", fallback.strip().lower()).strip("-.:_")
    if not _typeable(name):
        return None, ""
    if written is None:
        return name, ""
    return name, f"name {written!r} cannot be typed as a name; loaded as {name!r}"
