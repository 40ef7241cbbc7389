"""One list of tools: the runtime's providers. Rules and tool lists are checked against it.

A deny or ask rule that names no tool of the runtime (nor Claude Code's, nor MCP's) would
never match and leave the user unprotected: building the runtime fails, naming the file, the
key and the close name. An allow rule that names none is a notice. A library user's own tool
is a tool like the others: a rule may name it, and a deny rule naming it denies it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from aimon_core.agent import ApprovalRefused
from aimon_core.live import LiveSessionEvent, SessionCommandHost
from aimon_core.llm import reply, script
from aimon_core.runtime import (
    AgentAssembly,
    RuntimeFlags,
    RuntimeParts,
    RuntimeSetupError,
    build_runtime,
)
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore
from aimon_core.tools import Tool, tool, tool_list_notes


@tool(read_only=True)
async def word_count(path: str) -> str:
    """Count the words in a file of the project."""
    text = await asyncio.to_thread(Path(path).read_text)
    return f"{len(text.split())} words"


def settings(root: Path, permissions: dict[str, list[str]]) -> Path:
    path = root / ".aimon" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": permissions}))
    return path


def build(root: Path, *, flags: RuntimeFlags | None = None,
          tools: tuple[Tool, ...] = ()) -> AgentAssembly:
    return build_runtime(root, flags=flags or RuntimeFlags(),
                         parts=RuntimeParts(client=script(), trust_all=True, tools=tools))


def run_word_count(root: Path, flags: RuntimeFlags) -> tuple[str, list[LiveSessionEvent]]:
    """Let the model call word_count once (a read-only tool: allowed unless denied)."""
    (root / "a.txt").write_text("one two three\n")
    client = script(reply("", ("word_count", {"path": str(root / "a.txt")})), reply("done"))
    seen: list[LiveSessionEvent] = []

    async def main() -> str:
        parts = RuntimeParts(client=client, tools=(word_count,), trust_all=True)
        async with build_runtime(root, flags=flags, parts=parts) as assembly:
            store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
            async with await assembly.open_session(store) as live:
                live.subscribe(seen.append)
                await live.submit("count")
        return str(client.requests[-1].messages[-1].content[0])

    return asyncio.run(main()), seen


@pytest.mark.parametrize("how", ["settings", "flag"])
def test_a_library_tool_is_denied_by_a_rule_naming_it(tmp_path: Path, how: str) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    if how == "settings":
        settings(root, {"deny": ["word_count"]})
        flags = RuntimeFlags()
    else:
        flags = RuntimeFlags(disallowed=("word_count",))
    result, seen = run_word_count(root, flags)
    assert "denied by rule word_count" in result
    assert "3 words" not in result
    assert any(isinstance(e, ApprovalRefused) and e.denied for e in seen)


def test_without_the_rule_the_library_tool_runs(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    result, _ = run_word_count(root, RuntimeFlags())
    assert "3 words" in result


@pytest.mark.parametrize(("rule", "close"), [
    ("bash(touch:*)", "Bash(touch:*)"), ("Bsh(rm:*)", "Bash(rm:*)"),
    ("read(./.env)", "Read(./.env)"), ("Greps", "Grep"), ("word_cont", "word_count"),
])
@pytest.mark.parametrize("kind", ["deny", "ask"])
def test_a_deny_or_ask_rule_naming_no_tool_stops_the_build(
        tmp_path: Path, rule: str, close: str, kind: str) -> None:
    path = settings(tmp_path, {kind: ["Bash(rm:*)", rule]})
    with pytest.raises(RuntimeSetupError) as caught:
        build(tmp_path, tools=(word_count,))
    message = str(caught.value)
    assert str(path) in message and f"permissions.{kind}[1]" in message
    assert repr(rule) in message and f"did you mean {close}?" in message


def test_a_deny_flag_naming_no_tool_stops_the_build(tmp_path: Path) -> None:
    with pytest.raises(RuntimeSetupError, match=r"--disallowed-tools would never match it.*"
                                                r"did you mean Bash"):
        build(tmp_path, flags=RuntimeFlags(disallowed=("bash",)))


@pytest.mark.parametrize("rule", [
    "WebFetch", "WebFetch(domain:example.com)", "WebSearch", "NotebookEdit", "Task", "Agent",
    "Skill", "SlashCommand", "ExitPlanMode", "MultiEdit", "LS", "KillShell", "TodoWrite",
    "AgentOutput", "TaskList", "mcp__github__create_issue", "mcp__github", "Bash(touch:*)",
    "Read(./.env)",
])
def test_tools_of_the_runtime_claude_code_and_mcp_are_understood(tmp_path: Path,
                                                                  rule: str) -> None:
    """Subagent tools count even with no subagent defined (their provider names them)."""
    settings(tmp_path, {"deny": [rule], "allow": [rule]})
    assembly = build(tmp_path)
    assert not [n for n in assembly.notices if "never matches" in n]


def test_an_allow_rule_naming_no_tool_is_a_notice(tmp_path: Path) -> None:
    settings(tmp_path, {"allow": ["Raed(src/**)", "WebSearch", "mcp__x__y"]})
    assembly = build(tmp_path)
    [notice] = [n for n in assembly.notices if "never matches" in n]
    assert "Raed(src/**)" in notice and "did you mean Read(src/**)?" in notice


def test_a_rule_naming_a_library_tool_is_understood_only_with_the_tool(tmp_path: Path) -> None:
    settings(tmp_path, {"deny": ["word_count"]})
    build(tmp_path, tools=(word_count,))
    with pytest.raises(RuntimeSetupError, match="word_count"):
        build(tmp_path)


@pytest.mark.parametrize(("entries", "notes"), [
    (("Read", "WebFetch"), ["tool 'WebFetch' is not available in aimon; ignored"]),
    (("MultiEdit",), ["tool 'MultiEdit' is not available in aimon; ignored"]),
    (("Raed",), ["unknown tool 'Raed' (did you mean 'Read'?); ignored"]),
    (("Bash(git log:*)", "mcp__github", "word_count"), []),
])
def test_a_tool_list_is_read_against_the_runtimes_tools(
        entries: tuple[str, ...], notes: list[str]) -> None:
    known = frozenset({"Read", "Bash", "word_count"})
    assert tool_list_notes(entries, known) == notes


def test_agent_and_skill_tool_lists_are_named_where_they_are_read(tmp_path: Path) -> None:
    agents = tmp_path / ".aimon" / "agents"
    agents.mkdir(parents=True)
    (agents / "helper.md").write_text(
        "---\nname: helper\ndescription: helps\ntools: Read, NotebookEdit, Raed\n---\nHelp.\n")
    skill = tmp_path / ".aimon" / "skills" / "look"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: look\ndescription: look around\nallowed-tools: Read Frobnicate\n---\nLook.\n")
    main = agents / "main.md"
    main.write_text("---\nname: main\ndescription: m\ntools: Read, NotebookEdit\n---\nMain.\n")
    assembly = build(tmp_path, flags=RuntimeFlags(agent="main"))
    assert f"{main}: tool 'NotebookEdit' is not available in aimon; ignored" in assembly.notices
    assert assembly.commands is not None
    listing = asyncio.run(_run(assembly, "/agents")) + asyncio.run(_run(assembly, "/skills"))
    assert "warning: tool 'NotebookEdit' is not available in aimon; ignored" in listing
    assert "warning: unknown tool 'Raed' (did you mean 'Read'?); ignored" in listing
    assert "warning: unknown tool 'Frobnicate'; ignored" in listing


async def _run(assembly: AgentAssembly, text: str) -> str:
    assert assembly.commands is not None
    store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
    async with await assembly.open_session(store) as live:
        outcome = await assembly.commands.run(text, SessionCommandHost(live, assembly.commands,
                                                                       assembly))
    return outcome.text
