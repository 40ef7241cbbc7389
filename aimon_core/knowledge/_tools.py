"""KnowledgeSearch: the model's way into the project's indexed documentation, notes and wiki."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from aimon_core.knowledge._base import KnowledgeBase
from aimon_core.knowledge._store import Passage
from aimon_core.tools import StaticToolProvider, Tool, ToolContext, ToolInput, ToolResult

KNOWLEDGE_TOOL_NAMES = ("KnowledgeSearch",)
_PASSAGE_CHARS = 1_500

SEARCH_DESCRIPTION = """\
Search the project's indexed documentation and notes (aimon knowledge add / index) and its \
wiki (.aimon/wiki/*.md) by words; returns passages with their source and line, best first. \
Read more around a hit with Read(source, offset=line). Keep what you learn for later \
sessions as short wiki pages: write .aimon/wiki/<topic>.md with Write or Edit (the user \
approves each change); pages are searchable as soon as they are written."""


class LazyKnowledge:
    """Opens a project's knowledge base at first use (no index file for a project that never
    searches), once, whichever session asks first."""

    def __init__(self, open_base: Callable[[], KnowledgeBase]) -> None:
        self._open = open_base
        self._base: KnowledgeBase | None = None
        self._lock = threading.Lock()

    def get(self) -> KnowledgeBase:
        """Return the knowledge base, opening it the first time."""
        with self._lock:
            if self._base is None:
                self._base = self._open()
            return self._base


def show(passage: Passage) -> str:
    """Return a passage as the model sees it: `source:line`, then its text."""
    text = passage.text if len(passage.text) <= _PASSAGE_CHARS else (
        passage.text[:_PASSAGE_CHARS] + "\n[...]")
    if passage.source.startswith(("http://", "https://")):
        from aimon_core.web import untrusted

        return untrusted(passage.source, text, f"{passage.source} (fetched from the web):")
    return f"{passage.source}:{passage.line}\n{text}"


def knowledge_tools(knowledge: LazyKnowledge) -> StaticToolProvider:
    """Return the provider of KnowledgeSearch over `knowledge`."""

    def search(query: str, limit: int) -> tuple[Passage, ...]:
        base = knowledge.get()
        base.refresh_wiki()
        return base.store.search(query, limit)

    async def run(tool_input: ToolInput, ctx: ToolContext) -> ToolResult:
        query = tool_input.string("query")
        limit = tool_input.integer("limit", 5) or 5
        try:
            found = await asyncio.to_thread(search, query, limit)
        except OSError as exc:
            return ToolResult.error(f"KnowledgeSearch: the index cannot be read: {exc}", exc)
        if not found:
            return ToolResult.ok(f"No passage matches {query!r}. Index documentation with "
                                 "`aimon knowledge add PATH|URL` or `aimon knowledge index`.")
        return ToolResult.ok("\n\n".join(show(p) for p in found))

    schema: dict[str, Any] = {
        "type": "object", "additionalProperties": False, "required": ["query"],
        "properties": {"query": {"type": "string"},
                       "limit": {"type": "integer", "minimum": 1, "maximum": 20}}}
    return StaticToolProvider("knowledge", (
        Tool(name="KnowledgeSearch", description=SEARCH_DESCRIPTION, input_schema=schema,
             run=run, read_only=True),))
