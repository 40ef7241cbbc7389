"""Benchmark the time an automatic compaction adds to a turn.

Run:  .venv/bin/python bench/bench_compaction.py [--runs 3]
Prints Markdown tables. Not a test; see docs/PERFORMANCE.md.

1. In process: a LiveSession on the file store, the scripted model (answering at once, usage
   equal to the estimate), a tool returning ~2k tokens per iteration. The iterations that
   compact are timed against those that do not: the difference is what aimon itself adds
   (plan, render, rebuild, the snapshot written with fsync, the side state), not the model.
2. End to end: one `aimon -p` process, 200 iterations in a 20k-token window over the loopback
   server (the real Anthropic SDK); wall time, compactions, and the summary calls' share.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aimon_core.agent import (
    AgentRuntime,
    AssistantMessageCompleted,
    Compacted,
    Environment,
    IterationStarted,
    allow_all,
    parse_agent,
)
from aimon_core.compact import CompactionSettings, estimate_request_tokens
from aimon_core.filesystem import LocalFileSystem
from aimon_core.live import LiveSession
from aimon_core.llm import LLMRequest, LLMResponse, ScriptedLLMClient, Usage, reply
from aimon_core.session import FileSessionLeaseStore, FileSessionRecordStore, SessionStore
from aimon_core.shell import LocalShell
from aimon_core.testing import LoopbackModelServer, RecordedRequest, Reply, ScriptedToolCall
from aimon_core.tools import Tool, ToolContext, ToolInput, ToolRegistry, ToolResult
from aimon_core.tools._state import ToolState

AIMON = str(Path(sys.executable).with_name("aimon"))
ITERATIONS = 200
RESULT_CHARS = 8_000  # ~2k tokens a tool result


async def _big(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
    return ToolResult.ok(f"{tool_input.integer('n')}:" + "r" * RESULT_CHARS)


BIG = Tool(name="Big", description="Big", run=_big, read_only=True,
           input_schema={"type": "object", "properties": {"n": {"type": "integer"}}})


def _step(counter: list[int]) -> Any:
    def step(request: LLMRequest) -> LLMResponse:
        usage = Usage(input_tokens=estimate_request_tokens(request), output_tokens=20)
        if request.metadata.get("purpose") == "compaction":
            return dataclasses.replace(reply("SUMMARY " + "s" * 4_000), usage=usage)
        counter[0] += 1
        if counter[0] > ITERATIONS:
            return dataclasses.replace(reply("done"), usage=usage)
        return dataclasses.replace(reply("", ("Big", {"n": counter[0]})), usage=usage)

    return step


async def _in_process(window: int, folder: Path) -> tuple[list[float], list[float]]:
    """Return the durations of iterations without and with a compaction (seconds)."""
    client = ScriptedLLMClient(steps=[_step([0])] * (ITERATIONS * 2))
    agent = parse_agent(f"---\nname: bench\nmaxIterations: {ITERATIONS + 5}\n---\nBench.\n")
    runtime = AgentRuntime(agent=agent, client=client, model="scripted", gate=allow_all,
                           tools=ToolRegistry([BIG]))
    base = folder / "data"
    store = SessionStore(FileSessionRecordStore(base), FileSessionLeaseStore(base))
    project = folder / "proj"
    project.mkdir(exist_ok=True)
    ctx = ToolContext(project_root=project, cwd=project, fs=LocalFileSystem(project),
                      shell=LocalShell(), state=ToolState())
    live = await LiveSession.open(
        runtime, store, ctx, environment=Environment(cwd=project, platform="bench", date="-"),
        compaction=CompactionSettings(window_override=window))
    plain: list[float] = []
    compacting: list[float] = []
    state: dict[str, Any] = {"start": 0.0, "compacted": False}

    def on_event(event: object) -> None:
        match event:
            case IterationStarted():
                state["start"], state["compacted"] = time.perf_counter(), False
            case Compacted():
                state["compacted"] = True
            case AssistantMessageCompleted():
                took = time.perf_counter() - state["start"]
                (compacting if state["compacted"] else plain).append(took)
            case _:
                pass

    live.subscribe(on_event)
    await live.submit("go")
    await live.close()
    return plain, compacting


def in_process_rows(runs: int) -> list[tuple[str, ...]]:
    rows = []
    for window in (20_000, 200_000):
        plain: list[float] = []
        compacting: list[float] = []
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as folder:
                p, c = asyncio.run(_in_process(window, Path(folder)))
            plain += p
            compacting += c
        per_run = len(compacting) // runs
        base, with_c = statistics.median(plain), statistics.median(compacting)
        rows.append((f"{window:,}", str(per_run), f"{base * 1000:.2f} ms",
                     f"{with_c * 1000:.2f} ms", f"{(with_c - base) * 1000:.2f} ms"))
    return rows


def _responder(project: Path, sizes: list[tuple[bool, float]]) -> Any:
    calls = [0]

    def respond(request: RecordedRequest) -> Reply:
        tokens = len(json.dumps(request.body)) // 4
        system = request.body.get("system", "")
        text = system if isinstance(system, str) else " ".join(b.get("text", "") for b in system)
        if text.startswith("You write the working memory"):
            sizes.append((True, time.perf_counter()))
            return Reply(text="Summary: the files were read.", input_tokens=tokens)
        sizes.append((False, time.perf_counter()))
        calls[0] += 1
        if calls[0] > ITERATIONS:
            return Reply(text="done", input_tokens=tokens)
        path = str(project / f"f{calls[0] % 5}.txt")
        return Reply(tool_calls=(ScriptedToolCall(name="Read", input={"file_path": path}),),
                     input_tokens=tokens)

    return respond


def end_to_end_row() -> tuple[str, ...]:
    with tempfile.TemporaryDirectory() as folder:
        project = Path(folder) / "proj"
        (project / ".aimon").mkdir(parents=True)
        for n in range(5):
            (project / f"f{n}.txt").write_text(
                "".join(f"file {n} line {i}: {'x' * 40}\n" for i in range(80)))
        (project / ".aimon" / "settings.json").write_text(
            json.dumps({"compaction": {"contextWindow": 20_000}}))
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
        env["AIMON_HOME"] = str(Path(folder) / "home")
        marks: list[tuple[bool, float]] = []
        with LoopbackModelServer(_responder(project, marks)) as server:
            env.update(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=server.base_url,
                       AIMON_NO_LOCAL_PROBE="1")
            started = time.perf_counter()
            done = subprocess.run(
                [AIMON, "--model", "claude-sonnet-5-5", "-p", "go", "--max-iterations",
                 str(ITERATIONS + 5), "--output-format", "json"],
                cwd=project, env=env, capture_output=True, text=True, check=True)
            wall = time.perf_counter() - started
    result = json.loads(done.stdout)
    # A request's gap to the one before it is aimon's work between two calls; the gap before
    # a summary call plus the gap after it is one compacting iteration's extra work.
    gaps = [(marks[i][0], marks[i][1] - marks[i - 1][1]) for i in range(1, len(marks))]
    plain = [g for summary, g in gaps if not summary]
    summaries = sum(summary for summary, _ in marks)
    return (f"{wall:.1f} s", str(result["num_iterations"]), str(summaries),
            f"{statistics.median(plain) * 1000:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print("| window | compactions per turn | iteration, median | iteration that compacts, "
          "median | added by a compaction |")
    print("|---|---|---|---|---|")
    for row in in_process_rows(args.runs):
        print("| " + " | ".join(row) + " |")
    print()
    print("| `aimon -p` wall time | iterations | summary calls | gap between model calls, "
          "median |")
    print("|---|---|---|---|")
    print("| " + " | ".join(end_to_end_row()) + " |")


if __name__ == "__main__":
    main()
