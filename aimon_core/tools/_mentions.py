"""`@path` mentions in a prompt: the files and folders they name, attached for the model.

`@calc.py` attaches the file as Read shows it (numbered lines; Edit may then change it
without reading it again), `@calc.py#L10-40` those lines, `@src/` a listing of the folder,
`@shot.png` and `@spec.pdf` an image or a document for models that take them. Only paths
inside the project (or its additional folders) are attached, and never one a permission deny
rule keeps from Read: the prompt then says it was not attached, and why. A mention that names
nothing (an e-mail address, `@someone`) is left as text.
"""

from __future__ import annotations

import asyncio
import base64
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from aimon_core.filesystem import PathError
from aimon_core.llm import ContentBlock, DocumentBlock, ImageBlock, TextBlock
from aimon_core.tools._base import ToolContext, execute_tool
from aimon_core.tools._file_tools import READ_TOOL

# `@` at the start or after a space, a path (no spaces; `\ ` escapes one), `#L10` or `#L10-40`.
MENTION = re.compile(r"(?<!\S)@((?:\\ |[^\s#@])+)(?:#L(\d+)(?:-(\d+))?)?")
LISTED_ENTRIES = 200
MAX_PDF_BYTES = 32 * 1024 * 1024
_SKIPPED = frozenset({".git", "__pycache__", "node_modules", ".venv"})
# A mention that looks like a path (`@src/`, `@calc.py`), not a handle (`@nobody`).
_PATH_LIKE = re.compile(r"/|\.\w{1,8}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Mentions:
    """What a prompt's mentions attach: blocks for the model, and a line each for the person."""

    blocks: tuple[ContentBlock, ...] = ()
    notes: tuple[str, ...] = ()


NO_MENTIONS = Mentions()


async def attach_mentions(prompt: str, ctx: ToolContext, *, images: bool = True,
                          pdfs: bool = True) -> Mentions:
    """Return what the `@path` mentions of `prompt` attach.

    Args:
        images, pdfs: whether the model takes image and PDF blocks (else the prompt says
            they were not attached, and why).
    """
    if "@" not in prompt:
        return NO_MENTIONS
    blocks: list[ContentBlock] = []
    notes: list[str] = []
    seen: set[tuple[str, str | None, str | None]] = set()
    for match in MENTION.finditer(prompt):
        raw, first, last = match.group(1).replace("\\ ", " "), match.group(2), match.group(3)
        # `see @calc.py.` ends a sentence: the stop is not part of the name.
        names = dict.fromkeys((raw, raw.rstrip(".,;:!?)]}'\"")))
        for name in names:
            if not name or (name, first, last) in seen:
                continue
            found = await _attach(name, first, last, ctx, images=images, pdfs=pdfs)
            if found is not None:
                seen.add((name, first, last))
                blocks.extend(found[0])
                notes.append(found[1])
                break
        else:  # a path that names nothing (a typo?) is sent as typed; the person is told
            name = list(names)[-1]
            if name and _PATH_LIKE.search(name) and (name, first, last) not in seen:
                seen.add((name, first, last))
                notes.append(f"@{name} names no file or folder here: sent as typed")
    return Mentions(blocks=tuple(blocks), notes=tuple(notes))


async def _attach(raw: str, first: str | None, last: str | None, ctx: ToolContext, *,
                  images: bool, pdfs: bool) -> tuple[list[ContentBlock], str] | None:
    """Return the blocks one mention attaches and its note; None if it names nothing."""
    shown = raw.rstrip("/") or raw
    wanted = _expanded(raw)
    try:
        path = await ctx.fs.resolve(str(wanted), cwd=ctx.cwd)
    except PathError:
        if not await asyncio.to_thread(Path(ctx.cwd, wanted).exists):
            return None
        return _refused(shown, "it is outside the project")
    info = await ctx.fs.stat(path)
    if info is None:
        return None
    if ctx.path_filter is not None and not ctx.path_filter(path):
        return _refused(shown, "a permission rule denies reading it")
    if info.kind == "directory":
        listing = await asyncio.to_thread(_listing_blocking, shown, path)
        return [TextBlock(text=listing)], f"Attached the listing of {shown}/"
    suffix = path.suffix.lower()
    if suffix == ".pdf":
        return await _pdf(shown, path, info.size, ctx, allowed=pdfs)
    tool_input: dict[str, object] = {"file_path": str(path)}
    if first is not None:
        start = max(int(first), 1)
        end = max(int(last), start) if last is not None else start
        tool_input.update(offset=start, limit=end - start + 1)
    result = await execute_tool(READ_TOOL, tool_input, ctx)
    if result.is_error:
        return _refused(shown, result.text)
    picture = any(isinstance(block, ImageBlock) for block in result.content)
    if picture and not images:
        return _refused(shown, "this model does not take images")
    if picture:
        return list(result.content), f"Attached the image {shown}"
    span = f"#L{first}" + (f"-{last}" if last else "") if first else ""
    text = f'<file path="{shown}{span}">\n{result.text}\n</file>'
    return [TextBlock(text=text)], f"Attached {shown}{span} ({_lines(result.data)})"


async def _pdf(shown: str, path: Path, size: int, ctx: ToolContext, *, allowed: bool
               ) -> tuple[list[ContentBlock], str]:
    if not allowed:
        return _refused(shown, "this model does not take PDF documents")
    if size > MAX_PDF_BYTES:
        return _refused(shown, f"it is {size // (1024 * 1024)} MB; PDFs up to "
                               f"{MAX_PDF_BYTES // (1024 * 1024)} MB are attached")
    data = await ctx.fs.read_bytes(path)
    if not data.startswith(b"%PDF"):
        return _refused(shown, "it is not a PDF document")
    block = DocumentBlock(media_type="application/pdf", title=path.name,
                          data=base64.b64encode(data).decode("ascii"))
    return [block], f"Attached the document {shown} ({max(size // 1024, 1):,} KB)"


def _expanded(raw: str) -> Path:
    """Return `raw` with `~` expanded (it reads HOME, nothing on disk)."""
    return Path(raw).expanduser()


def _refused(shown: str, why: str) -> tuple[list[ContentBlock], str]:
    note = f"@{shown} was not attached: {why}"
    return [TextBlock(text=f"[{note}.]")], note


def _lines(data: Mapping[str, object]) -> str:
    """Return e.g. `12 lines`, `lines 10-40 of 200`, from a Read result's data."""
    if "total_lines" not in data:
        return "empty"
    first, last, total = data["first_line"], data["last_line"], data["total_lines"]
    if first == 1 and last == total:
        return f"{total} line{'s' * (total != 1)}"
    return f"lines {first}-{last} of {total}"


def _listing_blocking(shown: str, folder: Path) -> str:
    """Return a folder's entries, one a line (folders end with `/`), the first few hundred."""
    try:
        with os.scandir(folder) as found:
            entries = sorted((e.name + ("/" if e.is_dir() else "")) for e in found
                             if e.name not in _SKIPPED)
    except OSError as exc:
        return f"[@{shown}/ could not be listed: {exc.strerror or exc}]"
    more = len(entries) - LISTED_ENTRIES
    rows = entries[:LISTED_ENTRIES] + ([f"… and {more} more"] if more > 0 else [])
    return f'<folder path="{shown}/">\n' + "\n".join(rows) + "\n</folder>"
