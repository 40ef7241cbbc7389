"""Tool providers: each domain hands its tools to a runtime (the seeds' OrcaToolProvider).

A runtime asks every provider for its tools once, when it is built. Adding a domain (skills,
subagents, MCP servers) means adding a provider, never editing a central list.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from aimon_core.tools._base import Tool
from aimon_core.tools._file_tools import EDIT_TOOL, READ_TOOL, WRITE_TOOL
from aimon_core.tools._search_tools import GLOB_TOOL, GREP_TOOL
from aimon_core.tools._shell_tools import BASH_OUTPUT_TOOL, BASH_TOOL, KILL_SHELL_TOOL
from aimon_core.tools._todo_tool import TODO_WRITE_TOOL


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolProviderContext:
    """What a provider may know about the runtime it provides for."""

    project_root: Path
    agent_name: str


class ToolProvider(Protocol):
    """Yields the tools of one domain for a runtime."""

    @property
    def name(self) -> str:
        """Return the domain's name ("files", "shell", "mcp" ...), for messages."""
        ...

    def tools(self, context: ToolProviderContext) -> Iterable[Tool]:
        """Return this domain's tools for the runtime described by `context`."""
        ...


@dataclass(frozen=True, slots=True)
class StaticToolProvider:
    """A provider of a fixed set of tools (the built-in domains, a library user's own)."""

    name: str
    provided: tuple[Tool, ...]

    def tools(self, context: ToolProviderContext) -> Iterable[Tool]:
        """Return the fixed tools."""
        return self.provided


FILE_TOOLS = StaticToolProvider("files", (READ_TOOL, WRITE_TOOL, EDIT_TOOL, GLOB_TOOL, GREP_TOOL))
SHELL_TOOLS = StaticToolProvider("shell", (BASH_TOOL, BASH_OUTPUT_TOOL, KILL_SHELL_TOOL))
TODO_TOOLS = StaticToolProvider("todo", (TODO_WRITE_TOOL,))


def builtin_providers() -> tuple[ToolProvider, ...]:
    """Return the providers of the built-in tools, in the order the model is told about them."""
    return (FILE_TOOLS, SHELL_TOOLS, TODO_TOOLS)


def provided_tools(providers: Iterable[ToolProvider], context: ToolProviderContext
                   ) -> tuple[Tool, ...]:
    """Return every provider's tools, in provider order."""
    return tuple(tool for provider in providers for tool in provider.tools(context))
