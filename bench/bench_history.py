"""Benchmark the history walks of a model call on a big session (issue 13, big sessions).

Run:
  .venv/bin/python bench/bench_history.py [--size N] [--before TREE]

On a conversation of `--size` messages (bench_sessions' shapes) it times, in this process (the
best of several runs): `turn_history` (once per turn), the executor's repair before a model
call (the first of a turn walks everything; later ones only what the turn added), the token
estimate's walk, and what a session's compactor spends on two calls (`before_call` and
`observe` each). `--before TREE` times the same code from another source tree (e.g. the
working tree with a change undone) in the same process, for a before/after table.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def _load(tree: str | None) -> dict[str, ModuleType]:
    """Import the modules timed, from `tree` (None: the installed aimon)."""
    for name in [n for n in sys.modules if n.startswith(("aimon_core", "aimon_cli"))]:
        del sys.modules[name]
    if tree:
        sys.path.insert(0, tree)
    try:
        return {short: importlib.import_module(f"aimon_core.{name}") for short, name in (
            ("transcript", "agent._transcript"), ("history", "live._history"),
            ("compact", "compact"), ("llm", "llm"))}
    finally:
        if tree:
            sys.path.remove(tree)


def _best(run: Callable[[], Any], times: int = 15) -> float:
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        run()
        spent.append(time.perf_counter() - started)
    return min(spent) * 1000


def measure(tree: str | None, size: int) -> dict[str, float]:
    """Return the milliseconds of each walk, for the code in `tree`."""
    m = _load(tree)
    llm, transcript = m["llm"], m["transcript"]
    # The messages are built from the tree's own classes (code that checks exact types would
    # see none of its own in another tree's values).
    sessions = importlib.reload(importlib.import_module("bench_sessions"))
    history = tuple(sessions.conversation(size))
    prompt = llm.Message.user("go on")
    tool = llm.ToolDefinition(name="Read", description="Read a file. " * 20,
                              input_schema={"type": "object", "properties": {}})
    first = llm.LLMRequest(model="claude-sonnet-5-5", system="sys " * 500,
                           messages=(*history, prompt), tools=(tool,) * 10)
    later = llm.LLMRequest(model=first.model, system=first.system, tools=first.tools,
                           messages=(*first.messages, llm.Message(
                               role="assistant", content=(llm.TextBlock(text="ok"),)),
                               llm.Message.user("more")))

    def compactor_two_calls() -> None:
        compactor = m["compact"].SessionCompactor(client=llm.ScriptedLLMClient([]),
                                                  model=first.model)
        for request in (first, later):
            asyncio.run(compactor.before_call(request))
            compactor.observe(request, llm.Usage(input_tokens=1000))

    if hasattr(transcript, "TranscriptRepair"):
        repair = transcript.TranscriptRepair()
        repair(first.messages)

        def later_repair() -> None:
            repair(first.messages)
            repair(later.messages)
        later_ms = _best(later_repair) / 2
    else:
        later_ms = _best(lambda: transcript.repair_tool_pairs(later.messages))
    return {
        "turn_history (once a turn)": _best(lambda: m["history"].turn_history(history, prompt)),
        "executor repair, a turn's first call (whole walk)":
            _best(lambda: transcript.repair_tool_pairs(first.messages)),
        "executor repair, a later call (+2 messages)": later_ms,
        "token estimate, whole walk": _best(lambda: m["compact"].messages_tokens(history)),
        "compactor, two calls (before_call + observe each)": _best(compactor_two_calls, 7),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--before", help="a source tree to compare, timed in this process")
    args = parser.parse_args()
    after = measure(None, args.size)
    before = measure(args.before, args.size) if args.before else None
    print(f"| {args.size:,} messages (best of 7-15) | " + ("before | " if before else "")
          + "after |")
    print("|---|" + ("---|" if before else "") + "---|")
    for what, ms in after.items():
        was = f"{before[what]:.1f} ms | " if before else ""
        print(f"| {what} | {was}{ms:.2f} ms |")


if __name__ == "__main__":
    main()
