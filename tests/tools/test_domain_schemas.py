"""The memory, web and knowledge tools: schemas the gate accepts, and their snapshot."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema

from aimon_core.knowledge import LazyKnowledge, knowledge_tools, project_knowledge
from aimon_core.memory import FileObservationStore, MemoryBook, MemoryOwner, memory_tools
from aimon_core.tools import Tool
from aimon_core.web import PageCache, web_tools

SNAPSHOT = Path(__file__).with_name("domain_tool_schemas.snapshot.json")


def domain_tools() -> list[Tool]:
    book = MemoryBook(FileObservationStore(Path("/nonexistent")),
                      MemoryOwner(principal="p", project="q", agent="a"))
    providers = (memory_tools(book), web_tools(PageCache(), None),
                 knowledge_tools(LazyKnowledge(lambda: project_knowledge(Path("/")))))
    return [t for provider in providers for t in provider.provided]


def test_schemas_are_strict_and_described_for_the_model() -> None:
    for tool in domain_tools():
        schema = tool.input_schema
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["additionalProperties"] is False, tool.name
        assert set(schema["required"]) <= set(schema["properties"]), tool.name
        assert len(tool.description) > 100, tool.name


def test_domain_tool_schemas_snapshot() -> None:
    """Run with AIMON_UPDATE_SNAPSHOTS=1 to rewrite the snapshot after a deliberate change."""
    current = [{"name": t.name, "read_only": t.read_only, "description": t.description,
                "input_schema": t.input_schema} for t in domain_tools()]
    text = json.dumps(current, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("AIMON_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(text, encoding="utf-8")
    assert SNAPSHOT.read_text(encoding="utf-8") == text, (
        "tool schemas changed; review and run with AIMON_UPDATE_SNAPSHOTS=1 to accept")
