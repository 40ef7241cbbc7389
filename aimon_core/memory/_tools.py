"""Remember and MemorySearch: the model's side of memory, and the `memory` context block."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from aimon_core.memory._book import MemoryBook
from aimon_core.memory._store import MemoryScope, MemorySource
from aimon_core.tools import StaticToolProvider, Tool, ToolContext, ToolInput, ToolResult

MEMORY_TOOL_NAMES = ("Remember", "MemorySearch")

_SCOPES = [s.value for s in MemoryScope]

REMEMBER_DESCRIPTION = """\
Propose something to remember in later sessions: a fact about this project, a preference \
of the user, a lesson learned. The user reviews every proposal; it is used only once they \
accept it (until then it is not in any prompt). Keep it to one short, self-contained \
sentence. scope: "project" (this project, the default), "user" (everywhere this user works), \
"agent" (this agent, in every project)."""

SEARCH_DESCRIPTION = """\
Search what the user accepted to remember (every scope) by words; returns the best matches. \
Memory that fits is already in your context; use this to find the rest."""


def memory_tools(book: MemoryBook) -> StaticToolProvider:
    """Return the provider of Remember and MemorySearch for `book`."""

    async def remember(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        text = tool_input.string("text")
        scope = MemoryScope(tool_input.opt_string("scope") or "project")
        try:
            entry = await asyncio.to_thread(book.propose, text, scope, MemorySource.MODEL)
        except ValueError as exc:
            return ToolResult.error(str(exc))
        except OSError as exc:
            return ToolResult.error(f"memory not stored: {exc}", exc)
        return ToolResult.ok(
            f"Proposed as {entry.id} ({scope.value}). It waits for the user's review "
            "(/memory) and is not used until they accept it.", id=entry.id)

    async def search(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        query = tool_input.string("query")
        limit = tool_input.integer("limit", 10) or 10
        found = await asyncio.to_thread(book.search, query, limit)
        if not found:
            return ToolResult.ok(f"No remembered note matches {query!r}.")
        return ToolResult.ok("\n".join(f"- [{o.id}] ({o.scope.value}) {o.text}" for o in found))

    schema: dict[str, Any] = {
        "type": "object", "additionalProperties": False, "required": ["text"],
        "properties": {"text": {"type": "string", "description": "what to remember"},
                       "scope": {"type": "string", "enum": _SCOPES}}}
    search_schema: dict[str, Any] = {
        "type": "object", "additionalProperties": False, "required": ["query"],
        "properties": {"query": {"type": "string"},
                       "limit": {"type": "integer", "minimum": 1, "maximum": 50}}}
    return StaticToolProvider("memory", (
        Tool(name="Remember", description=REMEMBER_DESCRIPTION, input_schema=schema,
             run=remember),
        Tool(name="MemorySearch", description=SEARCH_DESCRIPTION, input_schema=search_schema,
             run=search, read_only=True),
    ))


@dataclass(frozen=True, slots=True)
class MemoryProvider:
    """The `memory` context block: accepted memory that fits, in every prompt."""

    book: MemoryBook
    name: str = "memory"

    def read(self, ctx: ToolContext) -> str | None:
        """Return the accepted memory, or None when there is none."""
        return self.book.prompt_text()
