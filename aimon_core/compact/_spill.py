"""Large tool results: the whole text goes to a file, the model gets its head and tail."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from pathlib import Path

from aimon_core._atomic import private_dir, write_atomic
from aimon_core.compact._estimate import CHARS_PER_TOKEN, text_tokens
from aimon_core.compact._fallback import head_tail
from aimon_core.compact._policy import CompactionSettings, is_too_large
from aimon_core.llm import ImageBlock, TextBlock, ToolResultBlock

SPILL_FOLDER = "tool-results"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def spill_path(directory: Path, tool_use_id: str) -> Path:
    """Return where the full text of the result of `tool_use_id` is saved."""
    name = _UNSAFE.sub("_", tool_use_id)[:120] or "result"
    return directory / SPILL_FOLDER / f"{name}.txt"


def spilled_text(text: str, *, path: Path, settings: CompactionSettings) -> str:
    """Return what the model sees of a spilled result: a notice, the head and the tail."""
    lines = text.count("\n") + 1
    notice = (
        f"[This output is too large for the conversation ({len(text):,} characters, "
        f"{lines:,} lines, about {text_tokens(text):,} tokens). The full output is saved in "
        f"{path}; read the part you need with the Read tool and its offset and limit "
        f"parameters, or search it with Grep. Its start and end follow.]"
    )
    body = head_tail(
        text,
        head=settings.spill_head_chars,
        tail=settings.spill_tail_chars,
        note=f"the rest is in {path}",
    )
    return f"{notice}\n\n{body}"


async def spill_large_result(
    block: ToolResultBlock, *, directory: Path, settings: CompactionSettings | None = None
) -> ToolResultBlock:
    """Return `block` as it is, or, if its text is too large, saved to a file and cut down.

    The file is written atomically under `directory/tool-results/` (the session's folder);
    images in the result are kept. An OSError while saving leaves the result cut down without
    a file, and the notice says so, so that a full disk never fails the turn.
    """
    settings = settings or CompactionSettings()
    if not is_too_large(block, settings):
        return block
    text = block.text
    path = spill_path(directory, block.tool_use_id)
    try:
        await asyncio.to_thread(_write_atomically, path, text)
    except OSError as exc:
        budget = settings.result_limit_tokens * CHARS_PER_TOKEN
        kept = head_tail(text, head=budget * 2 // 3, tail=budget // 3,
                         note=f"output cut down; saving it in full failed: {exc}")
        return _with_text(block, kept)
    return _with_text(block, spilled_text(text, path=path, settings=settings))


def _with_text(block: ToolResultBlock, text: str) -> ToolResultBlock:
    images = tuple(part for part in block.content if isinstance(part, ImageBlock))
    return dataclasses.replace(block, content=(TextBlock(text=text), *images))


def _write_atomically(path: Path, text: str) -> None:
    private_dir(path.parent)  # saved results are the session's: a 0700 folder, 0600 files
    write_atomic(path, text.encode("utf-8", errors="surrogateescape"))
