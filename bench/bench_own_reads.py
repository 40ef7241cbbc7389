"""Benchmark the settings load with 60 project skills: what the own-read checks add.

Run:  .venv/bin/python bench/bench_own_reads.py [--runs N]
Prints the median of `load_settings` (which now also looks for skills whose hooks need trust,
reading each SKILL.md through `read_own`) and of one `read_own` against a plain read. Not a
test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

COUNT = 60


def median_ms(call: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    runs = parser.parse_args().runs
    root = Path(tempfile.mkdtemp()) / "proj"
    for i in range(COUNT):
        folder = root / ".aimon" / "skills" / f"s{i}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: s{i}\ndescription: skill {i} does things\n---\n" + "body\n" * 80)
    (root / ".aimon" / "settings.json").write_text('{"permissions": {"allow": ["Read"]}}')
    os.environ["AIMON_HOME"] = str(root.parent / "home")
    from aimon_core.config import TrustStore, load_settings

    store = TrustStore()
    skill = root / ".aimon" / "skills" / "s0" / "SKILL.md"
    print("| what | median |\n|---|---|")
    print(f"| load_settings, {COUNT} project skills | "
          f"{median_ms(lambda: load_settings(root, trust_store=store), runs):.2f} ms |")
    print(f"| read_bytes of one SKILL.md | {median_ms(skill.read_bytes, runs * 10):.4f} ms |")
    try:
        from aimon_core.filesystem import read_own
    except ImportError:  # a checkout from before read_own
        return
    print(f"| read_own of one SKILL.md | "
          f"{median_ms(lambda: read_own(skill, inside=root, limit=1 << 20), runs * 10):.4f} ms |")


if __name__ == "__main__":
    main()
