"""Agent definitions: aimon's shape, Claude Code's shape, and bad files."""

from __future__ import annotations

from pathlib import Path

import pytest

from aimon_core.agent import (
    AgentDefinitionError,
    Environment,
    assemble_system_prompt,
    load_agent_file,
    load_builtin_agent,
    parse_agent,
    repair_tool_pairs,
)
from aimon_core.agent._prompt import find_instructions
from aimon_core.llm import Message, TextBlock, ToolResultBlock, ToolUseBlock


def test_aimon_shape_with_variables() -> None:
    agent = parse_agent(
        "---\nname: reviewer\ndescription: Reviews code\n"
        "model: {name: claude-sonnet-4-5, temperature: 0.2, maxTokens: 8000}\n"
        "maxIterations: 12\nvariables: {language: Python}\ntools: [Read, Grep]\n---\n"
        "You review {{language}} code for {{team}}.\n"
    )
    assert agent.name == "reviewer" and agent.max_iterations == 12
    assert agent.model.name == "claude-sonnet-4-5" and agent.model.temperature == 0.2
    assert agent.model.max_tokens == 8000
    assert agent.tools == ("Read", "Grep")
    assert agent.render_prompt({"team": "infra"}) == "You review Python code for infra."


def test_claude_code_shape() -> None:
    agent = parse_agent(
        "---\nname: helper\ndescription: >-\n  Folded\n  text\n"
        "tools: Read, Bash(git diff:*), Grep\nmodel: inherit\ncolor: red\n---\nBody\n"
    )
    assert agent.description == "Folded text"
    assert agent.tools == ("Read", "Bash(git diff:*)", "Grep")
    assert agent.model.name is None
    assert agent.extra == {"color": "red"}


def test_tools_absent_means_all_and_empty_means_none() -> None:
    assert parse_agent("---\nname: a\n---\nx\n").tools is None
    assert parse_agent("---\nname: a\ntools: []\n---\nx\n").tools == ()


def test_invalid_yaml_is_recovered_with_a_warning() -> None:
    agent = parse_agent(
        "---\nname: analyst\ndescription: Use when asked. Triggers on: 'cohort analysis'\n"
        "tools: Read, Write\n---\nBody\n", source="a.md"
    )
    assert agent.name == "analyst"
    assert agent.description == "Use when asked. Triggers on: 'cohort analysis'"
    assert agent.tools == ("Read", "Write")
    assert agent.warnings and "not valid YAML" in agent.warnings[0]


@pytest.mark.parametrize(("text", "fragment"), [
    ("no frontmatter", "no YAML frontmatter"),
    ("---\nname: a\n---\n   \n", "prompt"),
    ("---\nname: 'bad name!'\n---\nx\n", "name"),
    ("---\nname: a\nmaxIterations: -1\n---\nx\n", "maxIterations"),
    ("---\nname: a\nmodel: {maxTokens: lots}\n---\nx\n", "maxTokens"),
    ("---\nname: a\ntools: 5\n---\nx\n", "tools"),
    ("---\n- a list\n---\nx\n", "mapping"),
])
def test_bad_definitions_name_the_problem(text: str, fragment: str) -> None:
    with pytest.raises(AgentDefinitionError) as info:
        parse_agent(text, source="agents/x.md")
    assert "agents/x.md" in str(info.value) and fragment in str(info.value)


def test_file_name_is_the_default_name(tmp_path: Path) -> None:
    path = tmp_path / "fixer.md"
    path.write_text("---\ndescription: d\n---\nFix things.\n")
    assert load_agent_file(path).name == "fixer"
    (tmp_path / "bin.md").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(AgentDefinitionError):
        load_agent_file(tmp_path / "bin.md")


def test_builtin_default_agent() -> None:
    agent = load_builtin_agent()
    assert agent.name == "default"
    prompt = agent.render_prompt()
    assert "{{" not in prompt and "aimon" in prompt


def test_instruction_file_precedence(tmp_path: Path) -> None:
    assert find_instructions(tmp_path) is None
    (tmp_path / "CLAUDE.md").write_text("claude rules")
    (tmp_path / "AGENTS.md").write_text("agents rules")
    found = find_instructions(tmp_path)
    assert found is not None and found.text == "agents rules"
    (tmp_path / "AIMON.md").write_text("aimon rules")
    env = Environment(cwd=tmp_path, platform="linux", date="2026-01-01", git_branch="main",
                      git_status="clean", instructions=find_instructions(tmp_path))
    prompt = assemble_system_prompt(load_builtin_agent(), env)
    assert "aimon rules" in prompt and "agents rules" not in prompt
    assert "Git branch: main" in prompt and "Today's date: 2026-01-01" in prompt


