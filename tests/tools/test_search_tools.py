"""Glob and Grep, run by the real ripgrep binary on real files."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from aimon_core.tools import ToolResult

RunTool = Callable[..., ToolResult]


def make_tree(root: Path, files: dict[str, str]) -> None:
    """Create files in order; each is one second newer than the one before."""
    for index, (name, text) in enumerate(files.items()):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))


@pytest.fixture
def tree(project: Path) -> Path:
    make_tree(
        project,
        {
            ".gitignore": "build/\n*.log\n",
            "a.py": "import os\nprint('hello')\n",
            "src/b.py": "def hello():\n    return 'Hello'\n",
            "src/sub/c.py": "HELLO = 1\n",
            "src/web/x.ts": "const hello = 1;\n",
            "src/web/y.tsx": "export const y = 2;\n",
            "build/d.py": "hello = 'ignored'\n",
            "debug.log": "hello log\n",
            ".hidden/e.py": "hello = 'hidden'\n",
            ".git/z.py": "hello = 'git internals'\n",
            "notes.md": "first\nsecond hello\nthird\nfourth\nfifth\n",
        },
    )
    return project


def lines(result: ToolResult) -> list[str]:
    assert not result.is_error, result.text
    return result.text.splitlines()


# ---------------------------------------------------------------------------- Glob


def test_glob_recursive_newest_first_respecting_gitignore(tree: Path, run_tool: RunTool) -> None:
    found = lines(run_tool("Glob", pattern="**/*.py"))
    assert found == [
        str(tree / ".hidden/e.py"),
        str(tree / "src/sub/c.py"),
        str(tree / "src/b.py"),
        str(tree / "a.py"),
    ]


def test_glob_without_slash_matches_top_level_only(tree: Path, run_tool: RunTool) -> None:
    assert lines(run_tool("Glob", pattern="*.py")) == [str(tree / "a.py")]
    assert lines(run_tool("Glob", pattern="*.py", path="src")) == [str(tree / "src/b.py")]


def test_glob_braces_and_subdirectory_patterns(tree: Path, run_tool: RunTool) -> None:
    assert lines(run_tool("Glob", pattern="src/**/*.{ts,tsx}")) == [
        str(tree / "src/web/y.tsx"),
        str(tree / "src/web/x.ts"),
    ]
    absolute = run_tool("Glob", pattern=str(tree / "src/sub/*.py"))
    assert lines(absolute) == [str(tree / "src/sub/c.py")]


def test_glob_match_all_still_skips_ignored_files(tree: Path, run_tool: RunTool) -> None:
    found = lines(run_tool("Glob", pattern="**"))
    assert str(tree / "notes.md") in found
    assert str(tree / ".gitignore") in found
    assert not [f for f in found if "build" in f or f.endswith(".log") or "/.git/" in f]
    assert lines(run_tool("Glob", pattern="**/[!ab]*.py")) == [
        str(tree / ".hidden/e.py"),
        str(tree / "src/sub/c.py"),
    ]


def test_glob_caps_results(project: Path, run_tool: RunTool) -> None:
    make_tree(project, {f"f{i:03}.txt": "" for i in range(120)})
    found = lines(run_tool("Glob", pattern="*.txt"))
    assert len(found) == 101
    assert found[0] == str(project / "f119.txt")
    assert "Showing the 100 most recently modified of 120 files" in found[-1]


def test_glob_no_match_and_bad_input(tree: Path, tmp_path: Path, run_tool: RunTool) -> None:
    assert "No files found" in run_tool("Glob", pattern="**/*.rs").text
    assert "No files found" in run_tool("Glob", pattern="[").text
    assert "outside the project" in run_tool("Glob", pattern="*", path=str(tmp_path)).text
    assert "not a directory" in run_tool("Glob", pattern="*", path="a.py").text
    assert "does not exist" in run_tool("Glob", pattern="*", path="nope").text
    assert "outside" in run_tool("Glob", pattern="/etc/*").text


# ---------------------------------------------------------------------------- Grep


def test_grep_files_with_matches_newest_first(tree: Path, run_tool: RunTool) -> None:
    found = lines(run_tool("Grep", pattern="hello"))
    assert found == [
        "Found 5 files",
        str(tree / "notes.md"),
        str(tree / ".hidden/e.py"),
        str(tree / "src/web/x.ts"),
        str(tree / "src/b.py"),
        str(tree / "a.py"),
    ]


def test_grep_case_insensitive_and_type(tree: Path, run_tool: RunTool) -> None:
    found = lines(run_tool("Grep", pattern="hello", type="py", **{"-i": True}))
    assert found[0] == "Found 4 files"
    assert str(tree / "src/sub/c.py") in found
    assert str(tree / "notes.md") not in found
    assert lines(run_tool("Grep", pattern="hello", glob="*.ts")) == [
        "Found 1 file",
        str(tree / "src/web/x.ts"),
    ]


def test_grep_glob_keeps_ignored_files_out(tree: Path, run_tool: RunTool) -> None:
    everything = lines(run_tool("Grep", pattern="hello", glob="*"))
    assert everything[0] == "Found 5 files"
    assert not [f for f in everything if "build" in f or f.endswith(".log")]
    assert lines(run_tool("Grep", pattern="hello", glob="src/**/*.ts")) == [
        "Found 1 file",
        str(tree / "src/web/x.ts"),
    ]
    both = run_tool("Grep", pattern="hello", glob="*.py", type="ts")
    assert both.is_error
    assert "not both" in both.text


def test_grep_content_with_line_numbers_and_context(tree: Path, run_tool: RunTool) -> None:
    target = str(tree / "notes.md")
    plain = run_tool("Grep", pattern="second", path="notes.md", output_mode="content")
    assert lines(plain) == ["2:second hello"]
    context = run_tool(
        "Grep", pattern="second", path=target, output_mode="content", **{"-A": 1, "-B": 1}
    )
    assert lines(context) == ["1-first", "2:second hello", "3-third"]
    around = run_tool("Grep", pattern="third", path=target, output_mode="content", **{"-C": 2})
    assert lines(around) == ["1-first", "2-second hello", "3:third", "4-fourth", "5-fifth"]
    unnumbered = run_tool(
        "Grep", pattern="second", path=target, output_mode="content", **{"-n": False}
    )
    assert lines(unnumbered) == ["second hello"]


def test_grep_content_over_directory_names_files(tree: Path, run_tool: RunTool) -> None:
    found = lines(run_tool("Grep", pattern="^HELLO", path="src", output_mode="content"))
    assert found == [f"{tree / 'src/sub/c.py'}:1:HELLO = 1"]


def test_grep_count_and_head_limit(tree: Path, run_tool: RunTool) -> None:
    counted = run_tool("Grep", pattern="i", path="notes.md", output_mode="count")
    assert lines(counted)[0] == "3"
    assert "Found 3 matching lines in 1 file(s)." in counted.text
    limited = lines(run_tool("Grep", pattern="hello", head_limit=2))
    assert limited == [
        "Found 5 files",
        str(tree / "notes.md"),
        str(tree / ".hidden/e.py"),
        "(head_limit: 3 more entries)",
    ]


def test_grep_multiline(tree: Path, run_tool: RunTool) -> None:
    single = run_tool("Grep", pattern="first.second", path="notes.md")
    assert single.text == "No matches found."
    multi = run_tool("Grep", pattern="first.second", path="notes.md", multiline=True)
    assert lines(multi) == ["Found 1 file", str(tree / "notes.md")]


def test_grep_pattern_starting_with_dash(project: Path, run_tool: RunTool) -> None:
    (project / "opts.txt").write_text("use --force here\n")
    found = run_tool("Grep", pattern="--force", output_mode="content", path="opts.txt")
    assert lines(found) == ["1:use --force here"]


def test_grep_errors(tree: Path, tmp_path: Path, run_tool: RunTool) -> None:
    bad_regex = run_tool("Grep", pattern="(unclosed")
    assert bad_regex.is_error
    assert "regex" in bad_regex.text
    bad_type = run_tool("Grep", pattern="x", type="no-such-type")
    assert bad_type.is_error
    assert "no-such-type" in bad_type.text
    assert "outside the project" in run_tool("Grep", pattern="x", path=str(tmp_path)).text
    assert "does not exist" in run_tool("Grep", pattern="x", path="missing").text


def test_grep_without_ripgrep_names_the_package(
    tree: Path, tmp_path: Path, run_tool: RunTool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "nowhere" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    result = run_tool("Grep", pattern="hello")
    assert result.is_error
    assert "ripgrep" in result.text
    assert "pip install ripgrep" in result.text
