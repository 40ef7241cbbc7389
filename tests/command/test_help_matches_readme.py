"""/help and README's tables name the same keys and the same commands."""

from __future__ import annotations

import re
from pathlib import Path
from typing import cast

from aimon_core.command import default_registry
from aimon_core.command._system import KEYS, ExtensionCatalog

README = Path(__file__).parents[2] / "README.md"
_CHORD = re.compile(r"\b(?:Ctrl|Shift|Alt)-[A-Z][a-z]*|@path|!command")


def _section(heading: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    end = text.find("\n#", start + len(heading) + 2)
    return text[start:end]


def test_help_and_readme_list_the_same_keys() -> None:
    in_help = {chord for key, _ in KEYS for chord in _CHORD.findall(key)}
    table = [line for line in _section("## The interactive session").splitlines()
             if line.startswith("|")]
    in_readme = {chord for line in table for chord in _CHORD.findall(line.split("|")[1])}
    assert in_help == in_readme


def test_every_system_command_is_in_readme() -> None:
    table = _section("### Slash commands")
    named = set(re.findall(r"`/([a-z-]+)", table))
    registry = default_registry(cast(ExtensionCatalog, object()))  # listed, never asked
    listed = {command.name for command in registry.system()}
    assert listed <= named, sorted(listed - named)
