"""A knowledge store: project documentation, notes and the wiki, searched by words."""

from aimon_core.knowledge._base import (
    DEFAULT_SOURCES,
    WIKI,
    IndexReport,
    KnowledgeBase,
    project_knowledge,
)
from aimon_core.knowledge._store import (
    Document,
    KnowledgeStore,
    Passage,
    SQLiteKnowledgeStore,
    match_expression,
    passages,
)
from aimon_core.knowledge._tools import (
    KNOWLEDGE_TOOL_NAMES,
    LazyKnowledge,
    knowledge_tools,
    show,
)

__all__ = [
    "DEFAULT_SOURCES",
    "KNOWLEDGE_TOOL_NAMES",
    "WIKI",
    "Document",
    "IndexReport",
    "KnowledgeBase",
    "KnowledgeStore",
    "LazyKnowledge",
    "Passage",
    "SQLiteKnowledgeStore",
    "knowledge_tools",
    "match_expression",
    "passages",
    "project_knowledge",
    "show",
]
