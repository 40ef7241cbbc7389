"""Benchmark start-up, print-mode turns, per-iteration overhead and peak memory.

Run:  .venv/bin/python bench/bench_loop.py [--runs N]
Prints a Markdown table. Not a test: numbers depend on the machine; see docs/PERFORMANCE.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aimon_core.testing import (
    LoopbackModelServer,
    RecordedRequest,
    Reply,
    ScriptedToolCall,
    loads_script,
)

AIMON = str(Path(sys.executable).with_name("aimon"))


def run_child(args: list[str], env: dict[str, str], cwd: str) -> tuple[float, int, str]:
    """Run a command; return (wall seconds, peak RSS in MB, stderr)."""
    started = time.perf_counter()
    proc = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert proc.stderr is not None
    err = proc.stderr.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}): {err}")
    return wall, usage.ru_maxrss // 1024, err


def _results_so_far(request: RecordedRequest) -> int:
    """Count tool results in a request (Anthropic tool_result blocks or OpenAI tool messages)."""
    count = 0
    for message in request.body.get("messages", []):
        if message.get("role") == "tool":
            count += 1
        elif isinstance(message.get("content"), list):
            count += sum(1 for b in message["content"] if b.get("type") == "tool_result")
    return count


def glob_responder(calls: int) -> Any:
    """A model that calls Glob `calls` times (a different pattern each time), then answers."""

    def respond(request: RecordedRequest) -> Reply:
        done = _results_so_far(request)
        if done >= calls:
            return Reply(text="done")
        pattern = f"doc{done % 5}.md" if done % 2 else f"*{done % 7}.md"
        return Reply(tool_calls=(ScriptedToolCall(name="Glob", input={"pattern": pattern}),))

    return respond


def bench_version(runs: int) -> tuple[list[float], int]:
    times, peak = [], 0
    with tempfile.TemporaryDirectory() as cwd:
        for _ in range(runs):
            wall, rss, _ = run_child([AIMON, "--version"], dict(os.environ), cwd)
            times.append(wall)
            peak = max(peak, rss)
    return times, peak


def bench_turn(provider: str, tool_calls: int, runs: int) -> tuple[list[float], int]:
    times, peak = [], 0
    for _ in range(runs):
        responder: Any = glob_responder(tool_calls) if tool_calls else \
            loads_script([{"text": "done"}])
        with LoopbackModelServer(responder) as server, tempfile.TemporaryDirectory() as cwd:
            for i in range(5):
                Path(cwd, f"doc{i}.md").write_text("# doc\n")
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
            if provider == "anthropic":
                env.update(ANTHROPIC_API_KEY="bench", ANTHROPIC_BASE_URL=server.base_url)
                model = "claude-sonnet-5-5"
            else:
                env.update(OPENAI_API_KEY="bench", OPENAI_BASE_URL=server.openai_base_url)
                model = "gpt-5.4"
            args = [AIMON, "--provider", provider, "--model", model, "-p", "go",
                    "--max-iterations", str(tool_calls + 5)]
            wall, rss, _ = run_child(args, env, cwd)
            times.append(wall)
            peak = max(peak, rss)
            if len(server.requests) != tool_calls + 1:
                raise SystemExit(f"expected {tool_calls + 1} model calls, "
                                 f"saw {len(server.requests)}")
    return times, peak


def bench_executor_overhead(iterations: int) -> float:
    """Return ms per iteration of the loop itself: instant scripted model, no-op tool."""
    from aimon_core.agent import (
        AgentRuntime,
        Environment,
        ExecutionBudget,
        ExecutionRequest,
        OrcaExecutor,
        parse_agent,
    )
    from aimon_core.filesystem import LocalFileSystem
    from aimon_core.llm import Message, reply, script
    from aimon_core.shell import LocalShell
    from aimon_core.tools import Tool, ToolContext, ToolInput, ToolRegistry, ToolResult
    from aimon_core.tools._state import ToolState

    async def noop(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        return ToolResult.ok("ok")

    tool = Tool(name="Noop", description="does nothing",
                input_schema={"type": "object", "properties": {"n": {"type": "integer"}},
                              "additionalProperties": False}, run=noop, read_only=True)
    steps: list[Any] = [reply("", ("Noop", {"n": i})) for i in range(iterations)]
    steps.append(reply("done"))
    agent = parse_agent("---\nname: bench\n---\nBench.\n")
    runtime = AgentRuntime(agent=agent, client=script(*steps), model="bench",
                           tools=ToolRegistry([tool]))
    root = Path(tempfile.mkdtemp())
    ctx = ToolContext(project_root=root, cwd=root, fs=LocalFileSystem(root), shell=LocalShell(),
                      state=ToolState())
    env = Environment(cwd=root, platform="bench", date="2026-01-01")
    request = ExecutionRequest(prompt=Message.user("go"), tool_context=ctx, environment=env,
                               budget=ExecutionBudget(max_iterations=iterations + 2))
    # Warm up imports and the schema validator cache outside the measurement.
    warm = AgentRuntime(agent=agent, client=script(reply("", ("Noop", {"n": 0})), reply("x")),
                        model="bench", tools=ToolRegistry([tool]))
    asyncio.run(OrcaExecutor().execute(warm, request))
    started = time.perf_counter()
    result = asyncio.run(OrcaExecutor().execute(runtime, request))
    elapsed = time.perf_counter() - started
    assert result.iterations == iterations + 1, result
    return elapsed * 1000 / result.iterations


def bench_client_vs_sdk(calls: int = 30) -> list[tuple[str, float]]:
    """Return ms per streamed call: the bare SDKs against our clients, same loopback server."""
    import anthropic
    import openai

    from aimon_core.llm import AnthropicClient, LLMRequest, Message, OpenAIClient, collect

    async def per_call(run: Any) -> float:
        await run()  # warm the connection
        started = time.perf_counter()
        for _ in range(calls):
            await run()
        return (time.perf_counter() - started) * 1000 / calls

    async def measure(server: LoopbackModelServer) -> list[tuple[str, float]]:
        sdk_a = anthropic.AsyncAnthropic(api_key="b", base_url=server.base_url, max_retries=0)
        sdk_o = openai.AsyncOpenAI(api_key="b", base_url=server.openai_base_url, max_retries=0)
        ours_a = AnthropicClient(api_key="b", base_url=server.base_url)
        ours_o = OpenAIClient(api_key="b", base_url=server.openai_base_url)
        hi = [{"role": "user", "content": "hi"}]

        async def bare_a() -> None:
            stream = await sdk_a.messages.create(model="claude-sonnet-5-5", max_tokens=100,
                                                 messages=hi, stream=True)  # type: ignore[arg-type]
            async for _ in stream:
                pass

        async def bare_o() -> None:
            stream = await sdk_o.chat.completions.create(model="gpt-5.4", messages=hi,  # type: ignore[arg-type]
                                                         stream=True)
            async for _ in stream:
                pass

        def ours(client: Any, model: str) -> Any:
            request = LLMRequest(model=model, system="s", messages=(Message.user("hi"),))
            return lambda: collect(client.stream(request))

        rows = [("bare anthropic SDK, one streamed call", await per_call(bare_a)),
                ("aimon AnthropicClient, one streamed call",
                 await per_call(ours(ours_a, "claude-sonnet-5-5"))),
                ("bare openai SDK, one streamed call", await per_call(bare_o)),
                ("aimon OpenAIClient, one streamed call", await per_call(ours(ours_o, "gpt-5.4")))]
        await sdk_a.close()
        await sdk_o.close()
        await ours_a.aclose()
        await ours_o.aclose()
        return rows

    with LoopbackModelServer(lambda request: Reply(text="hello there")) as server:
        return asyncio.run(measure(server))


def fmt(times: list[float]) -> str:
    return f"{statistics.median(times) * 1000:.0f} ms (min {min(times) * 1000:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rows: list[tuple[str, str, str, str]] = []
    times, rss = bench_version(args.runs * 4)
    rows.append(("`aimon --version`", fmt(times), f"{rss} MB", "< 100 ms"))
    turns: dict[tuple[str, int], list[float]] = {}
    for provider in ("anthropic", "openai"):
        for calls in (0, 50):
            times, rss = bench_turn(provider, calls, args.runs)
            turns[(provider, calls)] = times
            what = "1 model call" if calls == 0 else f"{calls} tool calls ({calls + 1} model calls)"
            rows.append((f"`aimon -p` {provider}, {what}", fmt(times), f"{rss} MB", "RSS < 150 MB"))
    for provider in ("anthropic", "openai"):
        per = (statistics.median(turns[(provider, 50)]) - statistics.median(turns[(provider, 0)]))
        rows.append((f"per iteration incl. SDK + loopback HTTP + Glob, {provider}",
                     f"{per * 1000 / 50:.1f} ms", "", ""))
    for what, value in bench_client_vs_sdk():
        rows.append((what, f"{value:.1f} ms", "", ""))
    per_iteration = bench_executor_overhead(500)
    rows.append(("per-iteration framework overhead (executor, instant model, no-op tool)",
                 f"{per_iteration:.2f} ms", "", "< 5 ms"))
    print("| what | time | peak RSS | target |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
