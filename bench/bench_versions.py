"""Compare two source trees of aimon: `--version`, the first REPL prompt, and per-iteration cost.

Run:  .venv/bin/python bench/bench_versions.py OTHER_TREE [--rounds N] [--runs N]
OTHER_TREE is a checkout of another commit (e.g. `git worktree add /tmp/base COMMIT`); it runs
with PYTHONPATH pointing at it, this tree without. Rounds alternate the two, so a machine
whose speed drifts affects both alike. Prints a Markdown table. Not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROBE = """
import statistics, sys
sys.path.insert(0, {bench!r})
from bench_loop import bench_turn, bench_version
from bench_sessions import bench_first_prompt
runs = {runs}
version, _ = bench_version(runs * 2)
glyph, editor, _ = bench_first_prompt(runs)
one, _ = bench_turn("anthropic", 0, runs)
fifty, rss = bench_turn("anthropic", 50, runs)
per = (statistics.median(fifty) - statistics.median(one)) / 50
print(statistics.median(version), statistics.median(glyph), statistics.median(editor),
      statistics.median(one), per, rss)
"""
NAMES = ("`aimon --version`", "first REPL prompt on screen", "line editor live at it",
         "`aimon -p`, one model call (anthropic)", "per iteration (SDK + loopback + Glob)")


def measure(tree: Path | None, runs: int) -> list[float]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    out = subprocess.run([sys.executable, "-c", PROBE.format(bench=str(HERE), runs=runs)],
                         env=env, capture_output=True, text=True, check=True)
    return [float(x) for x in out.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("other", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    this: list[list[float]] = []
    other: list[list[float]] = []
    for _ in range(args.rounds):
        this.append(measure(None, args.runs))
        other.append(measure(args.other, args.runs))
    print("| what | other tree | this tree | ratio |")
    print("|---|---|---|---|")
    for index, name in enumerate(NAMES):
        a = statistics.median(row[index] for row in other) * 1000
        b = statistics.median(row[index] for row in this) * 1000
        print(f"| {name} | {a:.1f} ms | {b:.1f} ms | {b / a:.2f} |")
    rss_a = max(row[5] for row in other)
    rss_b = max(row[5] for row in this)
    print(f"| peak RSS, 50-call `aimon -p` | {rss_a:.0f} MB | {rss_b:.0f} MB | "
          f"{rss_b / rss_a:.2f} |")


if __name__ == "__main__":
    main()
