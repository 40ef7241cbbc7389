"""Load every skill and agent in the shared corpora and compare with their expected.json.

Run:  .venv/bin/python scripts/check_corpus.py [CORPORA_DIR]     (default: ../shared/corpora)
Not a unit test: the corpora live outside the repository, and are read where they are. Prints one
line per mismatch and a summary; exits 1 on any mismatch.

Skills (`skills/expected.json`) must agree with every `lenient` entry: a skill loads exactly when
`lenient.loads` says so, with the name, description and allowed-tools recorded, and with every
warning it lists. aimon may warn about more than that reference (unknown fields, tools aimon
lacks, a description over 1024 characters): those extra warnings are counted, not mismatches.
Agents (`agents/expected.json`): every file with a frontmatter block loads with the name,
description, tools and model recorded; a file without one is rejected.
Real-world material (`realworld/`: skills, agents, commands and settings files from public
repositories, each accepted by Claude Code) must all load, through the loaders a project's
`.claude/` folder goes through; what was assumed on the way is counted by kind. Running each
one against a model is `realworld/run.sh`.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from aimon_core.agent import AgentDefinitionError, load_agent_file
from aimon_core.command import load_custom_commands
from aimon_core.config import SettingsError
from aimon_core.config._validate import read_layer
from aimon_core.skill import Layer, LoadFailure, SkillError, parse_skill, scan_skill_folder
from aimon_core.subagent import scan_agent_folder

# The reference's lenient warnings, and the words of aimon's warning for the same thing.
_SAME_WARNING = {
    "name differs from directory": "differs from its folder",
    "name longer than 64": "longer than 64 characters",
}


def _expected_warning_found(expected: str, ours: tuple[str, ...]) -> bool:
    for theirs, words in _SAME_WARNING.items():
        if theirs in expected:
            return any(words in w for w in ours)
    return False


def _warning_kind(warning: str) -> str:
    text = warning.split(": ", 1)[-1]
    for marker in ("unknown field", "not available in aimon", "unknown tool", "longer than 1024",
                   "differs from its folder", "not valid YAML", "unknown frontmatter key",
                   "cannot be typed", "rule aimon cannot read", "ignored, as Claude Code ignores",
                   "allow rule"):
        if marker in text:
            return marker
    return text[:60]


def check_skills(corpus: Path, problems: list[str], extra: Counter[str]) -> tuple[int, int]:
    expected: dict[str, dict[str, object]] = json.loads((corpus / "expected.json").read_text())
    loaded = 0
    for rel, want in sorted(expected.items()):
        lenient = want["lenient"]
        assert isinstance(lenient, dict)
        path = corpus / rel
        try:
            skill = parse_skill(path.read_text(encoding="utf-8"), path=path)
        except SkillError as exc:
            if lenient["loads"]:
                problems.append(f"skills/{rel}: skipped but should load: {exc.reason}")
            continue
        loaded += 1
        if not lenient["loads"]:
            problems.append(f"skills/{rel}: loads but the lenient reference skips it")
        if skill.name != want["name"]:
            problems.append(f"skills/{rel}: name {skill.name!r} != {want['name']!r}")
        if skill.description[:80].strip() != str(want["description"]).strip():
            problems.append(f"skills/{rel}: description {skill.description[:80]!r} != "
                            f"{want['description']!r}")
        tools = list(skill.allowed_tools) or None
        if tools != want["allowed_tools"]:
            problems.append(f"skills/{rel}: allowed-tools {tools!r} != {want['allowed_tools']!r}")
        theirs = [str(w) for w in lenient["warnings"]]
        for warning in theirs:
            if not _expected_warning_found(warning, skill.warnings):
                problems.append(f"skills/{rel}: missing warning {warning!r}; got "
                                f"{list(skill.warnings)!r}")
        for warning in skill.warnings:
            if not any(_expected_warning_found(t, (warning,)) for t in theirs):
                extra[f"skills: {_warning_kind(warning)}"] += 1
    return loaded, len(expected)


def check_agents(corpus: Path, problems: list[str], extra: Counter[str]) -> tuple[int, int]:
    expected: dict[str, dict[str, object]] = json.loads((corpus / "expected.json").read_text())
    loaded = 0
    for rel, want in sorted(expected.items()):
        try:
            agent = load_agent_file(corpus / rel)
        except AgentDefinitionError as exc:
            if want.get("name"):
                problems.append(f"agents/{rel}: rejected but expected to load: {exc.reason}")
            continue
        loaded += 1
        if agent.name != want.get("name"):
            problems.append(f"agents/{rel}: name {agent.name!r} != {want.get('name')!r}")
        description = agent.description.strip()[:80].strip()
        if description != str(want.get("description") or "").strip():
            problems.append(f"agents/{rel}: description {description!r} != "
                            f"{want.get('description')!r}")
        tools = None if agent.tools is None else list(agent.tools)
        if tools != want.get("tools"):
            problems.append(f"agents/{rel}: tools {tools!r} != {want.get('tools')!r}")
        model = want.get("model")
        expected_model = None if model in (None, "inherit") else model
        if agent.model.name != expected_model:
            problems.append(f"agents/{rel}: model {agent.model.name!r} != {expected_model!r}")
        for warning in agent.warnings:
            extra[f"agents: {_warning_kind(warning)}"] += 1
    return loaded, len(expected)


def _groups(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def check_realworld(corpus: Path, problems: list[str], extra: Counter[str]) -> dict[str, int]:
    """Load every real-world file as a project's `.claude/` holds it; return counts by kind."""
    counts: Counter[str] = Counter()
    for kind, scan in (("skills", scan_skill_folder), ("agents", scan_agent_folder)):
        for group in _groups(corpus / kind):
            for found in scan(group, Layer.CLAUDE_PROJECT, inside=group):
                counts[kind] += 1
                if isinstance(found, LoadFailure):
                    problems.append(f"realworld/{kind}: {found.path}: {found.message}")
                    continue
                for warning in found.value.warnings:
                    extra[f"realworld {kind}: {_warning_kind(warning)}"] += 1
    for group in _groups(corpus / "commands"):
        commands, failures = load_custom_commands((group,), project_root=group)
        counts["commands"] += len(commands) + len(failures)
        problems += [f"realworld/commands: {f.path}: {f.reason}" for f in failures]
        for command in commands:
            for warning in command.warnings:
                extra[f"realworld commands: {_warning_kind(warning)}"] += 1
    for kind in ("settings", "settings-permissions"):
        # A settings file: `.claude/settings*.json`, or an example file beside the group.
        files = {*(corpus / kind).glob("*/.claude/settings*.json"),
                 *(corpus / kind).glob("*/*.json")}
        for path in sorted(files):
            counts[kind] += 1
            try:
                values = read_layer(path, path.name, claude=True)
            except SettingsError as exc:
                problems.append(f"realworld/{kind}: {path}: {exc}")
                continue
            for warning in values.warnings if values is not None else ():
                extra[f"realworld {kind}: {_warning_kind(warning)}"] += 1
    return dict(counts)


def main() -> int:
    """Check both corpora; return the exit status."""
    here = Path(__file__).resolve().parent.parent
    corpora = Path(sys.argv[1]) if len(sys.argv) > 1 else here.parent / "shared" / "corpora"
    problems: list[str] = []
    extra: Counter[str] = Counter()
    skills_loaded, skills_total = check_skills(corpora / "skills", problems, extra)
    agents_loaded, agents_total = check_agents(corpora / "agents", problems, extra)
    realworld = check_realworld(corpora / "realworld", problems, extra)
    for line in problems:
        print(line)
    print(f"skills: {skills_loaded} of {skills_total} loaded; "
          f"agents: {agents_loaded} of {agents_total} loaded; {len(problems)} mismatches")
    print("realworld (each must load): " + ", ".join(f"{n} {k}" for k, n in realworld.items()))
    if extra:
        print("warnings beyond the reference (not mismatches):")
        for kind, count in sorted(extra.items()):
            print(f"  {count:3d}  {kind}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
