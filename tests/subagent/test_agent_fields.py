"""Claude Code's agent fields in use: `model: haiku` and `disallowedTools`.

Each case is an agent file run as a Task subagent through `build_runtime`; the subagent's
request shows the model it ran on and the tools it was offered.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aimon_core.llm import LLMRequest, LLMResponse, ScriptedLLMClient, reply
from aimon_core.runtime import RuntimeParts, build_runtime
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore
from aimon_core.subagent import load_named_agent

# The tools a fork gets when its agent names none: the built-in ones and the domains'
# (memory, the web, knowledge).
ALL = frozenset({"Read", "Write", "Edit", "Glob", "Grep", "Bash", "BashOutput", "KillShell",
                 "TodoWrite", "Remember", "MemorySearch", "WebFetch", "WebSearch",
                 "KnowledgeSearch"})

# frontmatter tool lines -> tools the subagent is offered (None: ALL)
CASES = {
    "": None,
    "disallowedTools: Write, Edit, NotebookEdit\n": ALL - {"Write", "Edit"},
    "disallowedTools: [Write, Edit]\n": ALL - {"Write", "Edit"},
    "disallowedTools:\n  - Bash\n": ALL - {"Bash"},
    "disallowed-tools: Bash\n": ALL - {"Bash"},
    "tools: Read, Grep, Bash\ndisallowedTools: Bash\n": frozenset({"Read", "Grep"}),
    "tools: Read, Bash(git diff:*)\ndisallowedTools: Bash\n": frozenset({"Read"}),
    # A pattern takes the whole tool away: fewer tools, never more.
    "disallowedTools: Bash(rm:*)\n": ALL - {"Bash"},
    # A list that cannot be read gives no tools.
    "disallowedTools:\n  - Write\n - Edit\n": frozenset(),
}


def _fork_requests(root: Path, lines: str) -> list[LLMRequest]:
    """Run agent `checker` (frontmatter `lines`) as a Task; return the fork's requests."""
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".claude" / "agents" / "checker.md").write_text(
        f"---\nname: checker\ndescription: Checks work.\n{lines}---\nYou check work.\n")
    steps: list[LLMResponse] = [
        reply("", ("Task", {"description": "check", "prompt": "check it",
                            "subagent_type": "checker"})),
        reply("checked"), reply("done")]
    client = ScriptedLLMClient(steps=steps, provider="anthropic")

    async def main() -> None:
        assembly = build_runtime(root, parts=RuntimeParts(client=client, model="claude-sonnet-5-5"))
        store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
        live = await assembly.open_session(store)
        await live.submit("delegate")
        await live.close()
        await assembly.aclose()

    asyncio.run(main())
    assert [r.model for r in client.requests if "You check work" not in r.system] == [
        "claude-sonnet-5-5", "claude-sonnet-5-5"]
    return [r for r in client.requests if "You check work" in r.system]


def _offered(root: Path, lines: str) -> frozenset[str]:
    [fork] = _fork_requests(root, lines)
    return frozenset(t.name for t in fork.tools)


@pytest.mark.parametrize(("lines", "model"), [("", "claude-sonnet-5-5"),
                                              ("model: haiku\n", "claude-haiku-5-5"),
                                              ("model: inherit\n", "claude-sonnet-5-5")])
def test_a_subagent_runs_on_the_model_its_alias_means(tmp_path: Path, lines: str,
                                                      model: str) -> None:
    assert [r.model for r in _fork_requests(tmp_path, lines)] == [model]


@pytest.mark.parametrize("lines", sorted(CASES))
def test_disallowed_tools_are_taken_away(tmp_path: Path, lines: str) -> None:
    offered = _offered(tmp_path, lines)
    expected = CASES[lines]
    if expected is None:
        assert offered >= ALL
    else:
        assert offered == expected


def test_the_agent_lists_what_it_keeps(tmp_path: Path) -> None:
    (tmp_path / ".claude" / "agents").mkdir(parents=True)
    (tmp_path / ".claude" / "agents" / "checker.md").write_text(
        "---\nname: checker\ndescription: d\ntools: Read, Write\ndisallowedTools: Write\n"
        "---\nBody.\n")
    agent = load_named_agent("checker", tmp_path)
    assert agent is not None
    assert (agent.tools, agent.disallowed_tools) == (("Read",), ("Write",))
    assert not any("unknown frontmatter" in w for w in agent.warnings)
