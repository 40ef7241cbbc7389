"""Benchmark lazy tool schemas: a 30-iteration turn with 100 MCP-style tools, every schema
sent (searchThreshold 1) against names and one line (the default: ToolSearch loads schemas).

Run:  .venv/bin/python bench/bench_tool_search.py
Prints a Markdown table. Not a test; see docs/PERFORMANCE.md.

The turn runs in process through the library (`build_runtime`, the real Anthropic SDK)
against the loopback server; the 100 tools are library tools named as an MCP server's
(`mcp__tracker__...`), each with a ten-parameter schema; the model is claude-sonnet-4-5
(a 200k window). The recorded request bodies go
through bench_cache.py's replay of the Anthropic cache rules (tokens: JSON characters / 4).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_cache import ITERATIONS, Body, prompt_of, simulate, summed

from aimon_core import RuntimeParts, build_runtime
from aimon_core.testing import LoopbackModelServer, RecordedRequest, Reply, ScriptedToolCall
from aimon_core.tools import Tool, ToolContext, ToolInput, ToolResult

TOOLS = 100
# A 200k-token window: the default share (10 %) is 20k tokens, under these schemas' ~42k.
MODEL = "claude-sonnet-4-5"
USED = ("mcp__tracker__tool_7", "mcp__tracker__tool_42", "mcp__tracker__tool_77")


def tracker_tool(index: int) -> Tool:
    """One of an issue tracker's tools: ten described parameters, as MCP servers give them."""

    async def run(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        return ToolResult.ok(f"issue {tool_input.string('repo')}#{tool_input.integer('n')}: "
                             "open, 3 comments, last change 2 days ago")

    props: dict[str, Any] = {
        f"field_{k}": {"type": "string", "description": f"Filter {k} of the tracker's query "
                       "language: a label, an assignee, a milestone or a state, as text."}
        for k in range(8)}
    props |= {"repo": {"type": "string", "description": "owner/name of the repository"},
              "n": {"type": "integer", "description": "the issue number"}}
    return Tool(name=f"mcp__tracker__tool_{index}", run=run, read_only=True,
                description=f"Tracker operation {index}: read an issue of a repository with "
                            "its comments, labels and history.\nReturns text.",
                input_schema={"type": "object", "properties": props,
                              "required": ["repo", "n"], "additionalProperties": False})


def responder() -> Callable[[RecordedRequest], Reply]:
    """Load the three tools when their schemas were left out, then call them in turn."""

    def respond(request: RecordedRequest) -> Reply:
        done = sum(1 for m in request.body["messages"] if m["role"] == "assistant")
        if done >= ITERATIONS - 1:
            return Reply(text="Issues 7, 42 and 77 are open.")
        names = [t["name"] for t in request.body.get("tools", [])]
        if done == 0 and "ToolSearch" in names:
            return Reply(tool_calls=(ScriptedToolCall(
                name="ToolSearch", input={"query": "select:" + ",".join(USED)}),))
        return Reply(tool_calls=(ScriptedToolCall(
            name=USED[done % len(USED)], input={"repo": "me/app", "n": done}),))

    return respond


async def record(share: float) -> list[Body]:
    """Run the turn with `tools.searchThreshold` = `share`; return the request bodies."""
    server = LoopbackModelServer(responder())
    with server, tempfile.TemporaryDirectory() as cwd:
        root = Path(cwd)
        (root / ".aimon").mkdir()
        (root / ".aimon" / "settings.json").write_text(
            json.dumps({"tools": {"searchThreshold": share}}))
        os.environ.update(ANTHROPIC_API_KEY="bench", ANTHROPIC_BASE_URL=server.base_url,
                          AIMON_NO_LOCAL_PROBE="1", AIMON_HOME=str(root / ".home"),
                          AIMON_MODEL=MODEL)
        os.environ.pop("OPENAI_API_KEY", None)
        tools = tuple(tracker_tool(i) for i in range(TOOLS))
        agent = await asyncio.to_thread(build_runtime, root, parts=RuntimeParts(tools=tools))
        async with agent, await agent.open_session() as live:
            await live.submit("What do issues 7, 42 and 77 say?",
                              budget=live.budget().with_overrides(max_iterations=ITERATIONS + 5))
        return [r.body for r in server.requests if r.provider == "anthropic"]


def row(label: str, bodies: list[Body]) -> str:
    prompts = [prompt_of(body, lambda _p, _c: True) for body in bodies]
    tallies = simulate(prompts)
    total = summed(tallies)
    tools = statistics.mean(len(json.dumps(b.get("tools", []))) / 4 for b in bodies)
    per_request = total.total / len(bodies)
    return (f"| {label} | {len(bodies)} | {tools:,.0f} | {per_request:,.0f} | "
            f"{total.share:.1%} | {total.billed / len(bodies):,.0f} |")


async def main() -> None:
    before = await record(1.0)
    after = await record(0.1)
    print("| schemas | requests | tool tokens / request | input tokens / request | "
          "read from cache | billed / request |")
    print("|---|---|---|---|---|---|")
    print(row("all sent (searchThreshold 1: before)", before))
    print(row("names + one line, ToolSearch (default 0.1: after)", after))


if __name__ == "__main__":
    asyncio.run(main())
