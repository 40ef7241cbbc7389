"""Grep and Glob run ripgrep as a program through the shell seam, never through bash."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

from aimon_core.shell import BackgroundOutput, LocalShell, ShellResult, VirtualShell
from aimon_core.tools import ToolContext, builtin_tools, execute_tool
from aimon_core.tools._search_tools import find_ripgrep

TOOLS = {tool.name: tool for tool in builtin_tools()}


class RecordingShell:
    """A VirtualShell that runs everything on a LocalShell and notes what it was asked."""

    def __init__(self) -> None:
        self.local = LocalShell()
        self.commands: list[str] = []
        self.programs: list[list[str]] = []

    async def run(self, command: str, *, cwd: Path, timeout: float,  # noqa: ASYNC109
                  env: Mapping[str, str] | None = None,
                  output_limit: int | None = None) -> ShellResult:
        self.commands.append(command)
        return await self.local.run(command, cwd=cwd, timeout=timeout, env=env,
                                    output_limit=output_limit)

    async def exec(self, argv: Sequence[str], *, cwd: Path, timeout: float,  # noqa: ASYNC109
                   env: Mapping[str, str] | None = None,
                   output_limit: int | None = None) -> ShellResult:
        self.programs.append(list(argv))
        return await self.local.exec(argv, cwd=cwd, timeout=timeout, env=env,
                                     output_limit=output_limit)

    async def start_background(self, command: str, *, cwd: Path) -> str:
        raise AssertionError("not used")

    async def read_background(self, shell_id: str) -> BackgroundOutput:
        raise AssertionError("not used")

    async def kill_background(self, shell_id: str) -> BackgroundOutput:
        raise AssertionError("not used")

    async def close(self) -> None:
        await self.local.close()


def test_grep_and_glob_exec_rg_without_bash(project: Path, ctx: ToolContext) -> None:
    (project / "a.py").write_text("def alpha():\n    return 1\n")
    (project / "b.md").write_text("alpha beta\n")
    shell = RecordingShell()
    assert isinstance(shell, VirtualShell)
    recorded = dataclasses.replace(ctx, shell=shell)
    calls = [
        ("Grep", {"pattern": "alpha"}),
        ("Grep", {"pattern": "alpha", "output_mode": "content"}),
        ("Grep", {"pattern": "alpha", "output_mode": "count", "path": "a.py"}),
        ("Glob", {"pattern": "*.py"}),
    ]

    async def scenario() -> list[str]:
        return [(await execute_tool(TOOLS[name], args, recorded)).text for name, args in calls]

    files, content, count, glob = asyncio.run(scenario())
    assert shell.commands == []
    assert [argv[0] for argv in shell.programs] == [find_ripgrep()] * 4
    assert files.splitlines()[1:] == sorted([str(project / "a.py"), str(project / "b.md")],
                                            key=lambda p: -Path(p).stat().st_mtime)
    assert f"{project / 'a.py'}:1:def alpha():" in content
    assert "Found 1 matching lines in 1 file(s)." in count
    assert glob == str(project / "a.py")


def test_option_spellings_in_grep_input_stay_data(project: Path, ctx: ToolContext) -> None:
    # Without bash in between, what the model writes reaches rg as argv: a pattern, glob or
    # type spelled as an option (`--pre=CMD` makes rg run CMD on every file) must stay a value.
    marker = project / "ran"
    (project / "evil.sh").write_text(f"#!/bin/sh\ntouch {marker}\ncat \"$1\"\n")
    (project / "evil.sh").chmod(0o755)
    (project / "a.txt").write_text("--pre=./evil.sh\n")
    shell = RecordingShell()
    recorded = dataclasses.replace(ctx, shell=shell)
    hostile = [{"pattern": "--pre=./evil.sh"}, {"pattern": "-f/etc/passwd"},
               {"pattern": "x", "glob": "--pre=./evil.sh"},
               {"pattern": "x", "glob": "--pre ./evil.sh/x"},
               {"pattern": "x", "type": "--pre=./evil.sh"},
               {"pattern": "--pre", "path": "--pre=./evil.sh"}]

    async def scenario() -> list[str]:
        return [(await execute_tool(TOOLS["Grep"], args, recorded)).text for args in hostile]

    results = asyncio.run(scenario())
    assert not marker.exists()
    assert "a.txt" in results[0]  # the pattern was searched for as text
    for argv, args in zip(shell.programs, hostile, strict=False):
        assert argv[argv.index("--regexp") + 1] == args["pattern"]
        assert argv.index("--regexp") < argv.index("--")
