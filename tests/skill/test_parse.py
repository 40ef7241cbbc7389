"""SKILL.md frontmatter: the Agent Skills fields, aimon's extensions, warnings and errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from aimon_core.skill import (
    DenyAction,
    ShellAction,
    SkillError,
    SkillExecution,
    SkillInvocation,
    parse_skill,
)

FOLDER = Path("/skills/my-skill")
PATH = FOLDER / "SKILL.md"


def skill_text(front: str, body: str = "Do the thing.\n") -> str:
    return f"---\n{front}---\n{body}"


def test_spec_fields_load() -> None:
    skill = parse_skill(skill_text(
        "name: my-skill\ndescription: Does a thing. Use when asked.\nlicense: MIT\n"
        "compatibility: Requires Python 3.11+\nmetadata:\n  author: Test\n  version: 1.0\n"
        "allowed-tools: Bash(jq:*) Bash(git log:*) Read\n"), path=PATH)
    assert skill.name == "my-skill" and skill.description == "Does a thing. Use when asked."
    assert skill.license == "MIT" and skill.compatibility == "Requires Python 3.11+"
    assert skill.metadata == {"author": "Test", "version": "1.0"}
    assert skill.allowed_tools == ("Bash(jq:*)", "Bash(git log:*)", "Read")
    assert skill.body == "Do the thing." and skill.directory == FOLDER and skill.path == PATH
    assert skill.warnings == ()


def test_defaults() -> None:
    skill = parse_skill(skill_text("name: my-skill\ndescription: d\n"), path=PATH)
    assert skill.invoke == SkillInvocation(user=True, model=True)
    assert skill.execution == SkillExecution(mode="inline", agent=None)
    assert skill.max_iterations == 100 and skill.arguments == () and skill.allowed_tools == ()
    assert skill.hooks.is_empty


def test_allowed_tools_as_a_yaml_list() -> None:
    skill = parse_skill(skill_text(
        "name: my-skill\ndescription: d\nallowed-tools:\n  - Read\n  - Bash(git diff:*)\n"),
        path=PATH)
    assert skill.allowed_tools == ("Read", "Bash(git diff:*)")


def test_aimon_extensions() -> None:
    skill = parse_skill(skill_text(
        "name: my-skill\ndescription: d\narguments: [file, mode]\n"
        "invoke: {user: true, model: false}\nmax-iterations: 7\n"
        "execution: {mode: fork, agent: code-reviewer}\n"), path=PATH)
    assert skill.arguments == ("file", "mode")
    assert skill.invoke == SkillInvocation(user=True, model=False)
    assert skill.max_iterations == 7
    assert skill.execution == SkillExecution(mode="fork", agent="code-reviewer")


def test_claude_code_spellings() -> None:
    skill = parse_skill(skill_text(
        "name: my-skill\ndescription: d\ndisable-model-invocation: true\nuser-invocable: false\n"
        "argument-hint: [apk-file]\n"), path=PATH)
    assert skill.invoke == SkillInvocation(user=False, model=False)
    assert skill.argument_hint == "[apk-file]" and skill.warnings == ()


def test_hooks_parse_into_typed_actions() -> None:
    skill = parse_skill(skill_text(
        "name: my-skill\ndescription: d\nexecution: {mode: fork}\nhooks:\n"
        "  preTool:\n    - matcher: Bash(git push:*)\n      deny: not here\n"
        "    - matcher: Edit\n      shell: ./check.sh\n      timeout: 5\n"
        "  onStop:\n    - shell: ./done.sh\n"), path=PATH)
    assert skill.hooks.pre_tool == (
        DenyAction(matcher="Bash(git push:*)", reason="not here"),
        ShellAction(matcher="Edit", command="./check.sh", timeout_seconds=5.0),
    )
    assert skill.hooks.on_stop == (ShellAction(matcher=None, command="./done.sh"),)
    assert skill.warnings == ()


@pytest.mark.parametrize(("front", "fragment"), [
    ("name: other-name\ndescription: d\n", "differs from its folder 'my-skill'"),
    (f"name: {'a' * 70}\ndescription: d\n", "longer than 64 characters (70)"),
    ("name: My-Skill\ndescription: d\n",
     "name 'My-Skill' cannot be typed as a name; loaded as 'my-skill' (the folder's name)"),
    ("name: 'my skill'\ndescription: d\n", "name 'my skill' cannot be typed as a name"),
    ("name: my_skill\ndescription: d\n", "should be lower-case"),
    ("name: my--skill\ndescription: d\n", "single hyphens"),
    ("name: my-skill\ndescription: d\nversion: 2\ntype: tool\n", "unknown field(s) type, version"),
    ("description: d\n", "name is missing; using the folder name 'my-skill'"),
    (f"name: my-skill\ndescription: {'x' * 1100}\n", "longer than 1024 characters (1100)"),
    (f"name: my-skill\ndescription: d\ncompatibility: {'x' * 550}\n", "longer than 500"),
    ("name: my-skill\ndescription: d\nmetadata: hello\n", "metadata must be a mapping"),
    ("name: my-skill\ndescription: d\nhooks: {onStop: [{shell: x}]}\n", "only when execution"),
    ("name: my-skill\ndescription: d\nexecution: {agent: explore}\n",
     "execution.agent is used only when"),
])
def test_lenient_rules_load_with_a_warning_naming_the_file(front: str, fragment: str) -> None:
    skill = parse_skill(skill_text(front), path=PATH)
    assert any(fragment in w and w.startswith(f"{PATH}: ") for w in skill.warnings), skill.warnings


def test_unicode_names_follow_the_reference() -> None:
    folder = Path("/skills/мой-навык")
    skill = parse_skill(skill_text("name: мой-навык\ndescription: d\n"), path=folder / "SKILL.md")
    assert skill.warnings == ()


@pytest.mark.parametrize(("text", "fragment"), [
    ("no frontmatter here\n", "no YAML frontmatter"),
    ("---\nname: my-skill\ndescription: d\n", "no YAML frontmatter"),
    ("---\n- just\n- a list\n---\nbody\n", "must be a YAML mapping"),
    ("---\nname: my-skill\n---\nbody\n", "description is missing"),
    ("---\nname: my-skill\ndescription: ''\n---\nbody\n", "description must be a non-empty"),
    ("---\nname: my-skill\ndescription: [a]\n---\nbody\n", "description must be a non-empty"),
    ("---\nname: 5\ndescription: d\n---\nbody\n", "name must be a non-empty string"),
    ("---\nname: my-skill\ndescription: d\nexecution: {mode: async}\n---\nb\n",
     "execution.mode must be inline or fork, not 'async'"),
    ("---\nname: my-skill\ndescription: d\nexecution: {mode: fork, agnet: x}\n---\nb\n",
     "execution has unknown key(s) agnet"),
    ("---\nname: my-skill\ndescription: d\nexecution: fork\n---\nb\n", "execution must be a"),
    ("---\nname: my-skill\ndescription: d\ninvoke: {model: maybe}\n---\nb\n",
     "invoke.model must be true or false"),
    ("---\nname: my-skill\ndescription: d\ninvoke: {agent: true}\n---\nb\n",
     "invoke has unknown key(s) agent"),
    ("---\nname: my-skill\ndescription: d\nmax-iterations: 0\n---\nb\n",
     "max-iterations must be a positive whole number"),
    ("---\nname: my-skill\ndescription: d\narguments: [file-path]\n---\nb\n",
     "argument name 'file-path'"),
    ("---\nname: my-skill\ndescription: d\narguments: [a, a]\n---\nb\n", "lists a name twice"),
    ("---\nname: my-skill\ndescription: d\narguments: {a: 1}\n---\nb\n",
     "arguments must be a list"),
    ("---\nname: my-skill\ndescription: d\nallowed-tools: 5\n---\nb\n", "allowed-tools must"),
])
def test_errors_name_the_file_and_the_problem(text: str, fragment: str) -> None:
    with pytest.raises(SkillError) as info:
        parse_skill(text, path=PATH)
    assert str(info.value).startswith(f"{PATH}: ") and fragment in info.value.reason


@pytest.mark.parametrize(("hooks", "fragment"), [
    ("hooks: [x]", "hooks must be a mapping of events"),
    ("hooks: {beforeTool: []}", "unknown event(s) beforeTool"),
    ("hooks: {preTool: {shell: x}}", "hooks.preTool must be a list"),
    ("hooks: {preTool: [x]}", "hooks.preTool[0] must be a mapping"),
    ("hooks: {preTool: [{shell: x, deny: y}]}", "exactly one of deny or shell"),
    ("hooks: {preTool: [{matcher: Read}]}", "exactly one of deny or shell"),
    ("hooks: {postTool: [{deny: no}]}", "deny is possible only before a tool runs"),
    ("hooks: {onStart: [{matcher: Read, shell: x}]}", "matcher applies only to preTool"),
    ("hooks: {preTool: [{shell: x, timeout: -1}]}", "timeout must be a positive number"),
    ("hooks: {preTool: [{deny: r, timeout: 3}]}", "timeout applies only to shell"),
    ("hooks: {preTool: [{deny: ''}]}", "deny must give the reason"),
    ("hooks: {preTool: [{shell: ''}]}", "shell must be a command line"),
    ("hooks: {preTool: [{shell: x, when: y}]}", "unknown key(s) when"),
    ("hooks: {PreToolUse: [{matcher: 'Notebook.*', hooks: [{command: x}]}]}",
     "must be tool names joined by |"),
    ("hooks: {PreToolUse: [{command: x}]}", "must be a mapping with hooks: a list"),
    ("hooks: {Stop: [{matcher: Bash, hooks: [{command: x}]}]}",
     "matcher applies only to PreToolUse"),
    ("hooks: {PostToolUse: [{hooks: [{type: command}]}]}", "shell must be a command line"),
    ("hooks: {PostToolUse: [{hooks: [{command: x, if: y}]}]}", "unknown key(s) if"),
    ("hooks: {BeforeEverything: []}", "unknown event(s) BeforeEverything"),
])
def test_malformed_hooks_are_errors(hooks: str, fragment: str) -> None:
    text = f"---\nname: my-skill\ndescription: d\nexecution: {{mode: fork}}\n{hooks}\n---\nb\n"
    with pytest.raises(SkillError) as info:
        parse_skill(text, path=PATH)
    assert fragment in info.value.reason


# Claude Code's hook names and shape (PreToolUse: [{matcher, hooks: [{type, command}]}]) read
# into the same actions as aimon's (preTool: [{matcher, shell}]).
CLAUDE_HOOKS = """\
hooks:
  PreToolUse:
    - matcher: "Write|Edit"
      hooks:
        - type: command
          command: ./check.sh
          timeout: 5
  PostToolUse:
    - matcher: "*"
      hooks:
        - {type: command, command: ./after.sh}
        - {type: prompt, prompt: Was it fine?}
  Stop:
    - hooks:
        - {type: command, command: ./done.sh}
  SubagentStart:
    - hooks:
        - {type: command, command: ./start.sh}
  UserPromptSubmit:
    - hooks:
        - {type: command, command: ./never.sh}
