"""Fixtures for hook tests: hook scripts written into a temporary project, and hook inputs."""

from __future__ import annotations

import dataclasses
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aimon_core.hook import (
    ConfigChangeInput,
    HookEvent,
    HookInput,
    NotificationInput,
    PermissionDeniedInput,
    PermissionRequestInput,
    PostCompactInput,
    PostToolUseFailureInput,
    PostToolUseInput,
    PreCompactInput,
    PreToolUseInput,
    SessionEndInput,
    SessionStartInput,
    StopInput,
    SubagentStartInput,
    SubagentStopInput,
    UserPromptSubmitInput,
)

MakeScript = Callable[..., str]
MakeInput = Callable[..., HookInput]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Return an empty project folder."""
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def script(tmp_path: Path) -> MakeScript:
    """Return a function that writes an executable hook script and returns its command.

    `script(name, body)` writes a /bin/sh script; `script(name, body, python=True)` a Python
    one run by this interpreter.
    """
    folder = tmp_path / "hooks"
    folder.mkdir()

    def make(name: str, body: str, *, python: bool = False) -> str:
        path = folder / name
        shebang = f"#!{sys.executable}" if python else "#!/bin/sh"
        path.write_text(f"{shebang}\n{body.lstrip()}", encoding="utf-8")
        path.chmod(0o755)
        return shlex.quote(str(path))

    return make


@pytest.fixture
def make_input(project: Path) -> MakeInput:
    """Return a function building a HookInput for `event` in the project folder."""

    def make(event: HookEvent, **fields: Any) -> HookInput:
        fields.setdefault("session_id", "sess-1")
        return hook_input(event, cwd=project, **fields)

    return make


# Each event's input type, and a value for each required field a test leaves out.
_INPUT_TYPES: dict[HookEvent, Any] = {cls.event: cls for cls in (
    PreToolUseInput, PostToolUseInput, PostToolUseFailureInput, PermissionRequestInput,
    PermissionDeniedInput, UserPromptSubmitInput, StopInput, SubagentStartInput,
    SubagentStopInput, PreCompactInput, PostCompactInput, SessionStartInput, SessionEndInput,
    ConfigChangeInput, NotificationInput)}
_BLANKS: dict[str, Any] = {
    "tool_name": "", "tool_input": {}, "tool_response": "", "error": "", "reason": "",
    "prompt": "", "agent_id": "", "agent_type": "", "trigger": "manual", "source": "startup",
    "message": "", "notification_type": ""}


def hook_input(event: HookEvent, *, cwd: Path, session_id: str = "s",
               transcript_path: str | None = None, permission_mode: str | None = None,
               **fields: Any) -> HookInput:
    """Return the HookInput of `event`: the fields its type has, blanks for required ones
    left out, and nothing of the fields it does not have."""
    kind = _INPUT_TYPES[event]
    own = {f.name: f for f in dataclasses.fields(kind)}
    values = {name: fields.get(name, _BLANKS.get(name)) for name, f in own.items()
              if name in fields or (f.default is dataclasses.MISSING
                                    and f.default_factory is dataclasses.MISSING)}
    return HookInput(data=kind(**values), session_id=session_id, cwd=cwd,
                     transcript_path=transcript_path, permission_mode=permission_mode)
