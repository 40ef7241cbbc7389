"""Markdown files with YAML frontmatter: split, and read with PyYAML's safe loader, plus the
two repairs agent files written for Claude Code need.

Agents, skills and custom commands all start with a `---` block; this module only finds and
reads it. What the fields mean is each reader's business.
"""

from __future__ import annotations

import re
from typing import Any

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
        raise FrontmatterYAMLError(str(exc)) from exc


def fallback_fields(front: str) -> dict[str, Any]:
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


def quote_colon_values(front: str) -> str | None:
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
