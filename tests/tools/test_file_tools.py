"""Read, Write and Edit on real files."""

from __future__ import annotations

import base64
import os
import stat
from collections.abc import Callable
from pathlib import Path

from aimon_core.llm import ImageBlock, TextBlock
from aimon_core.tools import ToolResult

RunTool = Callable[..., ToolResult]

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(40)


# ---------------------------------------------------------------------------- Read


def test_read_numbers_lines_like_cat_n(project: Path, run_tool: RunTool) -> None:
    (project / "a.txt").write_text("one\n\ttwo\nthree\n")
    result = run_tool("Read", file_path="a.txt")
    assert not result.is_error
    assert result.text == "     1\tone\n     2\t\ttwo\n     3\tthree"
    assert result.data["total_lines"] == 3


def test_read_crlf_file_without_carriage_returns(project: Path, run_tool: RunTool) -> None:
    (project / "w.txt").write_bytes(b"a\r\nb\r\n")
    assert run_tool("Read", file_path=str(project / "w.txt")).text == "     1\ta\n     2\tb"


def test_read_offset_and_limit(project: Path, run_tool: RunTool) -> None:
    (project / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = run_tool("Read", file_path="n.txt", offset=3, limit=2)
    assert result.text.splitlines()[:2] == ["     3\tline 3", "     4\tline 4"]
    assert "Showing lines 3-4 of 10" in result.text
    assert "offset=5" in result.text
    past = run_tool("Read", file_path="n.txt", offset=11)
    assert past.is_error
    assert "has 10 lines" in past.text


def test_read_defaults_to_2000_lines(project: Path, run_tool: RunTool) -> None:
    (project / "long.txt").write_text("x\n" * 2500)
    result = run_tool("Read", file_path="long.txt")
    assert "  2000\tx" in result.text
    assert "  2001\t" not in result.text
    assert "Showing lines 1-2000 of 2500" in result.text


def test_read_refuses_large_file_without_paging(project: Path, run_tool: RunTool) -> None:
    (project / "big.txt").write_text("0123456789\n" * 30_000)
    result = run_tool("Read", file_path="big.txt")
    assert result.is_error
    assert "256 KB" in result.text
    assert "offset" in result.text
    assert "limit" in result.text
    paged = run_tool("Read", file_path="big.txt", offset=29_999, limit=5)
    assert not paged.is_error
    assert paged.text == " 29999\t0123456789\n 30000\t0123456789"


def test_read_output_is_capped_even_when_paging(project: Path, run_tool: RunTool) -> None:
    (project / "wide.txt").write_text(("y" * 1500 + "\n") * 2000)
    result = run_tool("Read", file_path="wide.txt", offset=1, limit=2000)
    assert len(result.text) < 110_000
    assert "Call Read with offset=" in result.text


def test_read_cuts_long_lines(project: Path, run_tool: RunTool) -> None:
    (project / "min.js").write_text("a" * 5000 + "\nshort\n")
    result = run_tool("Read", file_path="min.js")
    first, second = result.text.splitlines()
    assert first == "     1\t" + "a" * 2000 + "... [line cut: 5000 characters in all]"
    assert second == "     2\tshort"


def test_read_image_returns_image_block(project: Path, run_tool: RunTool) -> None:
    (project / "pic.dat").write_bytes(PNG)
    result = run_tool("Read", file_path="pic.dat")
    assert not result.is_error
    note, image = result.content
    assert isinstance(note, TextBlock)
    assert "image/png" in note.text
    assert isinstance(image, ImageBlock)
    assert image.media_type == "image/png"
    assert base64.b64decode(image.data) == PNG


def test_read_refuses_binary_directory_and_missing(project: Path, run_tool: RunTool) -> None:
    (project / "blob.bin").write_bytes(b"ELF\x00\x01\x02")
    (project / "dir").mkdir()
    binary = run_tool("Read", file_path="blob.bin")
    assert binary.is_error
    assert "binary" in binary.text
    directory = run_tool("Read", file_path="dir")
    assert directory.is_error
    assert "directory" in directory.text
    assert "Glob" in directory.text
    missing = run_tool("Read", file_path="nope.txt")
    assert missing.is_error
    assert "does not exist" in missing.text


def test_read_empty_file_is_noted(project: Path, run_tool: RunTool) -> None:
    (project / "empty.txt").write_text("")
    result = run_tool("Read", file_path="empty.txt")
    assert not result.is_error
    assert "empty" in result.text
    assert not run_tool("Write", file_path="empty.txt", content="now\n").is_error


def test_read_refuses_paths_out_of_project(
    project: Path, tmp_path: Path, run_tool: RunTool
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    (project / "link").symlink_to(secret)
    for path in ("../secret.txt", str(secret), "link", "a\x00b"):
        result = run_tool("Read", file_path=path)
        assert result.is_error, path
        assert "refused" in result.text


def test_read_through_symlink_inside_project(project: Path, run_tool: RunTool) -> None:
    (project / "real.txt").write_text("content\n")
    (project / "alias.txt").symlink_to(project / "real.txt")
    assert run_tool("Read", file_path="alias.txt").text == "     1\tcontent"


# ---------------------------------------------------------------------------- Write


def test_write_new_file_creates_parents(project: Path, run_tool: RunTool) -> None:
    result = run_tool("Write", file_path="pkg/sub/mod.py", content="x = 1\n")
    assert not result.is_error
    assert (project / "pkg" / "sub" / "mod.py").read_text() == "x = 1\n"
    assert result.data["created"] is True
    assert "+x = 1" in result.data["diff"]
    assert result.data["path"] == str(project / "pkg" / "sub" / "mod.py")


def test_write_existing_file_needs_a_read(project: Path, run_tool: RunTool) -> None:
    target = project / "a.txt"
    target.write_text("old\n")
    refused = run_tool("Write", file_path="a.txt", content="new\n")
    assert refused.is_error
    assert "has not been read" in refused.text
    assert target.read_text() == "old\n"
    run_tool("Read", file_path="a.txt")
    done = run_tool("Write", file_path="a.txt", content="new\n")
    assert not done.is_error
    assert target.read_text() == "new\n"
    assert "-old\n+new" in done.data["diff"]


def test_write_refuses_stale_file_until_read_again(project: Path, run_tool: RunTool) -> None:
    target = project / "a.txt"
    target.write_text("v1\n")
    run_tool("Read", file_path="a.txt")
    target.write_text("v2 by the user\n")
    stale = run_tool("Write", file_path="a.txt", content="mine\n")
    assert stale.is_error
    assert "changed since it was last read" in stale.text
    assert "Read it again" in stale.text
    assert target.read_text() == "v2 by the user\n"
    run_tool("Read", file_path="a.txt")
    assert not run_tool("Write", file_path="a.txt", content="mine\n").is_error


def test_write_accepts_touched_but_unchanged_file(project: Path, run_tool: RunTool) -> None:
    target = project / "a.txt"
    target.write_text("same\n")
    run_tool("Read", file_path="a.txt")
    os.utime(target, (1_000_000, 1_000_000))
    assert not run_tool("Write", file_path="a.txt", content="new\n").is_error


def test_write_keeps_mode_of_existing_file(project: Path, run_tool: RunTool) -> None:
    script = project / "run.sh"
    script.write_text("echo 1\n")
    script.chmod(0o755)
    run_tool("Read", file_path="run.sh")
    run_tool("Write", file_path="run.sh", content="echo 2\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


def test_write_refuses_escapes_and_directories(
    project: Path, tmp_path: Path, run_tool: RunTool
) -> None:
    (project / "out").symlink_to(tmp_path)
    for path in ("../evil.txt", str(tmp_path / "evil.txt"), "out/evil.txt"):
        result = run_tool("Write", file_path=path, content="x")
        assert result.is_error, path
        assert "outside the project" in result.text
    assert not (tmp_path / "evil.txt").exists()
    (project / "d").mkdir()
    assert "directory" in run_tool("Write", file_path="d", content="x").text


# ---------------------------------------------------------------------------- Edit


def _read(run_tool: RunTool, path: str) -> None:
    assert not run_tool("Read", file_path=path).is_error


def test_edit_replaces_unique_text_and_shows_snippet(project: Path, run_tool: RunTool) -> None:
    target = project / "m.py"
    target.write_text("".join(f"line{i}\n" for i in range(1, 21)))
    _read(run_tool, "m.py")
    result = run_tool("Edit", file_path="m.py", old_string="line10\n", new_string="ten\nTEN\n")
    assert not result.is_error
    assert "line10" not in target.read_text()
    assert "     6\tline6" in result.text
    assert "    10\tten\n    11\tTEN" in result.text
    assert "    15\tline14" in result.text
    assert "     5\t" not in result.text
    assert "-line10\n+ten\n+TEN" in result.data["diff"]
    # The edit updated the read tracking: a second edit needs no new Read.
    again = run_tool("Edit", file_path="m.py", old_string="TEN", new_string="10")
    assert not again.is_error


def test_edit_refuses_missing_or_ambiguous_old_string(project: Path, run_tool: RunTool) -> None:
    target = project / "a.py"
    target.write_text("x = 1\nx = 1\nx = 1\n")
    _read(run_tool, "a.py")
    missing = run_tool("Edit", file_path="a.py", old_string="y = 2", new_string="y = 3")
    assert missing.is_error
    assert "not found" in missing.text
    many = run_tool("Edit", file_path="a.py", old_string="x = 1", new_string="x = 2")
    assert many.is_error
    assert "occurs 3 times" in many.text
    assert "replace_all" in many.text
    assert target.read_text() == "x = 1\nx = 1\nx = 1\n"
    result = run_tool(
        "Edit", file_path="a.py", old_string="x = 1", new_string="x = 2", replace_all=True
    )
    assert not result.is_error
    assert result.data["replacements"] == 3
    assert target.read_text() == "x = 2\nx = 2\nx = 2\n"


def test_edit_refuses_same_strings_and_empty_old_on_existing(
    project: Path, run_tool: RunTool
) -> None:
    (project / "a.txt").write_text("abc\n")
    _read(run_tool, "a.txt")
    same = run_tool("Edit", file_path="a.txt", old_string="abc", new_string="abc")
    assert same.is_error
    assert "the same" in same.text
    empty = run_tool("Edit", file_path="a.txt", old_string="", new_string="x")
    assert empty.is_error
    assert "already exists" in empty.text


def test_edit_with_empty_old_string_creates_missing_file(project: Path, run_tool: RunTool) -> None:
    result = run_tool("Edit", file_path="new/file.txt", old_string="", new_string="hi\n")
    assert not result.is_error
    assert (project / "new" / "file.txt").read_text() == "hi\n"
    missing = run_tool("Edit", file_path="other.txt", old_string="a", new_string="b")
    assert missing.is_error
    assert "does not exist" in missing.text


def test_edit_needs_fresh_read(project: Path, run_tool: RunTool) -> None:
    target = project / "a.txt"
    target.write_text("one\n")
    unread = run_tool("Edit", file_path="a.txt", old_string="one", new_string="two")
    assert unread.is_error
    assert "has not been read" in unread.text
    _read(run_tool, "a.txt")
    target.write_text("one\nchanged\n")
    stale = run_tool("Edit", file_path="a.txt", old_string="one", new_string="two")
    assert stale.is_error
    assert "changed since" in stale.text
    assert target.read_text() == "one\nchanged\n"


def test_edit_keeps_crlf_line_endings(project: Path, run_tool: RunTool) -> None:
    target = project / "w.txt"
    target.write_bytes(b"a\r\nb\r\nc\r\n")
    _read(run_tool, "w.txt")
    result = run_tool("Edit", file_path="w.txt", old_string="a\nb", new_string="A\nB")
    assert not result.is_error
    assert target.read_bytes() == b"A\r\nB\r\nc\r\n"


def test_edit_keeps_undecodable_bytes(project: Path, run_tool: RunTool) -> None:
    target = project / "latin.txt"
    target.write_bytes(b"caf\xe9\nname = 1\n")
    _read(run_tool, "latin.txt")
    run_tool("Edit", file_path="latin.txt", old_string="name = 1", new_string="name = 2")
    assert target.read_bytes() == b"caf\xe9\nname = 2\n"


def test_edit_through_symlink_inside_project_changes_target(
    project: Path, run_tool: RunTool
) -> None:
    (project / "real.txt").write_text("old\n")
    (project / "alias.txt").symlink_to(project / "real.txt")
    _read(run_tool, "alias.txt")
    assert not run_tool("Edit", file_path="alias.txt", old_string="old", new_string="new").is_error
    assert (project / "real.txt").read_text() == "new\n"
    assert (project / "alias.txt").is_symlink()
