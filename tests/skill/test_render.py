"""Rendering a skill body: arguments, variables, supporting files; narrowing a fork's tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from aimon_core.skill import (
    RenderContext,
    Skill,
    ToolIntersectionError,
    intersect_tools,
    render_skill,
    supporting_files,
)

CTX = RenderContext(agent_runtime_id="rt-1", user="ada", session_id="s-42")


def make_skill(body: str, tmp_path: Path, arguments: tuple[str, ...] = ()) -> Skill:
    folder = tmp_path / "my-skill"
    folder.mkdir(exist_ok=True)
    return Skill(name="my-skill", description="d", body=body, path=folder / "SKILL.md",
                 directory=folder, arguments=arguments)


def test_positional_arguments_split_like_a_shell(tmp_path: Path) -> None:
    skill = make_skill("first=$1 second=$2 third=[$3]", tmp_path)
    assert render_skill(skill, 'a.py "two words"', CTX) == "first=a.py second=two words third=[]\n"


def test_unbalanced_quotes_fall_back_to_spaces(tmp_path: Path) -> None:
    skill = make_skill("$1|$2", tmp_path)
    assert render_skill(skill, "it's fine", CTX) == "it's|fine\n"


def test_arguments_is_the_whole_string(tmp_path: Path) -> None:
    skill = make_skill("Review: $ARGUMENTS (${ARGUMENTS})", tmp_path)
    assert render_skill(skill, ' src/a.py  "b c" ', CTX) == (
        'Review: src/a.py  "b c" (src/a.py  "b c")\n')


def test_named_arguments_map_to_positions(tmp_path: Path) -> None:
    skill = make_skill("file=$file mode=${mode} missing=$extra $filename", tmp_path,
                       arguments=("file", "mode", "extra"))
    assert render_skill(skill, "x.py fast", CTX) == "file=x.py mode=fast missing= $filename\n"


def test_aimon_variables(tmp_path: Path) -> None:
    skill = make_skill("${AIMON_SKILL_DIR}|${AIMON_AGENT_RUNTIME_ID}|${AIMON_SESSION_ID}|"
                       "${AIMON_EXECUTION_ID}|${AIMON_USER}", tmp_path)
    assert render_skill(skill, "", CTX) == f"{tmp_path / 'my-skill'}|rt-1|s-42||ada\n"
    forked = RenderContext(agent_runtime_id="rt-2", user="ada", execution_id="e-7",
                           skill_dir=Path("/copy"))
    assert render_skill(skill, "", forked) == "/copy|rt-2||e-7|ada\n"


def test_exactly_one_of_session_and_execution() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        RenderContext(agent_runtime_id="r", user="u")
    with pytest.raises(ValueError, match="exactly one"):
        RenderContext(agent_runtime_id="r", user="u", session_id="s", execution_id="e")


def test_unknown_variables_stay_as_written(tmp_path: Path) -> None:
    # aimon has no plugins: a skill about writing one keeps ${CLAUDE_PLUGIN_ROOT} in its
    # examples.
    skill = make_skill("${HOME} $HOME ${CLAUDE_PLUGIN_ROOT} $0 $$", tmp_path)
    assert render_skill(skill, "", CTX) == "${HOME} $HOME ${CLAUDE_PLUGIN_ROOT} $0 $$\n"


def test_claude_codes_variables(tmp_path: Path) -> None:
    skill = make_skill("${CLAUDE_SKILL_DIR}/x.sh|${CLAUDE_SESSION_ID}", tmp_path)
    assert render_skill(skill, "", CTX) == f"{tmp_path / 'my-skill'}/x.sh|s-42\n"


def test_unmentioned_arguments_are_appended(tmp_path: Path) -> None:
    skill = make_skill("Do the thing.", tmp_path)
    assert render_skill(skill, "on main", CTX) == "Do the thing.\n\nARGUMENTS: on main\n"
    assert render_skill(skill, "  ", CTX) == "Do the thing.\n"
    mentions = make_skill("Only $1.", tmp_path)
    assert render_skill(mentions, "a b", CTX) == "Only a.\n"


def test_supporting_files_are_listed_by_name_standard_folders_first(tmp_path: Path) -> None:
    skill = make_skill("Body", tmp_path)
    for relative in ("scripts/run.py", "references/api.md", "assets/logo.png", "notes.md",
                     "examples/deep/x.txt", ".hidden", "node_modules/pkg/index.js"):
        (skill.directory / relative).parent.mkdir(parents=True, exist_ok=True)
        (skill.directory / relative).write_text("x")
    (skill.directory / "SKILL.md").write_text("---\n---\n")
    found = supporting_files(skill.directory)
    names = [p.relative_to(skill.directory).as_posix() for p in found]
    assert names == ["notes.md", "assets/logo.png", "examples/deep/x.txt", "references/api.md",
                     "scripts/run.py"]
    text = render_skill(skill, "", CTX)
    assert text == (
        f"Body\n\nThis skill's files, by name under its base directory {skill.directory} "
        "(read or run them as the instructions say):\n"
        "Available Files:\n- assets/logo.png\n- references/api.md\n- scripts/run.py\n"
        "Other Files:\n- notes.md\n- examples/deep/x.txt\n")


@pytest.mark.parametrize(("skill_tools", "agent_tools", "expected"), [
    # An empty list means no restriction from that side.
    ((), ("Read", "Bash"), ("Read", "Bash")),
    (("Read",), None, ("Read",)),
    (("Read", "Grep"), ("Grep", "Read", "Write"), ("Read", "Grep")),
    # A bare tool on one side and a pattern on the other keeps the pattern.
    (("Bash",), ("Bash(git:*)", "Read"), ("Bash(git:*)",)),
    (("Bash(git log:*)", "Read"), ("Bash", "Read"), ("Bash(git log:*)", "Read")),
    # Two different patterns for one tool are dropped; the same pattern stays.
    (("Bash(git:*)", "Read"), ("Bash(npm:*)", "Read"), ("Read",)),
    (("Bash(git:*)", "Bash(jq:*)"), ("Bash(jq:*)",), ("Bash(jq:*)",)),
])
def test_intersection_table(skill_tools: tuple[str, ...], agent_tools: tuple[str, ...] | None,
                            expected: tuple[str, ...]) -> None:
    assert intersect_tools(skill_tools, agent_tools) == expected


@pytest.mark.parametrize(("skill_tools", "agent_tools"), [
    (("Write",), ("Read", "Grep")),
    (("Bash(git:*)",), ("Bash(npm:*)",)),
])
def test_disjoint_lists_fail_naming_both(skill_tools: tuple[str, ...],
                                         agent_tools: tuple[str, ...]) -> None:
    with pytest.raises(ToolIntersectionError) as info:
        intersect_tools(skill_tools, agent_tools)
    assert repr(list(skill_tools)) in str(info.value) and repr(list(agent_tools)) in str(info.value)
