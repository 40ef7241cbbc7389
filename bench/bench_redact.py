"""Benchmark the RedactingClient: what the last wall adds to each model call.

Run:
  .venv/bin/python bench/bench_redact.py [--secrets N] [--runs R]

On conversations of 20, 200 and 10,000 messages (bench_sessions' shapes: prompts, tool
calls, 40-line results), with N known credentials none of which occurs, it times in this
process (median of R runs):

- the next request of a turn: the previous request plus one tool call and its result (the
  steady iteration: an identity comparison of the old messages and a scan of two new ones);
- the first request of a resumed session (every message scanned once);
- for scale, `json.dumps` of the same messages' text, which every request pays anyway.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_sessions import conversation

from aimon_core.llm import (
    LLMRequest,
    Message,
    RedactingClient,
    ScriptedLLMClient,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)


def secrets(count: int) -> tuple[tuple[str, str], ...]:
    return tuple((f"SERVICE_{i}_TOKEN", f"tok-{i:02d}-" + "q7Zx" * 8) for i in range(count))


def step(index: int) -> list[Message]:
    """Return one more iteration: a tool call and its result."""
    return [
        Message(role="assistant", content=(ToolUseBlock(
            id=f"extra{index}", name="Read", input={"file_path": f"src/m{index}.py"}),)),
        Message(role="user", content=(ToolResultBlock(
            tool_use_id=f"extra{index}",
            content=(TextBlock(text="\n".join(f"line {n} of m{index}" for n in range(40))),)),)),
    ]


def median_ms(run: Callable[[], object], runs: int) -> float:
    spent = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        spent.append(time.perf_counter() - started)
    return statistics.median(spent) * 1000


def measure(size: int, count: int, runs: int) -> tuple[float, float, float]:
    history = conversation(size)
    system = "You are aimon. " * 2000
    pairs = secrets(count)

    def next_request() -> None:
        client = RedactingClient(ScriptedLLMClient(steps=[]), lambda: pairs)
        client.redact_request(LLMRequest(model="m", system=system, messages=tuple(history)))
        grown = (*history, *step(0))
        started = time.perf_counter()
        client.redact_request(LLMRequest(model="m", system=system, messages=grown))
        spent.append(time.perf_counter() - started)

    spent: list[float] = []
    for _ in range(runs):
        next_request()
    steady = statistics.median(spent) * 1000

    def first_request() -> None:
        client = RedactingClient(ScriptedLLMClient(steps=[]), lambda: pairs)
        client.redact_request(LLMRequest(model="m", system=system, messages=tuple(history)))

    first = median_ms(first_request, runs)
    texts = [repr(m.content) for m in history]
    encode = median_ms(lambda: json.dumps(texts), runs)
    return steady, first, encode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--secrets", type=int, default=8)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    print(f"{args.secrets} known credentials, median of {args.runs} runs\n")
    print("| messages | next request of a turn | first request after resume "
          "| for scale: json.dumps of the messages |")
    print("|---|---|---|---|")
    for size in (20, 200, 10_000):
        steady, first, encode = measure(size, args.secrets, args.runs)
        print(f"| {size:,} | {steady:.3f} ms | {first:.2f} ms | {encode:.2f} ms |")


if __name__ == "__main__":
    main()
