"""Time one command run from two (or more) source trees, alternated: A B A B ...

Run:  .venv/bin/python bench/bench_alternate.py --runs N TREE_A TREE_B -- COMMAND [ARGS...]
  e.g. the `aimon -p` lines `bench_fix4.py serve` prints (their leading `env X=Y` is applied),
  with `/tmp/before` (a byte-compiled `git archive` of another commit) against this tree (`.`).

Each tree runs through PYTHONPATH (`.`: none, the installed tree). After one warm-up round,
each run's wall time and CPU (user + system, `os.wait4`) are kept; prints the medians and
minima of each tree and the load average. Alternating keeps a machine whose speed drifts (a
shared one) from favouring either tree. Not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def _split_env(command: list[str]) -> tuple[dict[str, str], list[str]]:
    """Apply a leading `env A=B ...` to a copy of this environment."""
    env = dict(os.environ)
    if command and command[0] == "env":
        command = command[1:]
        while command and "=" in command[0] and not command[0].startswith("-"):
            key, value = command[0].split("=", 1)
            env[key] = value
            command = command[1:]
    return env, command


def run_once(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Run `command`; return its (wall seconds, CPU seconds); fail on a non-zero exit."""
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    assert child.stderr is not None
    err = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{command[0]} failed: {err.decode(errors='replace')}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    argv = sys.argv[1:]
    if "--" not in argv:
        raise SystemExit(__doc__)
    cut = argv.index("--")
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("trees", nargs="+", help="source trees ('.' for the installed one)")
    args = parser.parse_args(argv[:cut])
    command = argv[cut + 1:]
    env, command = _split_env(command)
    found: dict[str, tuple[list[float], list[float]]] = {tree: ([], []) for tree in args.trees}
    for run in range(args.runs + 1):
        for tree in args.trees:
            tree_env = dict(env)
            if tree != ".":
                tree_env["PYTHONPATH"] = tree
            wall, cpu = run_once(command, tree_env)
            if run:  # the first round warms the caches
                found[tree][0].append(wall)
                found[tree][1].append(cpu)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| tree | wall, median (min) | CPU, median (min) | runs |")
    print("|---|---|---|---|")
    for tree, (walls, cpus) in found.items():
        print(f"| {tree} | {statistics.median(walls) * 1000:.0f} ms ({min(walls) * 1000:.0f}) "
              f"| {statistics.median(cpus) * 1000:.0f} ms ({min(cpus) * 1000:.0f}) "
              f"| {len(walls)} |")


if __name__ == "__main__":
    main()
