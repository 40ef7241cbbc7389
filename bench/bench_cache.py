"""Benchmark prompt caching over a 30-iteration turn, and what a compaction costs in time.

Run:  .venv/bin/python bench/bench_cache.py
Prints Markdown tables. Not a test; see docs/PERFORMANCE.md.

The loopback server does not cache, so the cache is simulated from the recorded request
bodies the way the Anthropic API documents it: the prompt is the sequence tools → system →
message blocks; a `cache_control` breakpoint writes the prefix ending at its block (if the
prefix has at least 1,024 tokens); a request reads the longest cached prefix ending at one
of its breakpoints or at most 20 blocks before one; what lies after the last breakpoint is
plain input. Tokens are estimated as JSON characters / 4.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aimon_core.testing import LoopbackModelServer, RecordedRequest, Reply, ScriptedToolCall

AIMON = str(Path(sys.executable).with_name("aimon"))
ITERATIONS = 30
PARALLEL_AT = (10, 20)  # iterations that read 12 files at once (24 new blocks)
PARALLEL_READS = 12
LOOKBACK_BLOCKS = 20
MIN_CACHEABLE = 1_024
READ_PRICE, WRITE_PRICE = 0.1, 1.25  # of the input price: cache read, 5-minute cache write

Body = Mapping[str, Any]


# --- the turn ------------------------------------------------------------------------------


def responder(files: int, width: int) -> Callable[[RecordedRequest], Reply]:
    """A model that reads files for ITERATIONS - 1 iterations, `width` at once in iterations
    PARALLEL_AT, then answers."""

    def respond(request: RecordedRequest) -> Reply:
        messages = request.body["messages"]
        start = max(i for i, m in enumerate(messages) if m["role"] == "user" and not any(
            b.get("type") == "tool_result" for b in _blocks(m) if isinstance(b, dict)))
        done = sum(1 for m in messages[start:] if m["role"] == "assistant")
        if done >= ITERATIONS - 1:
            return Reply(text="All files read; the parser is in src/f07.py.")
        if done + 1 in PARALLEL_AT:
            paths = [f"src/f{(done + n) % files:02d}.py" for n in range(width)]
        else:
            paths = [f"src/f{done % files:02d}.py"]
        calls = tuple(ScriptedToolCall(name="Read", input={"file_path": p}) for p in paths)
        return Reply(text="Reading.", tool_calls=calls)

    return respond


def record_turns(width: int) -> tuple[list[Body], list[Body]]:
    """Run two 30-iteration `aimon -p` turns (the second with -c) against the loopback server;
    return the request bodies of each."""
    files = 40
    server = LoopbackModelServer(responder(files, width))
    with server, tempfile.TemporaryDirectory() as cwd:
        src = Path(cwd, "src")
        src.mkdir()
        for n in range(files):  # ~3 KB source files, ~750 tokens each
            lines = [f"def function_{n}_{i}(value):\n    return value * {i} + {n}\n"
                     for i in range(60)]
            (src / f"f{n:02d}.py").write_text("".join(lines))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
        env.update(ANTHROPIC_API_KEY="bench", ANTHROPIC_BASE_URL=server.base_url,
                   AIMON_NO_LOCAL_PROBE="1", AIMON_HOME=str(Path(cwd, ".home")))
        args = [AIMON, "--provider", "anthropic", "--model", "claude-sonnet-5-5", "-p",
                "--max-iterations", str(ITERATIONS + 5)]
        for extra in (["Read the sources and find the parser."], ["-c", "Now find the lexer."]):
            done = subprocess.run([*args, *extra], env=env, cwd=cwd, capture_output=True,
                                  text=True, check=False)
            if done.returncode != 0:
                raise SystemExit(f"aimon failed ({done.returncode}): {done.stderr}")
        bodies = [r.body for r in server.requests if r.provider == "anthropic"]
    if len(bodies) != 2 * ITERATIONS:
        raise SystemExit(f"expected {2 * ITERATIONS} model calls, saw {len(bodies)}")
    return bodies[:ITERATIONS], bodies[ITERATIONS:]


# --- the simulated cache -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Prompt:
    """A request as the cache sees it: prefix keys, prefix token counts, breakpoints."""

    keys: list[str]
    prefix_tokens: list[int]
    breakpoints: list[int]

    @property
    def total(self) -> int:
        return self.prefix_tokens[-1]


def flatten(body: Body) -> list[tuple[dict[str, Any], bool]]:
    """Return the prompt's blocks in cache order, each with whether it is a breakpoint."""
    blocks: list[dict[str, Any]] = [dict(t) for t in body.get("tools", [])]
    system = body.get("system", [])
    blocks += [{"type": "text", "text": system}] if isinstance(system, str) else list(system)
    for message in body["messages"]:
        content = message["content"]
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks += [{"role": message["role"], "first": i == 0, **b} for i, b in enumerate(parts)]
    return [({k: v for k, v in b.items() if k != "cache_control"}, "cache_control" in b)
            for b in blocks]


