"""Grep and Glob skip paths a Read deny rule covers, and never open FIFOs or devices."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path
from typing import Any

import pytest

from aimon_core.permission import PermissionRules, read_filter
from aimon_core.tools import ToolContext, ToolResult, builtin_tools, execute_tool


def _run(ctx: ToolContext, name: str, **args: Any) -> ToolResult:
    tool = next(t for t in builtin_tools() if t.name == name)
    return asyncio.run(execute_tool(tool, args, ctx))


@pytest.fixture
def guarded(ctx: ToolContext, project: Path) -> ToolContext:
    (project / ".env").write_text("KEY=secret-value\n")
    (project / "app.py").write_text("KEY = 'public'\n")
    (project / "secrets").mkdir()
    (project / "secrets" / "token.txt").write_text("KEY=token-value\n")
    os.link(project / ".env", project / "copy.txt")
    rules = PermissionRules.parse(deny=("Read(./.env)", "Read(secrets/**)"))
    return dataclasses.replace(ctx, path_filter=read_filter(lambda: rules, project))


@pytest.mark.parametrize("mode", ["content", "files_with_matches", "count"])
def test_grep_skips_denied_files_and_says_so(guarded: ToolContext, mode: str) -> None:
    result = _run(guarded, "Grep", pattern="KEY", output_mode=mode)
    assert not result.is_error, result.text
    assert "secret-value" not in result.text and "token-value" not in result.text
    assert ".env" not in result.text.replace("(Skipped", "")
    assert "copy.txt" not in result.text
    assert "app.py" in result.text
    assert "Skipped 3 paths that a permission deny rule forbids reading" in result.text
    assert result.data["skipped"] == 3


def test_grep_on_a_denied_file_is_refused(guarded: ToolContext) -> None:
    result = _run(guarded, "Grep", pattern="KEY", path="copy.txt", output_mode="content")
    assert result.is_error
    assert "secret-value" not in result.text


def test_glob_skips_denied_files_and_says_so(guarded: ToolContext) -> None:
    result = _run(guarded, "Glob", pattern="**/*")
    assert not result.is_error, result.text
    assert "app.py" in result.text
    assert "token.txt" not in result.text and "copy.txt" not in result.text
    assert "Skipped 3 paths" in result.text


def test_without_a_filter_nothing_is_skipped(ctx: ToolContext, project: Path) -> None:
    (project / ".env").write_text("KEY=1\n")
    result = _run(ctx, "Grep", pattern="KEY", output_mode="content")
    assert ".env" in result.text and "Skipped" not in result.text


def test_search_tools_never_open_a_fifo(ctx: ToolContext, project: Path) -> None:
    (project / "a.txt").write_text("needle\n")
    os.mkfifo(project / "pipe")
    result = _run(ctx, "Grep", pattern="needle", path="pipe")
    assert result.is_error and "not a regular file" in result.text
    result = _run(ctx, "Grep", pattern="needle", output_mode="content")
    assert "a.txt" in result.text
    result = _run(ctx, "Glob", pattern="*")
    assert "a.txt" in result.text and "pipe" not in result.text


def test_the_filter_follows_reloaded_rules(project: Path) -> None:
    (project / ".env").write_text("x")
    current = [PermissionRules()]
    allowed = read_filter(lambda: current[0], project)
    assert allowed(project / ".env")
    current[0] = PermissionRules.parse(deny=("Read(.env)",))
    assert not allowed(project / ".env")
