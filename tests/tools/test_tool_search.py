"""Lazy tool schemas: past a share of the window MCP tools go without theirs; ToolSearch
loads them, and the tool list sent stays the same from one request to the next."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from aimon_core.agent import ExecutionRequest, OrcaExecutor, Turn, allow_all
from aimon_core.llm import Message, ToolResultBlock, reply, script
from aimon_core.runtime import RuntimeParts, build_runtime
from aimon_core.tools import (
    TOOL_SEARCH,
    Tool,
    ToolContext,
    ToolInput,
    ToolRegistry,
    ToolResult,
    builtin_tools,
    schema_tokens,
    tool_search_tool,
)
from tests.agent.test_executor import ENV, make_runtime


def mcp_tool(index: int) -> Tool:
    async def run(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        return ToolResult.ok(f"issue {tool_input.string('repo')}#{tool_input.integer('n')}")

    props = {f"option_{k}": {"type": "string", "description": f"what option {k} of tool "
                                                            f"{index} does, at length"}
             for k in range(8)}
    props |= {"repo": {"type": "string"}, "n": {"type": "integer"}}
    return Tool(name=f"mcp__tracker__tool_{index}", run=run,
                description=f"Tracker tool {index}: open issue number n of a repo.\nMore.",
                input_schema={"type": "object", "properties": props, "required": ["repo", "n"],
                              "additionalProperties": False})


def registry(count: int, budget: int | None) -> ToolRegistry:
    tools = ToolRegistry([*builtin_tools(), *(mcp_tool(i) for i in range(count))])
    tools.schema_budget = budget
    tools.add(tool_search_tool(tools))
    return tools


def test_within_budget_every_schema_is_sent_and_no_tool_search(tmp_path: Path) -> None:
    tools = registry(3, budget=100_000)
    sent = tools.definitions()
    assert TOOL_SEARCH not in [d.name for d in sent]
    assert all(d.input_schema == tools.get(d.name).input_schema for d in sent)  # type: ignore[union-attr]


def test_past_the_budget_mcp_tools_go_by_name_and_one_line() -> None:
    tools = registry(100, budget=10_000)
    sent = {d.name: d for d in tools.definitions()}
    full = schema_tokens([t.definition for t in tools if t.name != TOOL_SEARCH])
    assert full > 10_000 > schema_tokens(list(sent.values()))
    short = sent["mcp__tracker__tool_7"]
    assert short.input_schema == {"type": "object", "additionalProperties": True}
    assert short.description.startswith("Tracker tool 7: open issue number n of a repo. (schema")
    assert sent["Bash"].input_schema == tools.get("Bash").input_schema  # type: ignore[union-attr]
    assert TOOL_SEARCH in sent
    assert tools.definitions() is tools.definitions()  # the same tuple until tools change
    tools.remove("mcp__tracker__tool_0")
    assert "mcp__tracker__tool_0" not in {d.name for d in tools.definitions()}


@pytest.mark.parametrize(("query", "names"), [
    ("select:mcp__tracker__tool_3,mcp__tracker__tool_9", ["mcp__tracker__tool_3",
                                                        "mcp__tracker__tool_9"]),
    ("select:Bash", []),  # only tools whose schema may be left out
    ("tool 42 issue", ["mcp__tracker__tool_42"]),
])
def test_tool_search_loads_full_schemas(query: str, names: list[str], tmp_path: Path) -> None:
    tools = registry(50, budget=1)
    search = tools.get(TOOL_SEARCH)
    assert search is not None and search.read_only
    result = asyncio.run(search.run(ToolInput({"query": query, "max_results": 1 + len(names)}),
                                    None))  # type: ignore[arg-type]
    if not names:
        assert result.is_error and "No tool matches" in result.text
        return
    loaded = [line.split("'")[1] for line in result.text.splitlines()
              if line.startswith("<tool name=")]
    assert loaded[:len(names)] == names
    assert json.dumps(tools.get(names[0]).input_schema, sort_keys=True) in result.text  # type: ignore[union-attr]


def test_a_run_loads_then_calls_and_the_tool_list_never_changes(tmp_path: Path,
                                                                 ctx: ToolContext) -> None:
    tools = registry(100, budget=10_000)
    client = script(
        reply("", (TOOL_SEARCH, {"query": "select:mcp__tracker__tool_5"})),
        reply("", ("mcp__tracker__tool_5", {"repo": "aimon"})),          # misses n: refused
        reply("", ("mcp__tracker__tool_5", {"repo": "aimon", "n": 34})),
        reply("Issue 34 is open."))
    runtime = make_runtime(client, *tools, gate=allow_all)
    runtime.tools.schema_budget = 10_000
    runtime.tools.remove(TOOL_SEARCH)
    runtime.tools.add(tool_search_tool(runtime.tools))

    async def main() -> Any:
        return await OrcaExecutor().execute(runtime, ExecutionRequest(
            prompt=Message.user("what is issue 34?"), tool_context=ctx, environment=ENV,
            turn=Turn()))

    result = asyncio.run(main())
    assert result.text == "Issue 34 is open."
    sent = [request.tools for request in client.requests]
    assert all(tools_sent is sent[0] for tools_sent in sent)  # the cache prefix holds
    answers = [b for m in result.new_messages for b in m.content
               if isinstance(b, ToolResultBlock)]
    assert "Input schema:" in answers[0].text
    assert answers[1].is_error and "'n' is a required property" in answers[1].text
    assert answers[2].text == "issue aimon#34"


@pytest.mark.parametrize(("share", "searchable"), [(None, True), (0.5, True), (1, False)])
def test_the_setting(tmp_path: Path, share: float | None, searchable: bool) -> None:
    if share is not None:
        (tmp_path / ".aimon").mkdir()
        (tmp_path / ".aimon" / "settings.json").write_text(
            json.dumps({"tools": {"searchThreshold": share}}))
    assembly = build_runtime(tmp_path, parts=RuntimeParts(client=script(), model="claude-x"))
    tools = assembly.runtime.tools
    assert (TOOL_SEARCH in tools) is searchable
    # A few tools fit any budget: nothing is deferred, ToolSearch is not sent.
    assert TOOL_SEARCH not in [d.name for d in tools.definitions()]
