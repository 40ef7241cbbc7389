"""Benchmark what the OS sandbox adds to a command's start: the same command, sandboxed or not.

Run:  .venv/bin/python bench/bench_sandbox.py [--runs N] [--command CMD]

Each pair runs `CMD` (default `true`: nothing but the start and the end) once through a plain
`LocalShell` and once through a `LocalShell` with a `Sandbox` (nsenter, bubblewrap, the
boundary resolved for the command, the seccomp filter, waiting until its pid namespace is
empty), alternately, in one warm process, with the child watcher the `aimon` command
installs. The project is a new git repository in a temporary folder (`.git` is pinned, its
config and hooks read-only, `.aimon/`, `.claude/` and `.mcp.json` held). Prints the median of
each, the median of the per-pair differences (the target: at most 5 ms), the first sandboxed
command of a session (the network namespace and the proxy start then), and the load average.

`--parts` also splits the cost: `bash -c CMD` against bubblewrap with the sandbox's namespace
flags, then the boundary's mounts added, then `nsenter` into a network namespace in front, each
step against the one before, in pairs, with `subprocess.run` (no asyncio around it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from aimon_core.shell import LocalShell, Sandbox, SandboxConfig, SandboxPaths, probe_sandbox

ROOT = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))


def _sandboxed() -> LocalShell:
    probe = probe_sandbox()
    if not probe.available:
        raise SystemExit(f"the sandbox cannot run here: {probe.describe()}")
    config = SandboxConfig(paths=SandboxPaths(project=ROOT, home=Path.home()))
    return LocalShell(sandbox=Sandbox(config, probe))


async def first_command(command: str) -> float:
    """Time the first sandboxed command of a new shell (its session's network starts)."""
    shell = _sandboxed()
    try:
        started = time.perf_counter()
        result = await shell.run(command, cwd=ROOT, timeout=30)
        assert result.exit_code == 0, result
        return time.perf_counter() - started
    finally:
        await shell.close()


def _cpu() -> float:
    """Return the CPU seconds of this thread and of every child reaped so far."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.thread_time() + children.ru_utime + children.ru_stime


async def pairs(command: str, runs: int) -> dict[str, list[float]]:
    """Time `command` plain and sandboxed, alternately: wall and CPU seconds of each."""
    plain, boxed = LocalShell(), _sandboxed()
    times: dict[str, list[float]] = {"plain": [], "boxed": [], "plain cpu": [], "boxed cpu": []}
    try:
        for shell in (plain, boxed):  # warm: imports, the page cache, the network namespace
            await shell.run(command, cwd=ROOT, timeout=30)
        for _ in range(runs):
            for shell, name in ((plain, "plain"), (boxed, "boxed")):
                started, cpu = time.perf_counter(), _cpu()
                result = await shell.run(command, cwd=ROOT, timeout=30)
                times[name].append(time.perf_counter() - started)
                times[f"{name} cpu"].append(_cpu() - cpu)
                assert result.exit_code == 0, result
        return times
    finally:
        await boxed.close()


def _pair_median(first: list[str], second: list[str], runs: int, fds: tuple[int, ...] = ()
                 ) -> float:
    """Return the median over `runs` pairs of (time of `second`) - (time of `first`)."""
    def once(argv: list[str]) -> float:
        started = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       pass_fds=fds, check=False)
        return time.perf_counter() - started

    return statistics.median(once(second) - once(first) for _ in range(runs))


def parts(command: str, runs: int) -> list[tuple[str, float]]:
    """Split what the sandbox adds to `command` into bubblewrap, the mounts and nsenter."""
    from aimon_core.shell._boundary import mount_args, resolve_boundary
    from aimon_core.shell._netns import open_network
    from aimon_core.shell._sandbox import _NAMESPACES

    probe = probe_sandbox()
    assert probe.bwrap is not None and probe.nsenter is not None
    shell = ["bash", "-c", command]
    bwrap = [probe.bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
             *_NAMESPACES, "--unshare-net"]
    boundary = resolve_boundary(SandboxPaths(project=ROOT, home=Path.home()), ROOT)
    empty: list[int] = []

    def data() -> int:
        read_end, write_end = os.pipe()
        os.close(write_end)
        empty.append(read_end)
        return read_end

    mounted = [*bwrap[:-1], *mount_args(boundary, data)]
    network = asyncio.run(open_network(probe.bwrap, probe.nsenter, port=3129))
    try:
        return [
            ("bubblewrap (namespaces, /dev, /proc)",
             _pair_median(shell, [*bwrap, *shell], runs)),
            ("the boundary's mounts", _pair_median([*bwrap, *shell], [*mounted, *shell], runs,
                                                   tuple(empty))),
            ("nsenter into the session's network",
             _pair_median([*bwrap, *shell], [*network.enter_argv(), *bwrap[:-1], *shell], runs,
                          network.fds)),
        ]
    finally:
        network.close()


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--command", default="true")
    parser.add_argument("--parts", action="store_true", help="also split the cost by step")
    args = parser.parse_args()
    subprocess.run(["git", "init", "-q", str(ROOT)], check=True)
    try:
        run(args.command, args.runs, args.parts)
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)


def run(command: str, runs: int, split: bool) -> None:
    """Measure and print (see the module docs)."""
    from aimon_cli._children import use_pidfd

    use_pidfd()  # as the `aimon` command does (Python 3.11: a pidfd per child, no thread)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    first = asyncio.run(first_command(command))
    times = asyncio.run(pairs(command, runs))
    print(f"command: {command!r}, {runs} pairs (wall; CPU: this thread and the children)")
    for name, label in (("plain", "plain LocalShell:    "), ("boxed", "sandboxed LocalShell:")):
        print(f"{label} median {_ms(statistics.median(times[name]))}, "
              f"CPU {_ms(statistics.median(times[name + ' cpu']))}")
    added = [b - p for p, b in zip(times["plain"], times["boxed"], strict=True)]
    cpu = [b - p for p, b in zip(times["plain cpu"], times["boxed cpu"], strict=True)]
    print(f"added per command:    median of pairs {_ms(statistics.median(added))}"
          f" (p90 {_ms(statistics.quantiles(added, n=10)[-1])}), CPU "
          f"{_ms(statistics.median(cpu))}")
    print(f"first sandboxed command of a session: {_ms(first)}")
    if split:
        for name, added_by in parts(command, runs):
            print(f"  of which {name}: {_ms(added_by)}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