def prompt_of(body: Body, keep: Callable[[int, int], bool]) -> Prompt:
    """Return the cache view of `body`; `keep(position, count)` filters its breakpoints."""
    keys, sizes, marks = [], [], []
    digest, total = hashlib.sha256(), 0
    flat = flatten(body)
    for position, (block, marked) in enumerate(flat):
        text = json.dumps(block, sort_keys=True, ensure_ascii=False)
        digest.update(text.encode())
        keys.append(digest.copy().hexdigest())
        total += (len(text) + 3) // 4
        sizes.append(total)
        if marked and keep(position, len(flat)):
            marks.append(position)
    return Prompt(keys=keys, prefix_tokens=sizes, breakpoints=marks)


@dataclass(slots=True)
class Tally:
    read: int = 0
    written: int = 0
    plain: int = 0

    @property
    def total(self) -> int:
        return self.read + self.written + self.plain

    @property
    def share(self) -> float:
        return self.read / self.total

    @property
    def billed(self) -> float:
        return self.plain + self.written * WRITE_PRICE + self.read * READ_PRICE


def simulate(prompts: Sequence[Prompt]) -> list[Tally]:
    """Run the requests through the documented cache rules; return each one's tally."""
    cache: set[str] = set()
    tallies = []
    for p in prompts:
        hit = -1
        for b in p.breakpoints:
            for pos in range(b, max(-1, b - LOOKBACK_BLOCKS - 1), -1):
                if p.keys[pos] in cache:
                    hit = max(hit, pos)
                    break
        read = p.prefix_tokens[hit] if hit >= 0 else 0
        last = p.breakpoints[-1] if p.breakpoints else -1
        cached_end = p.prefix_tokens[last] if last >= 0 else 0
        written = max(0, cached_end - read) if cached_end >= MIN_CACHEABLE else 0
        for b in p.breakpoints:
            if p.prefix_tokens[b] >= MIN_CACHEABLE:
                cache.add(p.keys[b])
        tallies.append(Tally(read=read, written=written, plain=p.total - read - written))
    return tallies


def summed(tallies: Sequence[Tally]) -> Tally:
    return Tally(read=sum(t.read for t in tallies), written=sum(t.written for t in tallies),
                 plain=sum(t.plain for t in tallies))


def floor(prompts: Sequence[Prompt]) -> list[Tally]:
    """The best any placement can do: each request reads all it shares with the one before."""
    tallies = []
    previous: Prompt | None = None
    for p in prompts:
        common = 0
        if previous is not None:
            while (common < min(len(p.keys), len(previous.keys))
                   and p.keys[common] == previous.keys[common]):
                common += 1
        read = p.prefix_tokens[common - 1] if common else 0
        tallies.append(Tally(read=read, written=p.total - read))
        previous = p
    return tallies


def newest_only(body: Body) -> Callable[[int, int], bool]:
    """The placement before this change: tools, system, and the newest message only."""
    start = len(flatten(body)) - len(_blocks(body["messages"][-1]))
    head = len(body.get("tools", [])) + len(_blocks({"content": body.get("system", [])}))
    return lambda position, _count: position < head or position >= start


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message["content"]
    return [content] if isinstance(content, str) else list(content)


def cache_rows(turns: Sequence[Sequence[Body]]) -> list[tuple[str, ...]]:
    """Return one row per placement: the share read from the cache in each turn, and more."""
    bodies = [b for turn in turns for b in turn]
    recorded = [prompt_of(b, lambda _p, _c: True) for b in bodies]
    before = [prompt_of(b, newest_only(b)) for b in bodies]
    first = len(turns[0])

    def row(label: str, tallies: list[Tally]) -> tuple[str, ...]:
        one, two = summed(tallies[:first]), summed(tallies[first:])
        return (label, f"{one.share:.1%}", f"{two.share:.1%}",
                f"{one.written + one.plain:,} / {two.written + two.plain:,}",
                f"{one.billed:,.0f} / {two.billed:,.0f}")

    totals = [sum(p.total for p in recorded[:first]), sum(p.total for p in recorded[first:])]
    return [
        row("newest message only (before)", simulate(before)),
        row("+ end of the previous request (now)", simulate(recorded)),
        row("floor: each request reads all of the one before", floor(recorded)),
        ("no caching", "0.0%", "0.0%", f"{totals[0]:,} / {totals[1]:,}",
         f"{totals[0]:,} / {totals[1]:,}"),
    ]


