"""Tool providers: each domain hands its tools to a runtime (the seeds' OrcaToolProvider).

A runtime asks every provider for its tools once, when it is built. Adding a domain (skills,
subagents, MCP servers) means adding a provider, never editing a central list.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from aimon_core.tools._base import Tool
from aimon_core.tools._file_tools import EDIT_TOOL, READ_TOOL, WRITE_TOOL
from aimon_core.tools._preview import (
    command_label,
    edit_preview,
    path_label,
    search_label,
    todo_label,
    write_preview,
)
from aimon_core.tools._search_tools import GLOB_TOOL, GREP_TOOL
from aimon_core.tools._shell_tools import BASH_OUTPUT_TOOL, BASH_TOOL, KILL_SHELL_TOOL
from aimon_core.tools._todo_tool import TODO_WRITE_TOOL


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolProviderContext:
    """What a provider may know about the runtime it provides for."""

    project_root: Path
    agent_name: str


class ToolProvider(Protocol):
    """Yields the tools of one domain for a runtime.

    Together, a runtime's providers are the one list of its tools: `names` says every name a
    domain may give, so that a rule naming one of its tools is understood even while the
    domain gives none (no subagents defined yet).
    """

    @property
    def name(self) -> str:
        """Return the domain's name ("files", "shell", "mcp" ...), for messages."""
        ...

    @property
    def names(self) -> tuple[str, ...]:
        """Return the name of every tool this domain may give."""
        ...

    def tools(self, context: ToolProviderContext) -> Iterable[Tool]:
        """Return this domain's tools for the runtime described by `context`."""
        ...


@dataclass(frozen=True, slots=True)
class StaticToolProvider:
    """A provider of a fixed set of tools (the built-in domains, a library user's own)."""

    name: str
    provided: tuple[Tool, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """Return the names of the fixed tools."""
        return tuple(tool.name for tool in self.provided)

    def tools(self, context: ToolProviderContext) -> Iterable[Tool]:
        """Return the fixed tools."""
        return self.provided


FILE_TOOLS = StaticToolProvider("files", (
    replace(READ_TOOL, describe=path_label("file_path")),
    replace(WRITE_TOOL, describe=path_label("file_path"), preview=write_preview),
    replace(EDIT_TOOL, describe=path_label("file_path"), preview=edit_preview),
    replace(GLOB_TOOL, describe=search_label(quote=False)),
    replace(GREP_TOOL, describe=search_label(quote=True)),
))
SHELL_TOOLS = StaticToolProvider("shell", (
    replace(BASH_TOOL, describe=command_label), BASH_OUTPUT_TOOL, KILL_SHELL_TOOL))
TODO_TOOLS = StaticToolProvider("todo", (replace(TODO_WRITE_TOOL, describe=todo_label),))


def builtin_providers() -> tuple[ToolProvider, ...]:
    """Return the providers of the built-in tools, in the order the model is told about them."""
    return (FILE_TOOLS, SHELL_TOOLS, TODO_TOOLS)


def provided_tools(providers: Iterable[ToolProvider], context: ToolProviderContext
                   ) -> tuple[Tool, ...]:
    """Return every provider's tools, in provider order."""
    return tuple(tool for provider in providers for tool in provider.tools(context))


def provided_names(providers: Iterable[ToolProvider], extra: Iterable[Tool] = ()
                   ) -> frozenset[str]:
    """Return every name the providers may give, and the names of `extra` tools."""
    return frozenset((*(name for provider in providers for name in provider.names),
                      *(tool.name for tool in extra)))
