"""Benchmark checkpoints: a snapshot of an unchanged tree, of 10 changed files in 10,000, the
disk 50 checkpoints use, and (for scale) the same snapshots with a shadow git repository.

Run:  .venv/bin/python bench/bench_checkpoint.py [--files 10000] [--runs 20]
Prints a Markdown table. Not a test: numbers depend on the machine; see docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from aimon_core.checkpoint import CheckpointStore

SOURCE = "".join(f"def function_{i}(x):\n    return x * {i} + {i % 7}\n\n" for i in range(30))


def make_tree(root: Path, files: int) -> list[Path]:
    """Write `files` source files (~1.3 kB each) in folders of 20, three levels deep."""
    paths = []
    for i in range(files):
        folder = root / f"pkg{i // 1000}" / f"mod{(i // 20) % 50}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"file_{i}.py"
        path.write_text(f"# file {i}\n{SOURCE}")
        paths.append(path)
    old = time.time() - 3600  # files not written this second: the stat cache may trust them
    for path in paths:
        os.utime(path, (old, old))
    return paths


Times = tuple[list[float], list[float]]  # wall and CPU (this process), in ms


def timed(fn: Callable[[], object], runs: int) -> Times:
    wall, cpu = [], []
    for _ in range(runs):
        started, started_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
    return wall, cpu


def row(what: str, times: Times) -> str:
    wall, cpu = sorted(times[0]), sorted(times[1])
    p90 = wall[int(len(wall) * 0.9) - 1] if len(wall) >= 10 else wall[-1]
    return (f"| {what} | {len(wall)} | {statistics.median(wall):.1f} ms | {p90:.1f} ms | "
            f"{statistics.median(cpu):.1f} ms |")


def disk_usage(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def change_ten(paths: list[Path], round_: int) -> None:
    for path in paths[round_ * 97 % 500::1000][:10]:
        with path.open("a") as file:
            file.write(f"# change {round_}\n")


def shadow_git(root: Path, git_dir: Path) -> Callable[[], None]:
    """Return a snapshot function driving a shadow repository (add -A, write-tree)."""
    env = {**os.environ, "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(root),
           "GIT_INDEX_FILE": str(git_dir / "aimon-index"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True,
                   env={k: v for k, v in env.items() if k != "GIT_WORK_TREE"})

    def snap() -> None:
        subprocess.run(["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
                        "add", "-A"], check=True, env=env)
        subprocess.run(["git", "write-tree"], check=True, env=env, capture_output=True)

    return snap


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root = base / "project"
        paths = make_tree(root, args.files)
        store_dir = base / "checkpoints"
        store = CheckpointStore(store_dir)
        first = timed(lambda: store.snapshot(root), 1)
        unchanged = timed(lambda: store.snapshot(root), args.runs)
        fresh = timed(lambda: CheckpointStore(store_dir).snapshot(root), 5)
        round_ = iter(range(10_000))

        def ten_changed() -> None:
            change_ten(paths, next(round_))
            store.snapshot(root)

        changed = timed(ten_changed, args.runs)
        before = disk_usage(store_dir)
        for _ in range(50):
            ten_changed()
        fifty = disk_usage(store_dir) - before
        small = base / "small"
        make_tree(small, 50)
        small_store = CheckpointStore(base / "small-checkpoints")
        small_store.snapshot(small)
        small_times = timed(lambda: small_store.snapshot(small), args.runs)
        git_rows = []
        if shutil.which("git"):
            snap = shadow_git(root, base / "shadow.git")
            timed(snap, 1)
            git_rows = [row("shadow git: unchanged tree (add -A + write-tree)",
                            timed(snap, max(5, args.runs // 2)))]
        print(f"{args.files:,} files of ~1.3 kB in {args.files // 20:,} folders\n")
        print("| what | n | wall p50 | wall p90 | CPU p50 |\n|---|---|---|---|---|")
        print(row("first checkpoint (hash and store everything)", first))
        print(row("unchanged tree", unchanged))
        print(row("unchanged tree, new process (stat cache read from disk)", fresh))
        print(row("10 files changed", changed))
        print(row("unchanged 50-file project", small_times))
        for line in git_rows:
            print(line)
        source = sum(p.stat().st_size for p in paths)
        print(f"\nproject size {source / 1e6:.1f} MB; store after the first checkpoint "
              f"{before / 1e6:.1f} MB; 50 more checkpoints (10 files changed each) added "
              f"{fifty / 1e6:.2f} MB ({fifty / 50 / 1e3:.1f} kB each)")


if __name__ == "__main__":
    main()
