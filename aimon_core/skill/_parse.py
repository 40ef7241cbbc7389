"""Parse SKILL.md: Agent Skills frontmatter plus aimon's extensions, leniently where clear.

A name that differs from its folder, an over-long name or description, an unknown field or a
tool aimon lacks loads with a warning; a name that cannot be typed (spaces, capitals) loads
under the folder's name. YAML that Claude Code accepts and PyYAML does not is read key by key
(`agent._frontmatter.read_frontmatter`), with a warning per key. A missing description, or a
field whose meaning is unclear (an unknown execution mode, a malformed or unreadable hook)
raises SkillError.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aimon_core.agent import (
    AgentDefinitionError,
    Frontmatter,
    positive_int,
    split_frontmatter,
    split_tool_list,
    usable_name,
)
from aimon_core.skill._hooks import parse_hooks
from aimon_core.skill._model import (
    DEFAULT_MAX_ITERATIONS,
    Skill,
    SkillError,
    SkillExecution,
    SkillInvocation,
)

_SPEC_NAME = re.compile(r"^[^\W_]+(-[^\W_]+)*$")
_ARGUMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SPEC_KEYS = frozenset({"name", "description", "license", "compatibility", "metadata",
                        "allowed-tools"})
_AIMON_KEYS = frozenset({"arguments", "invoke", "max-iterations", "maxIterations", "execution",
                         "hooks"})
# Claude Code's skill keys with an aimon meaning.
_CLAUDE_KEYS = frozenset({"argument-hint", "disable-model-invocation", "user-invocable"})
_KNOWN = _SPEC_KEYS | _AIMON_KEYS | _CLAUDE_KEYS


def load_frontmatter(text: str, path: Path) -> tuple[dict[str, Any], str, Frontmatter]:
    """Split and read SKILL.md frontmatter, recovering YAML that Claude Code accepts."""
    from aimon_core.agent import NoFrontmatterError, read_frontmatter

    front, _ = split_frontmatter(text.replace("\r\n", "\n") if "\r" in text else text)
    if front is None:
        raise SkillError(path, "no YAML frontmatter (SKILL.md must start with a --- line and "
                               "the frontmatter must end with another)")
    try:
        read = read_frontmatter(text)
    except NoFrontmatterError as exc:
        raise SkillError(path, str(exc)) from None
    return read.fields, read.body, read


def parse_skill(text: str, *, path: Path, directory: Path | None = None) -> Skill:
    """Parse the text of a SKILL.md found at `path` (its folder names the skill)."""
    folder = directory if directory is not None else path.parent
    fields, body, read = load_frontmatter(text, path)
    warnings = [f"frontmatter {w}" for w in read.warnings]
    name = _name(fields.get("name"), folder.name, path, warnings)
    description = _description(fields.get("description"), path, warnings)
    try:
        tools = split_tool_list(fields.get("allowed-tools"), str(path)) or ()
        max_iterations = positive_int(fields.get("max-iterations", fields.get("maxIterations")),
                                      str(path), "max-iterations")
    except AgentDefinitionError as exc:
        raise SkillError(path, exc.reason.replace("tools must", "allowed-tools must")) from exc
    execution = _execution(fields, path, warnings)
    if "allowed-tools" in read.unreadable and execution.mode == "fork":
        # A fork's tool list restricts it: read wrongly, the fork would get more tools.
        raise SkillError(path, "allowed-tools cannot be read, and a forked skill's tool list "
                               "must be exact")
    if "hooks" in read.unreadable:
        raise SkillError(path, "hooks cannot be read (not valid YAML); hooks are code, never "
                               "half read")
    hooks = parse_hooks(fields.get("hooks"), path, warnings)
    if not hooks.is_empty and execution.mode == "inline":
        warnings.append("hooks run only when execution.mode is fork; ignored inline")
    unknown = sorted(k for k in fields if k not in _KNOWN)
    if unknown:
        warnings.append(f"unknown field(s) {', '.join(unknown)}; ignored")
    hint = fields.get("argument-hint")
    return Skill(
        name=name,
        description=description,
        body=body.strip(),
        path=path,
        directory=folder,
        license=None if fields.get("license") is None else str(fields["license"]).strip(),
        compatibility=_compatibility(fields.get("compatibility"), warnings),
        metadata=_metadata(fields.get("metadata"), warnings),
        allowed_tools=tools,
        arguments=_arguments(fields.get("arguments"), path),
        argument_hint=None if hint is None else _hint_text(hint),
        invoke=_invoke(fields, path),
        max_iterations=max_iterations or DEFAULT_MAX_ITERATIONS,
        execution=execution,
        hooks=hooks,
        warnings=tuple(f"{path}: {w}" for w in warnings),
    )


def _name(value: object, folder: str, path: Path, warnings: list[str]) -> str:
    if value is None:
        warnings.append(f"name is missing; using the folder name {folder!r}")
    elif not isinstance(value, str) or not value.strip():
        raise SkillError(path, "name must be a non-empty string")
    written = None if value is None else unicodedata.normalize("NFKC", value.strip())
    name, note = usable_name(written, unicodedata.normalize("NFKC", folder))
    if name is None:
        raise SkillError(path, f"name {written!r} cannot be typed as /name, nor can the folder's "
                               f"name {folder!r}")
    if note:
        warnings.append(f"{note} (the folder's name)")
    if len(name) > 64:
        warnings.append(f"name is longer than 64 characters ({len(name)})")
    if not _SPEC_NAME.match(name):
        warnings.append(f"name {name!r} should be lower-case letters, digits and single "
                        "hyphens, not starting or ending with a hyphen")
    if not note and value is not None and name != unicodedata.normalize("NFKC", folder):
        warnings.append(f"name {name!r} differs from its folder {folder!r}")
    return name


def _description(value: object, path: Path, warnings: list[str]) -> str:
    if value is None:
        raise SkillError(path, "description is missing (say what the skill does and when to use "
                               "it)")
    if not isinstance(value, str) or not value.strip():
        raise SkillError(path, "description must be a non-empty string")
    if len(value) > 1024:
        warnings.append(f"description is longer than 1024 characters ({len(value)})")
    return value.strip()


def _compatibility(value: object, warnings: list[str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        warnings.append("compatibility must be a string; ignored")
        return None
    if len(value) > 500:
        warnings.append(f"compatibility is longer than 500 characters ({len(value)})")
    return value.strip() or None


def _metadata(value: object, warnings: list[str]) -> Mapping[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        warnings.append("metadata must be a mapping of names to values; ignored")
        return {}
    return {str(k): "" if v is None else str(v) for k, v in value.items()}


def _hint_text(value: object) -> str:
    # `argument-hint: [file]` is a YAML list to PyYAML; the author meant the text.
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value).strip()


def _arguments(value: object, path: Path) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        names = value.replace(",", " ").split()
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        names = [v.strip() for v in value]
    else:
        raise SkillError(path, "arguments must be a list of names (or a space-separated string)")
    for name in names:
        if not _ARGUMENT.match(name):
            raise SkillError(path, f"argument name {name!r} must be letters, digits and _ "
                                   "(it is written $name in the body)")
    if len(set(names)) != len(names):
        raise SkillError(path, "arguments lists a name twice")
    return tuple(names)


def _flag(value: object, path: Path, key: str, default: bool) -> bool:
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise SkillError(path, f"{key} must be true or false, not {value!r}")


def _invoke(fields: Mapping[str, Any], path: Path) -> SkillInvocation:
    invoke = fields.get("invoke") or {}
    if not isinstance(invoke, dict):
        raise SkillError(path, "invoke must be a mapping with user and/or model: true|false")
    extra = sorted(set(map(str, invoke)) - {"user", "model"})
    if extra:
        raise SkillError(path, f"invoke has unknown key(s) {', '.join(extra)} (use user, model)")
    user = _flag(invoke.get("user"), path, "invoke.user", True)
    model = _flag(invoke.get("model"), path, "invoke.model", True)
    # Claude Code's spellings of the same switches.
    if "user-invocable" in fields:
        user = _flag(fields["user-invocable"], path, "user-invocable", True)
    if "disable-model-invocation" in fields:
        model = not _flag(fields["disable-model-invocation"], path, "disable-model-invocation",
                          False)
    return SkillInvocation(user=user, model=model)


def _execution(fields: Mapping[str, Any], path: Path, warnings: list[str]) -> SkillExecution:
    value = fields.get("execution") or {}
    if not isinstance(value, dict):
        raise SkillError(path, "execution must be a mapping: {mode: inline|fork, agent: NAME}")
    extra = sorted(set(map(str, value)) - {"mode", "agent"})
    if extra:
        raise SkillError(path, f"execution has unknown key(s) {', '.join(extra)} "
                               "(use mode, agent)")
    mode = value.get("mode", "inline")
    if mode not in ("inline", "fork"):
        raise SkillError(path, f"execution.mode must be inline or fork, not {mode!r}")
    agent = value.get("agent")
    if agent is not None and (not isinstance(agent, str) or not agent.strip()):
        raise SkillError(path, "execution.agent must be the name of an agent")
    if agent is not None and mode == "inline":
        warnings.append("execution.agent is used only when execution.mode is fork; ignored")
        agent = None
    return SkillExecution(mode=mode, agent=None if agent is None else agent.strip())
