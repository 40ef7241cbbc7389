"""Skill values: what a SKILL.md says, after parsing and validation."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Literal

DEFAULT_MAX_ITERATIONS = 100


class SkillError(ValueError):
    """A skill cannot be loaded; says which file and why."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillInvocation:
    """Who may start a skill: the user (`/name`) and the model (the Skill tool)."""

    user: bool = True
    model: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillExecution:
    """How a skill runs: in the caller's conversation, or forked into a subagent."""

    mode: Literal["inline", "fork"] = "inline"
    # The subagent a fork runs as; None: the lead's default (general-purpose).
    agent: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DenyAction:
    """Refuse a tool call that matches, giving the model the reason (preTool only)."""

    matcher: str | None
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellAction:
    """Run a shell command on the event; `matcher` limits tool events to matching calls."""

    matcher: str | None
    command: str
    timeout_seconds: float = 60.0


HookAction = DenyAction | ShellAction


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillHooks:
    """A forked skill's own hooks, per event; they never run inline."""

    pre_tool: tuple[HookAction, ...] = ()
    post_tool: tuple[HookAction, ...] = ()
    on_start: tuple[HookAction, ...] = ()
    on_stop: tuple[HookAction, ...] = ()

    @property
    def is_empty(self) -> bool:
        """True when no event has an action."""
        return not (self.pre_tool or self.post_tool or self.on_start or self.on_stop)


@dataclass(frozen=True, slots=True, kw_only=True)
class Skill:
    """One skill: its catalogue entry (name, description), prompt body and options."""

    name: str
    description: str
    body: str
    # The SKILL.md file and the folder its supporting files and ${AIMON_SKILL_DIR} live in.
    path: Path
    directory: Path
    license: str | None = None
    compatibility: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    # Rule-like strings (`Read`, `Bash(git:*)`); empty: no restriction.
    allowed_tools: tuple[str, ...] = ()
    arguments: tuple[str, ...] = ()
    argument_hint: str | None = None
    invoke: SkillInvocation = field(default_factory=SkillInvocation)
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    execution: SkillExecution = field(default_factory=SkillExecution)
    hooks: SkillHooks = field(default_factory=SkillHooks)
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class DefinitionHooks:
    """A subagent definition's own hooks (Claude Code's agents have them), and its file.

    They run in the subagent's forks, as a forked skill's do in its fork.
    """

    name: str
    path: Path
    hooks: SkillHooks


class Layer(StrEnum):
    """Where a skill or agent definition came from, lowest priority first."""

    BUILTIN = "builtin"
    BUNDLED = "bundled"
    USER = "user"
    CLAUDE_PROJECT = "claude-project"
    PROJECT = "project"


@dataclass(frozen=True, slots=True, kw_only=True)
class ListingEntry:
    """One name in a registry listing: the definition that wins, and where it lives."""

    name: str
    description: str
    layer: Layer
    path: Path
    warnings: tuple[str, ...] = ()
    # An override with an empty body switches the name off.
    disabled: bool = False
    # Lower-layer definitions of the same name that this one hides.
    shadows: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadFailure:
    """A definition file that was skipped, and why."""

    path: Path
    layer: Layer
    message: str
