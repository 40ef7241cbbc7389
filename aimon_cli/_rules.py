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
