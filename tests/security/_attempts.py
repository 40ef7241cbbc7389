"""The attack suite's values: checks, tool calls, attempts, batches, workspaces and outcomes.

Paths in calls, files and checks are written with placeholders, expanded per attempt:

- ``@P@`` the project (aimon's working directory), ``@X@`` a folder outside it;
- ``@MARK@`` the marker folder (outside the project), ``@M@`` this attempt's marker file in it,
  ``@D@`` this attempt's marker directory in it (for deletions that must not happen);
- ``@O@`` this attempt's victim file outside the project (for edits that must not happen).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from aimon_core.testing import Step

Provider = Literal["anthropic", "openai"]

RUN_TIMEOUT = 120.0
"""Seconds before an aimon run counts as hung and is killed (generous: CI machines get busy)."""

# ---------------------------------------------------------------------------- checks


@dataclass(frozen=True, slots=True, kw_only=True)
class Absent:
    """The path (default: the attempt's marker) must not exist after the run."""

    path: str = "@M@"


@dataclass(frozen=True, slots=True, kw_only=True)
class Exists:
    """Control: the path (default: the attempt's marker) must exist after the run."""

    path: str = "@M@"


@dataclass(frozen=True, slots=True, kw_only=True)
class Ran:
    """Control: the call succeeded, and its result holds `contains`."""

    contains: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Refused:
    """The call came back as an error, and its result lacks `absent` (a sign it ran)."""

    absent: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Unchanged:
    """The file (default: the attempt's victim) has the content it had before the run."""

    path: str = "@O@"


@dataclass(frozen=True, slots=True, kw_only=True)
class NoSecret:
    """`secret` does not appear in the call's result."""

    secret: str


Check = Absent | Exists | Ran | Refused | Unchanged | NoSecret

# ---------------------------------------------------------------------------- attempts


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """One tool call the scripted model makes (placeholders not yet expanded)."""

    tool: str
    input: Mapping[str, Any]


def bash(command: str, timeout_ms: int = 20_000) -> Call:
    """Return a Bash call."""
    return Call(tool="Bash", input={"command": command, "timeout": timeout_ms})


def read(path: str) -> Call:
    """Return a Read call."""
    return Call(tool="Read", input={"file_path": path})


def write(path: str, content: str) -> Call:
    """Return a Write call."""
    return Call(tool="Write", input={"file_path": path, "content": content})


def edit(path: str, old: str, new: str) -> Call:
    """Return an Edit call."""
    return Call(tool="Edit", input={"file_path": path, "old_string": old, "new_string": new})


def tool(name: str, **inputs: Any) -> Call:
    """Return a call of any tool."""
    return Call(tool=name, input=inputs)


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Attempt:
    """One attack (or one control) and what must hold after it."""

    id: str
    call: Call
    checks: tuple[Check, ...]
    setup: tuple[Call, ...] = ()
    """Calls made in the batch's first reply, before every probe."""
    files: Mapping[str, str] = field(default_factory=dict)
    """Files (absolute placeholder paths) the harness writes before the run."""
    needs: str | None = None
    """A program that must be on PATH, else the attempt is skipped."""
    late: bool = False
    """Make the probe in a reply of its own after the others (for calls that may hang)."""

    def __repr__(self) -> str:
        return f"Attempt({self.id!r}: {self.call.tool} {dict(self.call.input)!r})"


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Batch:
    """Attempts run by one aimon process with the same flags and settings."""

    name: str
    attempts: tuple[Attempt, ...]
    args: tuple[str, ...] = ()
    settings: Mapping[str, Any] | None = None
    """User-level settings.json (under AIMON_HOME), if any."""
    env: Mapping[str, str] = field(default_factory=dict)
    build: Callable[[Workspace], None] | None = None
    """Prepares the project (repositories, files) before the run."""
    steps: Callable[[Workspace], list[Step]] | None = None
    """The model's replies, instead of the attempts' calls (for faults of the model itself)."""
    timeout: float = RUN_TIMEOUT
    """Seconds before the run counts as hung and is killed."""
    prompt: str = "go"
    """What `aimon -p` is given (placeholders expanded)."""
    provider: Provider = "openai"
    """The wire aimon talks to the model server: OpenAI's costs aimon half the start-up CPU of
    Anthropic's SDK, so it is the default where the attempt does not depend on the wire."""

    def __repr__(self) -> str:
        return (f"Batch({self.name!r}, {self.provider}, args={self.args!r}, "
                f"{len(self.attempts)} attempts)")


@dataclass(frozen=True, slots=True, kw_only=True)
class Workspace:
    """The folders of one batch."""

    root: Path

    @property
    def project(self) -> Path:
        return self.root / "proj"

    @property
    def mark(self) -> Path:
        return self.root / "mark"

    @property
    def outside(self) -> Path:
        return self.root / "outside"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def user_home(self) -> Path:
        return self.root / "userhome"

    def expand(self, text: str, attempt_id: str = "") -> str:
        """Replace the placeholders in `text`."""
        table = {
            "@MARK@": str(self.mark),
            "@M@": str(self.mark / attempt_id),
            "@D@": str(self.mark / f"{attempt_id}.d"),
            "@O@": str(self.outside / attempt_id),
            "@P@": str(self.project),
            "@X@": str(self.outside),
        }
        return re.sub("|".join(map(re.escape, table)), lambda m: table[m.group(0)], text)

    def expand_input(self, value: Any, attempt_id: str) -> Any:
        """Expand placeholders in every string of a tool input."""
        match value:
            case str():
                return self.expand(value, attempt_id)
            case Mapping():
                return {k: self.expand_input(v, attempt_id) for k, v in value.items()}
            case list() | tuple():
                return [self.expand_input(v, attempt_id) for v in value]
            case _:
                return value


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolOutcome:
    """What aimon sent back to the model for one tool call."""

    is_error: bool
    text: str
    duration_ms: float | None = None
    """From stream-json output, when aimon printed it."""
    sent: bool = True
    """False when only stream-json shows it (the run was killed before sending it)."""


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Outcome:
    """What one batch run left behind (JSON-serialisable, shared between xdist workers)."""

    root: str
    returncode: int | None
    """None when aimon did not finish within RUN_TIMEOUT."""
    stdout: str
    stderr: str
    results: Mapping[str, ToolOutcome]
    """By tool_use id: from the last request, else (a killed run) from stream-json output."""
    snapshots: Mapping[str, str | None]
    modes: Mapping[str, int]
    """Permission bits of AIMON_HOME/data and everything in it right after the run, by path
    relative to AIMON_HOME (folders end with a slash)."""
    remaining: int
    """Scripted model replies the run never asked for."""
    bodies: str
    """Every request body the model server received, as JSON text."""
    seconds: float

    @property
    def workspace(self) -> Workspace:
        return Workspace(root=Path(self.root))

    def __repr__(self) -> str:
        return f"Outcome({self.root!r}, exit {self.returncode})"

    def summary(self) -> str:
        """Return a short account of the run for failure messages."""
        return (f"aimon exit {self.returncode} after {self.seconds:.1f}s; "
                f"stderr: {self.stderr[-600:]!r}")


def call_id(index: int, setup: int | None = None) -> str:
    """Return the tool_use id of attempt `index` (or of its `setup`-th setup call)."""
    return f"toolu_a{index:03d}" if setup is None else f"toolu_a{index:03d}_s{setup}"
