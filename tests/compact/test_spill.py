"""Large tool results go to a file in the session's folder; the model gets head and tail."""

from __future__ import annotations

import asyncio
from pathlib import Path

from aimon_core.compact import CompactionSettings, spill_large_result, spill_path, text_tokens
from aimon_core.llm import ImageBlock, TextBlock, ToolResultBlock

SETTINGS = CompactionSettings(result_limit_tokens=1_000, spill_head_chars=300,
                              spill_tail_chars=200)


def result(text: str, *extra: ImageBlock) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id="toolu_01/../x", content=(TextBlock(text=text), *extra))


def big_output() -> str:
    return "".join(f"line {n:05d} of the build log\n" for n in range(2_000))


def test_a_result_under_the_limit_is_left_alone(tmp_path: Path) -> None:
    block = result("x" * 3_999)
    assert asyncio.run(spill_large_result(block, directory=tmp_path, settings=SETTINGS)) is block
    assert not (tmp_path / "tool-results").exists()


def test_a_large_result_is_saved_whole_and_shown_as_head_and_tail(tmp_path: Path) -> None:
    text = big_output()
    image = ImageBlock(media_type="image/png", data="AAAA")
    spilled = asyncio.run(
        spill_large_result(result(text, image), directory=tmp_path, settings=SETTINGS)
    )
    path = spill_path(tmp_path, "toolu_01/../x")
    assert path.parent == tmp_path / "tool-results"  # the id cannot escape the folder
    assert path.read_text() == text
    assert spilled.tool_use_id == "toolu_01/../x"
    assert spilled.content[1] == image
    shown = spilled.text
    assert str(path) in shown and "Read tool" in shown and "offset and limit" in shown
    assert "line 00000 of the build log" in shown
    assert "line 01999 of the build log" in shown
    assert "line 01000 of the build log" not in shown
    assert text_tokens(shown) < SETTINGS.result_limit_tokens
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_a_result_that_cannot_be_saved_is_cut_down_and_says_so(tmp_path: Path) -> None:
    blocker = tmp_path / "session"
    blocker.write_text("a file where the folder should be")
    spilled = asyncio.run(
        spill_large_result(result(big_output()), directory=blocker, settings=SETTINGS)
    )
    assert "saving it in full failed" in spilled.text
    assert text_tokens(spilled.text) <= SETTINGS.result_limit_tokens + 100
