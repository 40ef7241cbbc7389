"""ToolSearch and lazy tool schemas (the seeds' lazy loading).

Many MCP servers can bring hundreds of tools whose schemas take a large share of the
context in every request. Past a share of the window (settings `tools.searchThreshold`,
default 10 %), MCP tools are sent with their name and one line only; the model loads a full
schema with ToolSearch, whose answer is a tool result: it joins the conversation at its end.
The tool list itself does not change from one request to the next, so the provider's prompt
cache (tools, then system prompt, then messages) stays warm.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from aimon_core.llm import ToolDefinition
from aimon_core.tools._names import is_mcp_name

if TYPE_CHECKING:
    from aimon_core.tools._base import Tool, ToolContext, ToolInput, ToolRegistry, ToolResult

TOOL_SEARCH = "ToolSearch"
DEFAULT_SHARE = 0.1
MAX_RESULTS = 5
_ANY_INPUT = {"type": "object", "additionalProperties": True}
_WORD = re.compile(r"[a-z0-9]+")

DESCRIPTION = """\
Load the full schema of tools whose schema was not sent (their description ends with \
"schema not loaded"). Call it before calling such a tool.

- "select:NAME1,NAME2" loads those tools by exact name.
- Other text searches the names and descriptions of those tools; the best matches are loaded.

Each loaded tool comes back with its description and its JSON input schema; call the tool \
with input that follows that schema."""

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": 'Keywords, or "select:NAME,NAME".'},
        "max_results": {"type": "integer", "minimum": 1, "maximum": 20,
                        "description": f"How many tools to load (default {MAX_RESULTS})."},
    },
    "required": ["query"],
    "additionalProperties": False,
}


def deferrable(tool: Tool) -> bool:
    """Tell whether a tool's schema may be left out (MCP tools, as Claude Code defers them)."""
    return is_mcp_name(tool.name)


def schema_tokens(definitions: Sequence[ToolDefinition]) -> int:
    """Return about how many tokens the definitions take (~4 characters a token)."""
    chars = sum(len(d.name) + len(d.description) + len(json.dumps(d.input_schema))
                for d in definitions)
    return (chars + 3) // 4


def short_definition(tool: Tool) -> ToolDefinition:
    """Return a tool's definition without its schema: its name and first line."""
    first = next((line.strip() for line in tool.description.splitlines() if line.strip()), "")
    first = first if len(first) <= 160 else first[:157] + "..."
    return ToolDefinition(name=tool.name, input_schema=_ANY_INPUT,
                          description=f"{first} (schema not loaded: ToolSearch "
                                      f"\"select:{tool.name}\" loads it)")


def sent_definitions(tools: Sequence[Tool], budget: int | None) -> tuple[ToolDefinition, ...]:
    """Return what the model is sent: every schema while they fit `budget` tokens (ToolSearch
    left out); past it, deferrable tools' short definitions and ToolSearch."""
    full = tuple(t.definition for t in tools if t.name != TOOL_SEARCH)
    searchable = any(t.name == TOOL_SEARCH for t in tools)
    if budget is None or not searchable or schema_tokens(full) <= budget:
        return full
    return tuple(short_definition(t) if deferrable(t) else t.definition for t in tools)


def _matches(query: str, deferred: Sequence[Tool], limit: int) -> list[Tool]:
    if query.startswith("select:"):
        wanted = [name.strip() for name in query.removeprefix("select:").split(",")]
        by_name = {t.name: t for t in deferred}
        return [by_name[name] for name in wanted if name in by_name]
    words = set(_WORD.findall(query.lower()))
    scored = []
    for index, tool in enumerate(deferred):
        name_words = set(_WORD.findall(tool.name.lower()))
        text_words = set(_WORD.findall(tool.description.lower()))
        score = 3 * len(words & name_words) + len(words & text_words)
        if score:
            scored.append((-score, index, tool))
    return [tool for _, _, tool in sorted(scored)[:limit]]


def tool_search_tool(registry: ToolRegistry) -> Tool:
    """Return the ToolSearch tool over `registry`'s deferrable tools."""
    from aimon_core.tools._base import Tool, ToolResult

    async def run(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        query = tool_input.string("query").strip()
        limit = tool_input.integer("max_results", MAX_RESULTS) or MAX_RESULTS
        deferred = [t for t in registry if deferrable(t)]
        found = _matches(query, deferred, limit)
        if not found:
            names = ", ".join(t.name for t in deferred[:20]) or "none"
            return ToolResult.error(f"No tool matches {query!r}. Tools to load: {names}.")
        parts = [f"<tool name={t.name!r}>\n{t.description}\nInput schema: "
                 f"{json.dumps(t.input_schema, sort_keys=True)}\n</tool>" for t in found]
        return ToolResult.ok("\n".join(parts))

    return Tool(name=TOOL_SEARCH, description=DESCRIPTION, input_schema=SCHEMA, run=run,
                read_only=True)
