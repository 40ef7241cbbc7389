"""YAML that Claude Code accepts and PyYAML does not, in skills, agents and commands alike.

The table is every quirk by every kind: each file is written where Claude Code looks for it
(`.claude/skills/NAME/SKILL.md`, `.claude/agents/NAME.md`, `.claude/commands/NAME.md`) and read
by aimon's own loader for that kind. A quirk must load, give the text the author meant, and say
(once, naming the key) what was assumed; valid YAML says nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from aimon_core.command import load_custom_commands
from aimon_core.skill import Layer, SkillRoots, load_skills
from aimon_core.subagent import AgentRoots, load_agents


@dataclass(frozen=True)
class Quirk:
    """A frontmatter line (or block) of `description` and the text the author meant."""

    lines: str
    meant: str
    # The warning's words after the key; None: valid YAML, no warning.
    assumed: str | None = "read as text"


QUIRKS = {
    "colon in a value": Quirk("description: Use when: the user asks\n",
                              "Use when: the user asks"),
    "colon on a continuation line": Quirk("description: Use this\n  when: asked\n",
                                          "Use this when: asked"),
    "colon and a quoted phrase": Quirk(
        "description: Triggers on: 'cohort analysis', churn\n",
        "Triggers on: 'cohort analysis', churn"),
    "tab-indented block": Quirk("description: >\n\tFolded with\n\ta tab\n", "Folded with a tab",
                                "indented with tabs; read with spaces"),
    "inner double quotes": Quirk('description: "Use the "review" skill"\n',
                                 'Use the "review" skill'),
    "inner single quote": Quirk("description: 'It's the best'\n", "It's the best"),
    "flow list then text": Quirk("description: [beta] [fast] Reviews code\n",
                                 "[beta] [fast] Reviews code"),
    "asterisk read as an alias": Quirk("description: *Important*: reviews code\n",
                                       "*Important*: reviews code"),
    "a lone asterisk": Quirk("description: * reviews code\n", "* reviews code"),
    # Anthropic's own plugin agents: examples under the description, at column 0.
    "examples at column 0": Quirk(
        'description: Use it when asked. Examples:\n<example>\nuser: "Review this"\n'
        'assistant: "I will review it"\n</example>\n',
        'Use it when asked. Examples: <example> user: "Review this" assistant: "I will review'
        ' it" </example>'),
    "byte order mark": Quirk("\ufeffdescription: Plain text\n", "Plain text", None),
    "CRLF line ends": Quirk("description: Plain\r\n  text\r\n", "Plain text", None),
}

Loader = Callable[[Path], "Loaded"]


@dataclass(frozen=True)
class Loaded:
    name: str
    description: str
    warnings: tuple[str, ...]
    failures: tuple[str, ...]


def _file(front: str, body: str) -> str:
    text = f"---\nname: quirky\n{front.removeprefix(chr(0xFEFF))}---\n{body}"
    if front.startswith("\ufeff"):
        text = "\ufeff" + text
    return text.replace("\n", "\r\n") if "\r\n" in front else text


def _write(root: Path, where: str, name: str, front: str, body: str) -> Path:
    folder = root / ".claude" / where
    folder.mkdir(parents=True)
    (folder / name).write_text(_file(front, body), newline="")
    return folder


def _loaded(found: Any, failures: tuple[str, ...]) -> Loaded:
    """What a loader gave: a definition (name, description, warnings), or None, and failures."""
    if found is None:
        return Loaded(name="", description="", warnings=(), failures=failures)
    return Loaded(name=found.name, description=found.description,
                  warnings=tuple(found.warnings), failures=failures)


def load_skill(root: Path, front: str) -> Loaded:
    _write(root, "skills/quirky", "SKILL.md", front, "Do the quirky thing.\n")
    registry = load_skills(SkillRoots(project_root=root, user_dir=None))
    entry = next((e for e in registry.listing() if e.layer is Layer.CLAUDE_PROJECT), None)
    return _loaded(entry, tuple(f.message for f in registry.failures))


def load_agent(root: Path, front: str) -> Loaded:
    _write(root, "agents", "quirky.md", front, "You are quirky.\n")
    registry = load_agents(AgentRoots(project_root=root, user_dir=None, bundle="none"))
    return _loaded(registry.get("quirky"), tuple(f.message for f in registry.failures))


def load_command(root: Path, front: str) -> Loaded:
    folder = _write(root, "commands", "quirky.md", front, "Do the quirky thing.\n")
    commands, failures = load_custom_commands((folder,), project_root=root)
    return _loaded(commands[0] if commands else None, tuple(f.reason for f in failures))


KINDS = {"skill": load_skill, "agent": load_agent, "command": load_command}


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("quirk", sorted(QUIRKS))
def test_a_quirk_loads_as_the_author_meant(tmp_path: Path, quirk: str, kind: str) -> None:
    case = QUIRKS[quirk]
    loaded = KINDS[kind](tmp_path, case.lines)
    assert loaded.failures == ()
    assert (loaded.name, loaded.description) == ("quirky", case.meant)
    recovered = [w for w in loaded.warnings if "frontmatter" in w]
    if case.assumed is None:
        assert recovered == []
    else:
        assert len(recovered) == 1 and "description: " in recovered[0]
        assert recovered[0].endswith(case.assumed)


# Tool lists: recovered as the text says, and never into more tools than it names.
# (kind, frontmatter) -> the tool list loaded (an agent's `tools`, a skill's or command's
# `allowed-tools`); an agent's list that cannot be read gives no tools.
TOOL_LISTS = [
    ("agent", "description: Finds: things\ntools:\n  - Read\n  - Grep\n", ("Read", "Grep")),
    ("skill", "description: Finds: things\nallowed-tools:\n  - Read\n  - Grep\n",
     ("Read", "Grep")),
    ("command", "description: Finds: things\nallowed-tools:\n  - Read\n  - Grep\n",
     ("Read", "Grep")),
    ("agent", "description: d\ntools: [Read, Grep] and more\n", ()),
    ("agent", "description: d\ntools: *\n", ()),
    ("agent", "description: d\ntools:\n\t- Read\n", ("Read",)),
    ("agent", "description: d\ntools:\n  - Read\n - Grep\n", ()),
    ("skill", "description: d\nallowed-tools: *, Read\n", ("*", "Read")),
    ("command", "description: d\nallowed-tools: *, Read\n", ("*", "Read")),
]


def _tools(root: Path, kind: str, front: str) -> tuple[str, ...] | None:
    from aimon_core.command._custom import parse_command
    from aimon_core.skill import parse_skill
    from aimon_core.subagent import load_named_agent

    match kind:
        case "agent":
            (root / ".claude" / "agents").mkdir(parents=True)
            (root / ".claude" / "agents" / "quirky.md").write_text(_file(front, "Body.\n"))
            agent = load_named_agent("quirky", root)
            assert agent is not None
            return agent.tools
        case "skill":
            path = root / "quirky" / "SKILL.md"
            return parse_skill(_file(front, "Body.\n"), path=path).allowed_tools
    path = root / "quirky.md"
    path.write_text(_file(front, "Body.\n"))
    return parse_command("quirky", path).allowed_tools


@pytest.mark.parametrize(("kind", "front", "tools"), TOOL_LISTS)
def test_tool_lists_never_name_more_than_the_text(tmp_path: Path, kind: str, front: str,
                                                  tools: tuple[str, ...]) -> None:
    assert _tools(tmp_path, kind, front) == tools


def test_a_forked_skill_whose_tool_list_cannot_be_read_does_not_load(tmp_path: Path) -> None:
    from aimon_core.skill import SkillError, parse_skill

    text = _file("description: d\nexecution: {mode: fork, agent: explore}\n"
                 "allowed-tools:\n  - Read\n - Bash\n", "Body.\n")
    with pytest.raises(SkillError, match="allowed-tools cannot be read"):
        parse_skill(text, path=tmp_path / "quirky" / "SKILL.md")
