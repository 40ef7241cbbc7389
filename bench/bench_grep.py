"""Benchmark the Grep tool against raw `rg` with the same arguments on the same tree.

Run:  .venv/bin/python bench/bench_grep.py [--runs N] [--tree PATH]

Each pair runs one Grep call (the tool, as the executor calls it: schema check, path checks,
rg through the shell seam's `exec`, output formatting) and one `rg` process with the arguments
the tool gives it (spawned directly, output read to the end), alternately, in one warm
process, with the child watcher the `aimon` command installs (both spawns use it). Prints the
median of each and the median of the per-pair ratios, for three output modes, and the load
average after the runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path
from typing import Any

from aimon_core.filesystem import LocalFileSystem
from aimon_core.shell import LocalShell, spawn_process
from aimon_core.tools import ToolContext, ToolInput, builtin_tools, execute_tool
from aimon_core.tools._search_tools import find_ripgrep, grep_args
from aimon_core.tools._state import ToolState

CASES: tuple[dict[str, Any], ...] = (
    {"pattern": "def [a-z_]+\\(", "output_mode": "files_with_matches"},
    {"pattern": "asyncio\\.to_thread", "output_mode": "content"},
    {"pattern": "import", "output_mode": "count"},
)


async def pair_times(tree: Path, case: dict[str, Any], runs: int) -> tuple[list[float], ...]:
    grep = next(t for t in builtin_tools() if t.name == "Grep")
    ctx = ToolContext(project_root=tree, cwd=tree, fs=LocalFileSystem(tree), shell=LocalShell(),
                      state=ToolState())
    rg = find_ripgrep()
    assert rg is not None, "rg is not installed"
    args = grep_args(ToolInput(case), case["output_mode"], tree)

    async def raw() -> None:
        proc = await asyncio.create_subprocess_exec(
            rg, *args, cwd=tree, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        await proc.communicate()

    async def tool() -> None:
        result = await execute_tool(grep, case, ctx)
        assert not result.is_error, result.text

    await tool()  # warm: imports, validators, the page cache
    await raw()
    tools: list[float] = []
    raws: list[float] = []
    for _ in range(runs):
        for run, into in ((tool, tools), (raw, raws)):
            started = time.perf_counter()
            await run()
            into.append(time.perf_counter() - started)
    return tools, raws, [t / r for t, r in zip(tools, raws, strict=True)]


async def session_times(tree: Path, runs: int) -> tuple[list[float], list[float]]:
    """Time rg (the count case) spawned in a new session and in a new process group only."""
    rg = find_ripgrep()
    assert rg is not None, "rg is not installed"
    args = grep_args(ToolInput(CASES[2]), CASES[2]["output_mode"], tree)

    async def once(new_session: bool) -> float:
        started = time.perf_counter()
        proc = await spawn_process(rg, *args, cwd=tree, env=os.environ,
                                   new_session=new_session)
        await proc.communicate()
        return time.perf_counter() - started

    await once(True)
    sessions: list[float] = []
    groups: list[float] = []
    for _ in range(runs):
        sessions.append(await once(True))
        groups.append(await once(False))
    return sessions, groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    tree = args.tree.resolve()
    try:  # as the `aimon` command does (on Python 3.11: a pidfd per child, no waiter thread)
        from aimon_cli._children import use_pidfd
    except ImportError:  # a tree from before it
        pass
    else:
        use_pidfd()
    print(f"tree: {tree}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| case | Grep tool (median) | raw rg (median) | ratio (median of pairs) |")
    print("|---|---|---|---|")
    for case in CASES:
        tools, raws, ratios = asyncio.run(pair_times(tree, case, args.runs))
        print(f"| `{case['pattern']}`, {case['output_mode']} | "
              f"{statistics.median(tools) * 1000:.1f} ms | {statistics.median(raws) * 1000:.1f} ms"
              f" | {statistics.median(ratios):.2f} |")
    try:
        sessions, groups = asyncio.run(session_times(tree, args.runs))
    except TypeError:  # a tree from before spawn_process took new_session
        pass
    else:
        print(f"rg (count) spawned in a new session {statistics.median(sessions) * 1000:.1f} ms,"
              f" in a new process group {statistics.median(groups) * 1000:.1f} ms (medians)")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