def floor_parts(turn: Sequence[Body]) -> tuple[int, int, int]:
    """Return (first request, new messages of the later requests, all input) in tokens."""
    prompts = [prompt_of(b, lambda _p, _c: True) for b in turn]
    tallies = floor(prompts)
    return tallies[0].total, sum(t.total - t.read for t in tallies[1:]), summed(tallies).total


# --- compaction time -----------------------------------------------------------------------


def compaction_rows(runs: int) -> list[tuple[str, str]]:
    """Time the estimate before each call and a compaction, scripted and over loopback HTTP."""
    from aimon_core.compact import CompactionSettings, compact, estimate_request_tokens
    from aimon_core.llm import AnthropicClient, LLMRequest, reply, script

    messages = _long_transcript(turns=60)  # ~160k tokens
    request = LLMRequest(model="claude-sonnet-5-5", system="s" * 40_000, messages=messages)
    tokens = estimate_request_tokens(request)
    settings = CompactionSettings()

    def timed(run: Callable[[], object], repeat: int) -> float:
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            run()
            times.append((time.perf_counter() - started) * 1000)
        return statistics.median(times)

    estimate_ms = timed(lambda: estimate_request_tokens(request), runs * 10)
    scripted_ms = timed(lambda: asyncio.run(compact(
        messages, client=script(reply("GOAL: ...")), model="claude-sonnet-5-5", window=200_000,
        settings=settings)), runs)

    async def over_http(server: LoopbackModelServer) -> None:
        client = AnthropicClient(api_key="bench", base_url=server.base_url)
        try:
            await compact(messages, client=client, model="claude-sonnet-5-5", window=200_000,
                          settings=settings)
        finally:
            await client.aclose()

    with LoopbackModelServer(lambda _: Reply(text="GOAL: ... " * 200)) as server:
        asyncio.run(over_http(server))  # warm the SDK import
        http_ms = timed(lambda: asyncio.run(over_http(server)), runs)
        sent = len(json.dumps(server.requests[-1].body))
    return [
        (f"estimate a {tokens:,}-token request (before every model call)",
         f"{estimate_ms:.2f} ms"),
        (f"compact {len(messages)} messages, scripted model (engine only)",
         f"{scripted_ms:.1f} ms"),
        (f"compact over loopback HTTP, real SDK ({sent // 1024:,} KB summary request)",
         f"{http_ms:.1f} ms"),
    ]


def _long_transcript(turns: int) -> tuple[Any, ...]:
    from aimon_core.llm import Message, TextBlock, ToolResultBlock, ToolUseBlock

    messages: list[Message] = []
    for turn in range(turns):
        messages.append(Message.user(f"Task {turn}: change module {turn}."))
        for n in range(3):
            use = ToolUseBlock(id=f"t{turn}_{n}", name="Read",
                               input={"file_path": f"/repo/m{turn}_{n}.py"})
            body = "".join(f"{i:4d}\tdef f{i}(x): return x + {i}\n" for i in range(100))
            messages.append(Message(role="assistant", content=(use,)))
            messages.append(Message(role="user", content=(
                ToolResultBlock(tool_use_id=use.id, content=(TextBlock(text=body),)),)))
        messages.append(Message(role="assistant", content=(TextBlock(text=f"Done {turn}."),)))
    return tuple(messages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--width", type=int, default=PARALLEL_READS,
                        help="files read at once in the wide iterations (1: no wide batch)")
    args = parser.parse_args()
    turns = record_turns(args.width)
    print(f"Prompt caching, two {ITERATIONS}-iteration `aimon -p` turns (the second with -c; "
          f"Read calls; iterations {' and '.join(map(str, PARALLEL_AT))} of each turn read "
          f"{args.width} files at once):\n")
    print("| breakpoints | read from cache, turn 1 | turn 2 | input not read, turn 1 / 2 "
          "| billed, input-token equivalents, turn 1 / 2 |")
    print("|---|---|---|---|---|")
    for row in cache_rows(turns):
        print("| " + " | ".join(row) + " |")
    first, new, total = floor_parts(turns[0])
    print(f"\nThe floor of turn 1: {first:,} tokens of its first request (system prompt, tools, "
          f"prompt: never sent before) + {new:,} tokens of new messages in requests 2-"
          f"{ITERATIONS} (each request's previous answer and tool results) = "
          f"{(first + new) / total:.1%} of {total:,} input tokens.")
    print("\nCompaction time (median of runs):\n")
    print("| what | time |")
    print("|---|---|")
    for what, value in compaction_rows(args.runs):
        print(f"| {what} | {value} |")


if __name__ == "__main__":
    main()
