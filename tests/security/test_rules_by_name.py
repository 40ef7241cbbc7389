"""Rules by name hold on every route (issue 23, part 4).

A rule names what a tool starts: `Skill(name)` a skill, `Task(name)` (Claude Code's newer
`Agent(name)`) a subagent, `mcp__server` everything of an MCP server. Each class is a table of
rules and the routes that start the same thing: the tool with every spelling it accepts, the
slash commands a person types, an MCP server's resource tools, `@server:uri` mentions and
prompts. And an agent whose tools are restricted passes the restriction to its subagents.

Before the fix (the commit before this file), the Skill tool took `/vars` for `vars` while
`Skill(vars)` did not match it; `Task(...)`/`Agent(...)` rules never matched the subagent;
a `mcp__server` rule did not reach its resources; `/vars`, `/skill vars` and `/task helper`
ran whatever the rules said; and a subagent had every tool its parent had been denied.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from aimon_core.agent import SubagentFinished
from aimon_core.live import LiveSessionEvent, SessionCommandHost
from aimon_core.llm import LLMRequest, LLMResponse, ScriptedLLMClient, reply, script
from aimon_core.mcp import resource_tools
from aimon_core.mcp._servers import MCPServers
from aimon_core.permission import PermissionRules, Verdict, decide
from aimon_core.runtime import AgentAssembly, RuntimeFlags, RuntimeParts, build_runtime
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore
from aimon_core.tools import ToolRegistry

SKILL = "---\nname: vars\ndescription: Show the variables.\n---\nfirst=$1\n"
AGENT = "---\nname: helper\ndescription: Helps.\ntools: Bash, Write\n---\nYou are the helper.\n"


def project(root: Path) -> Path:
    (root / ".aimon" / "skills" / "vars").mkdir(parents=True)
    (root / ".aimon" / "skills" / "vars" / "SKILL.md").write_text(SKILL)
    (root / ".aimon" / "agents").mkdir(parents=True)
    (root / ".aimon" / "agents" / "helper.md").write_text(AGENT)
    return root


def store() -> SessionStore:
    return SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())


def assemble(root: Path, client: ScriptedLLMClient, **flags: Any) -> AgentAssembly:
    return build_runtime(root, flags=RuntimeFlags(**flags), parts=RuntimeParts(client=client))


def results(request: LLMRequest) -> list[str]:
    return [block.text for message in request.messages for block in message.content
            if hasattr(block, "tool_use_id")]


# ------------------------------------------------------------ the tools, every spelling

SPELLINGS = ("vars", "/vars", " vars ", "/vars ")
RULES = {
    "Skill": ("Skill(vars)", "Skill(/vars)"),
    "Task": ("Task(helper)", "Agent(helper)", "Task(/helper)"),
}


@dataclass(frozen=True)
class ToolCase:
    tool: str
    rule: str
    name: str
    kind: str

    @property
    def input(self) -> dict[str, str]:
        name = self.name.replace("vars", "helper") if self.tool == "Task" else self.name
        if self.tool == "Skill":
            return {"skill": name}
        return {"subagent_type": name, "description": "d", "prompt": "p"}


TOOL_CASES = [ToolCase(tool, rule, name, kind)
              for tool, rules in RULES.items() for rule in rules for name in SPELLINGS
              for kind in ("deny", "ask")]


@pytest.fixture(scope="module")
def started_tools(tmp_path_factory: pytest.TempPathFactory) -> ToolRegistry:
    root = project(tmp_path_factory.mktemp("names") / "proj")
    return assemble(root, script()).runtime.tools


@pytest.mark.parametrize("case", TOOL_CASES, ids=lambda c: f"{c.kind}-{c.rule}-{c.name!r}")
def test_a_rule_naming_what_a_tool_starts_holds_for_every_spelling(
        case: ToolCase, started_tools: ToolRegistry, tmp_path: Path) -> None:
    tool = started_tools.get(case.tool)
    assert tool is not None
    rules = PermissionRules.parse(**{case.kind: [case.rule]})
    decision = decide(tool, case.input, rules, tmp_path)
    assert decision.verdict is (Verdict.DENY if case.kind == "deny" else Verdict.ASK)
    assert decision.rule == case.rule


@pytest.mark.parametrize("tool", ["Skill", "Task"])
def test_without_a_rule_the_tools_run_as_before(tool: str, started_tools: ToolRegistry,
                                                tmp_path: Path) -> None:
    """Controls: Skill asks (it is not read-only); Task is read-only (its subagent asks)."""
    found = started_tools.get(tool)
    assert found is not None
    case = ToolCase(tool, "", "vars", "deny")
    decision = decide(found, case.input, PermissionRules(), tmp_path)
    assert decision.verdict is (Verdict.ASK if tool == "Skill" else Verdict.ALLOW)


# ------------------------------------------------------------ slash commands a person types

COMMANDS = [
    ("Skill(vars)", "/vars a"), ("Skill(vars)", "/skill vars a"), ("Skill(vars)", "/skill /vars"),
    ("Task(helper)", "/task helper do it"), ("Agent(helper)", "/task helper do it"),
]


@pytest.mark.parametrize(("rule", "typed"), COMMANDS)
def test_a_deny_rule_holds_for_the_slash_commands(rule: str, typed: str, tmp_path: Path) -> None:
    root = project(tmp_path / "proj")
    client = script()  # nothing may reach the model

    async def main() -> tuple[bool, str]:
        async with assemble(root, client, disallowed=(rule,)) as assembly:
            assert assembly.commands is not None
            async with await assembly.open_session(store()) as live:
                host = SessionCommandHost(live, assembly.commands, assembly)
                outcome = await assembly.commands.run(typed, host)
        return outcome.is_error, outcome.text

    is_error, text = asyncio.run(main())
    assert is_error and f"denied by rule {rule}" in text
    assert client.requests == []


@pytest.mark.parametrize(("rule", "typed"), [("Skill(other)", "/vars a"),
                                             ("Skill(vars)", "/vars a")])
def test_an_ask_rule_or_another_name_lets_a_typed_command_run(rule: str, typed: str,
                                                            tmp_path: Path) -> None:
    """Typing the command is the approval an ask rule wants; a rule on another name is none."""
    root = project(tmp_path / "proj")

    async def main() -> str | None:
        async with assemble(root, script(), disallowed=()) as assembly:
            assembly.policy.set_rules(PermissionRules.parse(ask=[rule]))
            assert assembly.commands is not None
            async with await assembly.open_session(store()) as live:
                host = SessionCommandHost(live, assembly.commands, assembly)
                return (await assembly.commands.run(typed, host)).prompt

    assert asyncio.run(main()) == "first=a\n"


# ------------------------------------------------------------ a whole MCP server

SERVER_CALLS = [
    ("ListMcpResources", {"server": "github"}),
    ("ListMcpResources", {}),
    ("ReadMcpResource", {"server": "github", "uri": "repo://x"}),
]


@pytest.mark.parametrize("rule", ["mcp__github", "mcp__github__*"])
@pytest.mark.parametrize(("tool", "tool_input"), SERVER_CALLS)
def test_a_whole_server_rule_covers_its_resources(rule: str, tool: str,
                                                  tool_input: dict[str, str],
                                                  tmp_path: Path) -> None:
    tools = {t.name: t for t in resource_tools(MCPServers({}, tools=ToolRegistry(),
                                                          roots=lambda: ()))}
    decision = decide(tools[tool], tool_input, PermissionRules.parse(deny=[rule]), tmp_path)
    assert decision.verdict is Verdict.DENY
    other = decide(tools[tool], {**tool_input, "server": "gitlab"} if tool_input else {},
                   PermissionRules.parse(deny=["mcp__github__create_issue"]), tmp_path)
    assert other.verdict is Verdict.ALLOW  # a rule on one tool of the server is not the server


# ------------------------------------------------------------ restrictions reach subagents

def routed(parent: list[LLMResponse], fork: list[LLMResponse]) -> ScriptedLLMClient:
    def step(request: LLMRequest) -> LLMResponse:
        return (fork if "helper" in request.system.split("\n", 1)[0] else parent).pop(0)

    return ScriptedLLMClient(steps=[step] * (len(parent) + len(fork)))


def test_an_agents_tool_patterns_hold_for_the_subagents_it_starts(tmp_path: Path) -> None:
    root = project(tmp_path / "proj")
    (root / ".aimon" / "agents" / "main.md").write_text(
        "---\nname: main\ndescription: m\ntools: Read, Task, Bash(git log:*)\n---\nMain.\n")
    (root / "x.txt").write_text("x\n")
    task = ("Task", {"subagent_type": "helper", "description": "d", "prompt": "p"})
    client = routed(
        [reply("", task), reply("done")],
        [reply("", ("Bash", {"command": "touch made.txt"}),
               ("Write", {"file_path": "written.txt", "content": "w\n"})),
         reply("helper done")])
    seen: list[LiveSessionEvent] = []

    async def main() -> None:
        assembly = assemble(root, client, agent="main", allowed=("Bash", "Write"))
        async with assembly, await assembly.open_session(store()) as live:
            live.subscribe(seen.append)
            await live.submit("go")

    asyncio.run(main())
    assert not (root / "made.txt").exists()
    assert not (root / "written.txt").exists()
    fork = [r for r in client.requests if "helper" in r.system.split("\n", 1)[0]]
    assert "Write" not in [t.name for t in fork[0].tools]  # main has no Write: neither may it
    bash, write = results(fork[-1])
    assert "agent 'main' may use Bash only as Bash(git log:*)" in bash
    assert "No tool named 'Write'" in write
    assert any(isinstance(e, SubagentFinished) and e.agent == "helper" for e in seen)
