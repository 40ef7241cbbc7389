"""Claude Code's tool names, and what a list of tool names says against the tools aimon has.

aimon's own tools are whatever a runtime's providers give (its `ToolRegistry`, and each
provider's `names`): there is no list of them here. Claude Code's names are another matter:
settings and agent files written for Claude Code name its tools, and a name in its vocabulary
that aimon lacks is "not available", not a typo.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable

CLAUDE_CODE_TOOLS = frozenset({
    "Read", "Write", "Edit", "MultiEdit", "Glob", "Grep", "LS", "Bash", "BashOutput",
    "KillShell", "KillBash", "TodoWrite", "TodoRead", "WebFetch", "WebSearch", "NotebookEdit",
    "NotebookRead", "Task", "Agent", "Skill", "SlashCommand", "ExitPlanMode", "EnterPlanMode",
    "ListMcpResources", "ListMcpResourcesTool", "ReadMcpResource", "ReadMcpResourceTool",
    "AskUserQuestion", "TaskOutput", "TaskStop", "TaskList", "TaskCreate", "TaskUpdate",
    "TaskGet", "LSP", "Computer",
})
"""Every tool name Claude Code has used: settings shared with it may name any of these."""


def is_mcp_name(name: str) -> bool:
    """Tell whether `name` names an MCP tool or server (`mcp__server`, `mcp__server__tool`)."""
    return name.startswith("mcp__")


def closest_name(name: str, known: Iterable[str]) -> str | None:
    """Return the known name `name` most likely meant (case, then spelling), or None."""
    names = sorted(known)
    by_case = {candidate.lower(): candidate for candidate in names}
    return by_case.get(name.lower()) or next(
        iter(difflib.get_close_matches(name, names, n=1, cutoff=0.6)), None)


def tool_list_notes(entries: Iterable[str], known: Collection[str]) -> list[str]:
    """Return a line for each entry of a tool list (`tools:`, `allowed-tools:`) that names no
    tool of `known`: a Claude Code tool aimon lacks, or an unknown name (with the close one)."""
    notes: list[str] = []
    for entry in entries:
        name = entry.split("(", 1)[0].strip()
        if name in known or is_mcp_name(name):
            continue
        if name in CLAUDE_CODE_TOOLS:
            notes.append(f"tool {name!r} is not available in aimon; ignored")
            continue
        close = closest_name(name, known)
        hint = f" (did you mean {close!r}?)" if close else ""
        notes.append(f"unknown tool {name!r}{hint}; ignored")
    return notes