"""


def test_claude_code_hook_names_and_shape() -> None:
    skill = parse_skill(skill_text(
        "name: my-skill\ndescription: d\nexecution: {mode: fork, agent: explore}\n"
        + CLAUDE_HOOKS), path=PATH)
    assert skill.hooks.pre_tool == (
        ShellAction(matcher="Write", command="./check.sh", timeout_seconds=5.0),
        ShellAction(matcher="Edit", command="./check.sh", timeout_seconds=5.0))
    assert skill.hooks.post_tool == (ShellAction(matcher=None, command="./after.sh"),)
    assert skill.hooks.on_stop == (ShellAction(matcher=None, command="./done.sh"),)
    assert skill.hooks.on_start == (ShellAction(matcher=None, command="./start.sh"),)
    assert [w.split(": ", 1)[1] for w in skill.warnings] == [
        "hooks.PostToolUse[0].hooks[1]: 'prompt' hooks are not run by aimon; skipped",
        "hooks.UserPromptSubmit: never happens inside a skill or subagent here; skipped"]


def test_both_names_of_one_event_add_up() -> None:
    skill = parse_skill(skill_text(
        "name: my-skill\ndescription: d\nexecution: {mode: fork, agent: explore}\n"
        "hooks:\n  onStop: [{shell: ./a.sh}]\n  Stop: [{hooks: [{command: ./b.sh}]}]\n"),
        path=PATH)
    assert [a.command for a in skill.hooks.on_stop if isinstance(a, ShellAction)] == [
        "./a.sh", "./b.sh"]