def test_repair_adds_missing_results_and_drops_orphans() -> None:
    use = ToolUseBlock(id="a", name="Read", input={})
    use2 = ToolUseBlock(id="b", name="Read", input={})
    orphan = ToolResultBlock(tool_use_id="zzz", content=(TextBlock(text="?"),))
    answer_b = ToolResultBlock(tool_use_id="b", content=(TextBlock(text="B"),))
    messages = [
        Message.user("hi"),
        Message(role="assistant", content=(use, use2)),
        Message(role="user", content=(orphan, answer_b)),
        Message(role="assistant", content=(ToolUseBlock(id="c", name="X", input={}),)),
    ]
    fixed = repair_tool_pairs(messages)
    first = fixed[2].content
    assert [b.tool_use_id for b in first if isinstance(b, ToolResultBlock)] == ["a", "b"]
    assert fixed[-1].role == "user"
    tail = fixed[-1].content[0]
    assert isinstance(tail, ToolResultBlock) and tail.tool_use_id == "c" and tail.is_error
    assert repair_tool_pairs(fixed) == fixed


@pytest.mark.parametrize(("front", "tools"), [
    ("tools: Read, Grep, Bash(git log:*)", ("Read", "Grep", "Bash(git log:*)")),
    ("tools: Read Grep Bash(git log:*)", ("Read", "Grep", "Bash(git log:*)")),
    ("allowed-tools: Read Bash(git diff --stat:*)", ("Read", "Bash(git diff --stat:*)")),
    ("allowed-tools: [Read, 'Bash(git:*)']", ("Read", "Bash(git:*)")),
    ("tools:\n  - Read\n  - mcp__server__tool", ("Read", "mcp__server__tool")),
])
def test_tool_list_forms(front: str, tools: tuple[str, ...]) -> None:
    agent = parse_agent(f"---\nname: a\n{front}\n---\nx\n")
    assert agent.tools == tools and agent.warnings == ()


def test_tool_list_given_twice_is_an_error() -> None:
    with pytest.raises(AgentDefinitionError, match="give the tool list once"):
        parse_agent("---\nname: a\ntools: Read\nallowed-tools: Grep\n---\nx\n", source="x.md")


@pytest.mark.parametrize("tools", ["WebFetch, Read", "MultiEdit", "Raed"])
def test_tool_names_are_kept_as_written(tools: str) -> None:
    """Whether a name is a tool is read against the runtime's tools when one is built
    (tests/runtime/test_tool_names.py): the file keeps what it says."""
    agent = parse_agent(f"---\nname: a\ntools: {tools}\n---\nx\n", source="agents/a.md")
    assert agent.warnings == ()
    assert agent.tools is not None and tools.split(",")[0] in agent.tools


def test_unknown_keys_warn_but_color_does_not() -> None:
    agent = parse_agent("---\nname: a\ncolor: red\npermissionMode: plan\nzz: 1\n---\nx\n",
                        source="a.md")
    assert agent.warnings == ("a.md: unknown frontmatter key(s) permissionMode, zz; ignored",)
    assert agent.extra == {"color": "red", "permissionMode": "plan", "zz": 1}


@pytest.mark.parametrize("key", ["maxIterations", "max-iterations", "max_iterations"])
def test_max_iterations_spellings(key: str) -> None:
    assert parse_agent(f"---\nname: a\n{key}: '12'\n---\nx\n").max_iterations == 12


def test_indented_frontmatter_is_a_clear_error() -> None:
    with pytest.raises(AgentDefinitionError, match="column 0"):
        parse_agent("\n    ---\n    name: a\n    ---\n    body\n", source="a.md")


def test_colon_values_are_read_as_text_and_the_rest_as_yaml() -> None:
    agent = parse_agent(
        "---\nname: analyst\ndescription: Triggers on: 'cohort analysis', churn\n"
        "tools:\n  - Read\n  - Grep\nmodel: sonnet\n---\nBody\n", source="a.md")
    assert agent.description == "Triggers on: 'cohort analysis', churn"
    assert agent.tools == ("Read", "Grep") and agent.model.name == "sonnet"
    assert agent.warnings == ("a.md: frontmatter description: not valid YAML (mapping values "
                              "are not allowed in this context); read as text",)


def test_literal_backslash_n_examples_become_lines() -> None:
    agent = parse_agent(
        "---\nname: studio-coach\ndescription: Use this agent when a task starts. Examples:\\n\\n"
        "<example>\\nContext: A big project\\nuser: \"Build it\"\\n</example>\ncolor: gold\n"
        "tools: Read, Task\n---\nCoach.\n", source="a.md")
    assert agent.description.splitlines()[:3] == [
        "Use this agent when a task starts. Examples:", "", "<example>"]
    assert "Context: A big project" in agent.description
    assert agent.tools == ("Read", "Task")
