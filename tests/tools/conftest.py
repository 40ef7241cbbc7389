"""Fixtures for the built-in tools: a project folder and a ToolContext on the local disk."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aimon_core.filesystem import LocalFileSystem
from aimon_core.shell import LocalShell
from aimon_core.tools import ToolContext, ToolResult, ToolState, builtin_tools, execute_tool

RunTool = Callable[..., ToolResult]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """Return an empty project folder; tmp_path itself is outside the project."""
    root = tmp_path / "project"
    root.mkdir()
    return root


@pytest.fixture
def ctx(project: Path) -> ToolContext:
    return ToolContext(
        project_root=project,
        cwd=project,
        fs=LocalFileSystem(project),
        shell=LocalShell(kill_grace=0.5),
        state=ToolState(),
    )


@pytest.fixture
def run_tool(ctx: ToolContext) -> RunTool:
    """Return a function that runs a built-in tool by name through the schema gate."""
    tools = {tool.name: tool for tool in builtin_tools()}

    def run(name: str, **args: Any) -> ToolResult:
        return asyncio.run(execute_tool(tools[name], args, ctx))

    return run
