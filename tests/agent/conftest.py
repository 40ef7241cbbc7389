"""Fixtures for executor tests: a tool context on tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from aimon_core.filesystem import LocalFileSystem
from aimon_core.shell import LocalShell
from aimon_core.tools import ToolContext
from aimon_core.tools._state import ToolState


@pytest.fixture
def context(tmp_path: Path) -> ToolContext:
    return ToolContext(project_root=tmp_path, cwd=tmp_path, fs=LocalFileSystem(tmp_path),
                       shell=LocalShell(), state=ToolState())
