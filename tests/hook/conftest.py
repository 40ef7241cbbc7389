"""Fixtures for hook tests: hook scripts written into a temporary project, and hook inputs."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aimon_core.hook import HookEvent, HookInput

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
        return HookInput(event=event, cwd=project, **fields)

    return make
