"""Custom slash commands from `commands/` folders: names, frontmatter, precedence, expansion."""

from __future__ import annotations

import asyncio
from pathlib import Path

from aimon_core.command import (
    command_roots,
    custom_commands,
    expand,
    fill_arguments,
    load_custom_commands,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_subfolders_are_namespaces_and_aimon_wins_a_name(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    write(root / ".claude" / "commands" / "Frontend" / "Component.md", "Make $ARGUMENTS")
    write(root / ".claude" / "commands" / "fix.md", "claude's fix")
    write(root / ".aimon" / "commands" / "fix.md", "---\ndescription: aimon's fix\n---\nfix")
    commands, failures = load_custom_commands(command_roots(root, tmp_path / 'claude-user'))
    assert failures == ()
    by_name = {c.name: c for c in commands}
    assert set(by_name) == {"fix", "frontend:component"}
    assert by_name["fix"].description == "aimon's fix"
    assert by_name["frontend:component"].description == "Make $ARGUMENTS"  # its first line


def test_frontmatter_fields_are_read(tmp_path: Path) -> None:
    write(tmp_path / "c" / "ship.md",
          "---\ndescription: Ship it\nargument-hint: <version>\n"
          "allowed-tools: Bash(git tag:*), Bash(git push:*), Read\nmodel: haiku\n---\nBody\n")
    [command], _ = load_custom_commands([tmp_path / "c"])
    assert (command.description, command.argument_hint, command.model) == (
        "Ship it", "<version>", "haiku")
    assert command.allowed_tools == ("Bash(git tag:*)", "Bash(git push:*)", "Read")
    assert command.body == "Body\n"


def test_a_broken_file_is_skipped_with_a_reason(tmp_path: Path) -> None:
    write(tmp_path / "c" / "bad.md", "---\n- a list\n---\nx")
    write(tmp_path / "c" / "good.md", "fine")
    write(tmp_path / "c" / "odd.md", "---\ndescription: [unclosed\n---\nx")
    commands, failures = load_custom_commands([tmp_path / "c"])
    assert [(c.name, c.description) for c in commands] == [("good", "fine"),
                                                           ("odd", "[unclosed")]
    assert "must be a YAML mapping" in failures[0].reason
    assert "description: not valid YAML" in commands[1].warnings[0]


def test_arguments_fill_like_claude_code() -> None:
    assert fill_arguments("Fix #$1 in $2 ($ARGUMENTS)", "12 'src/a b.py'") == (
        "Fix #12 in src/a b.py (12 'src/a b.py')")
    assert fill_arguments("Review this.", "carefully") == "Review this.\n\nARGUMENTS: carefully"
    assert fill_arguments("No args: $3.", "") == "No args: ."


def test_files_outside_the_project_are_not_attached(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    write(root / "notes.md", "inside")
    write(tmp_path / "secret.txt", "outside")
    [command], _ = load_custom_commands([write(root / "c" / "x.md",
                                               "See @notes.md and @../secret.txt").parent])
    prompt, notes = asyncio.run(expand(command, "", root, None))
    assert "Contents of notes.md:\n```\ninside\n```" in prompt
    assert "outside" not in prompt
    assert notes == [f"@../secret.txt: not attached: it leads out of {root} "
                     f"(to {tmp_path / 'secret.txt'})"]


def test_bang_commands_need_a_session(tmp_path: Path) -> None:
    [command], _ = load_custom_commands([write(tmp_path / "c" / "x.md", "Now: !`date`").parent])
    prompt, notes = asyncio.run(expand(command, "", tmp_path, None))
    assert prompt.startswith("Now: (the command `date` was not run: ")
    assert notes == ["not run: !`date` (no session and Bash tool to run it with)"]


def test_an_escaped_bang_is_text_and_never_runs(tmp_path: Path) -> None:
    body = "Write \\!`git status` in the docs; run !`date`; keep \\!`rm -rf x` too."
    [command], _ = load_custom_commands([write(tmp_path / "c" / "x.md", body).parent])
    prompt, notes = asyncio.run(expand(command, "", tmp_path, None))
    assert prompt.startswith("Write !`git status` in the docs; run (the command `date` was not")
    assert prompt.endswith("; keep !`rm -rf x` too.")
    assert notes == ["not run: !`date` (no session and Bash tool to run it with)"]


def test_names_taken_by_other_commands_are_reported(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    write(root / ".claude" / "commands" / "help.md", "mine")
    write(root / ".claude" / "commands" / "deploy.md", "deploy")
    commands, notes = custom_commands(root, taken=("help",), claude_user=tmp_path / "cu")
    assert [c.name for c in commands] == ["deploy"]
    assert [c.origin for c in commands] == ["command .claude"]
    assert notes == (f"{root / '.claude' / 'commands' / 'help.md'}: not used: /help is already "
                     "a command of aimon or of a skill (rename the file to use it)",)


def test_the_projects_command_replaces_a_built_in_skill_not_a_system_command(
        tmp_path: Path) -> None:
    from aimon_core.llm import ScriptedLLMClient
    from aimon_core.runtime import RuntimeParts, build_runtime

    root = tmp_path / "proj"
    write(root / ".claude" / "commands" / "commit.md", "Commit our way: $ARGUMENTS")
    write(root / ".claude" / "commands" / "help.md", "my help")
    assembly = build_runtime(root, parts=RuntimeParts(client=ScriptedLLMClient(steps=[])))
    assert assembly.commands is not None
    commit, help_command = assembly.commands.get("commit"), assembly.commands.get("help")
    assert commit is not None and commit.origin == "command .claude"
    assert help_command is not None and help_command.origin == ""
    help_file = root / ".claude" / "commands" / "help.md"
    assert f"{help_file}: not used: /help is already a command of aimon or of a skill " \
           "(rename the file to use it)" in assembly.notices
    # A skill of the project still wins over a command of the same name, as in Claude Code.
    skill = root / ".claude" / "skills" / "commit" / "SKILL.md"
    write(skill, "---\nname: commit\ndescription: Our commit skill.\n---\nCommit as a skill.\n")
    assembly = build_runtime(root, parts=RuntimeParts(client=ScriptedLLMClient(steps=[])))
    assert assembly.commands is not None
    winner = assembly.commands.get("commit")
    assert winner is not None and winner.origin == "skill commit"
