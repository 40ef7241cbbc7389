"""A remembered permission rule in words, for approval questions and their answers (no
`exact:` or `//` jargon). Imports nothing: the question UI loads it before rich."""

from __future__ import annotations

import re
from pathlib import Path


def describe_rule(rule: str, root: Path | None = None) -> str:
    """Return a remembered rule in words: `npm test`, `python3 -m pytest *`, `edits to
    calc.py` (no `exact:` or `//` jargon)."""
    match = re.fullmatch(r"([A-Za-z_][\w.-]*)\((.*)\)", rule, re.DOTALL)
    if match is None:
        return f"every {rule} call" if rule else "this call"
    tool, argument = match.groups()
    if tool == "Bash":
        command = argument.removeprefix("exact:")
        shown = command[:-2] + " *" if command.endswith(":*") else command
        return f"`{' '.join(shown.split())}`"
    if tool in ("Edit", "Read"):
        path = "/" + argument[2:] if argument.startswith("//") else argument
        if root is not None and path.startswith(str(root) + "/"):
            path = path[len(str(root)) + 1:]
        return f"{'edits to' if tool == 'Edit' else 'reading'} {path}"
    if tool == "Skill":
        return f"the skill {argument}"
    if tool in ("Task", "Agent"):
        return f"the subagent {argument}"
    return rule


_COLUMN = re.compile(r"^(\s*\S.*?\S\s{2,})\S")


def hanging(text: str, width: int) -> list[str]:
    """Return `text` wrapped to `width`, each line's rest under its own text: a table row's
    under its second column (`/trust   Trust this folder's …` goes on under `Trust`), any
    other line's under its first word, never at the margin."""
    import textwrap

    rows: list[str] = []
    for line in text.splitlines() or [""]:
        if len(line) <= width:
            rows.append(line)
            continue
        column = _COLUMN.match(line)
        margin = len(line) - len(line.lstrip())
        if column and len(column.group(1)) >= width // 2:  # too wide a first column: the
            first = column.group(1)                     # rest goes on under it, indented
            rows += textwrap.wrap(first, width, subsequent_indent=" " * (margin + 4),
                                  break_on_hyphens=False)
            line, margin = " " * (margin + 4) + line[len(first):], margin + 2
        indent = len(column.group(1)) if column and len(column.group(1)) < width // 2 else \
            margin + 2
        rows += textwrap.wrap(line, width, subsequent_indent=" " * indent,
                              break_on_hyphens=False, drop_whitespace=True) or [line]
    return rows


def auth_hint(error: object) -> str:
    """Return what to do about a model error that is a key the provider refused, or ""."""
    from aimon_core.llm import LLMAuthError

    if not isinstance(error, LLMAuthError):
        return ""
    variable = f"{error.provider.upper()}_API_KEY" if error.provider else "the API key"
    return (f"The provider refused the API key: check {variable} (or, for another server, "
            "--base-url and its key), then send the prompt again.")
