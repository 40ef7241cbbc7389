"""The file tools: Read, Write and Edit."""

from __future__ import annotations

import base64
import difflib
from pathlib import Path

from aimon_core.filesystem import FileStat, PathError
from aimon_core.llm import ImageBlock, TextBlock
from aimon_core.tools._base import PathSubject, Tool, ToolContext, ToolInput, ToolResult
from aimon_core.tools._detail import FileChange, FileRead
from aimon_core.tools._interrupt import InterruptBehavior

DEFAULT_LINES = 2000
MAX_READ_BYTES = 256 * 1024
# Even with offset and limit, a file is read whole (to hash it for Edit); cap that.
MAX_PAGED_BYTES = 32 * 1024 * 1024
MAX_LINE_CHARS = 2000
# About 25k tokens: a Read result never grows past this.
MAX_READ_CHARS = 100_000
# The Anthropic API takes images up to 5 MB of base64, i.e. 3.75 MB of bytes.
MAX_IMAGE_BYTES = 3_750_000
MAX_DIFF_CHARS = 200_000
SNIPPET_CONTEXT = 4
_IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})


class _RefusedError(Exception):
    """A tool refuses the call; the message tells the model what to do instead."""


def sniff_image(data: bytes) -> str | None:
    """Return the media type if `data` starts like a PNG, JPEG, GIF or WebP image."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def is_binary(data: bytes) -> bool:
    """Return whether `data` looks binary (a NUL byte in its first 8 KB)."""
    return b"\x00" in data[:8192]


def split_lines(text: str) -> list[str]:
    """Split text into lines the way editors number them (only at \\n; \\r\\n kept as one)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def number_line(number: int, line: str) -> str:
    """Format one line like `cat -n`, cutting it if it is very long."""
    if len(line) > MAX_LINE_CHARS:
        line = f"{line[:MAX_LINE_CHARS]}... [line cut: {len(line)} characters in all]"
    return f"{number:>6}\t{line}"


def encode_text(text: str) -> bytes:
    """Encode text as UTF-8, restoring bytes a lossless decode kept as surrogates."""
    try:
        return text.encode("utf-8", errors="surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", errors="replace")


def unified_diff(path: Path, old: str, new: str) -> str:
    """Return a unified diff of a file's old and new text (for the UI; capped)."""
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path.name}" if old else "/dev/null",
        tofile=f"b/{path.name}",
    )
    # A last line without a newline gets the marker `diff -u` writes, on a line of its own.
    diff = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in lines)
    if len(diff) > MAX_DIFF_CHARS:
        diff = diff[:MAX_DIFF_CHARS] + "\n... diff cut ...\n"
    return diff


async def _resolve(ctx: ToolContext, raw: str) -> tuple[Path, FileStat | None]:
    path = await ctx.fs.resolve(raw, cwd=ctx.cwd)
    return path, await ctx.fs.stat(path)


def _kind_problem(raw: str, info: FileStat) -> str | None:
    if info.kind == "directory":
        return (
            f"{raw!r} is a directory, not a file. "
            "Use Glob to find files in it, or Bash `ls` to list it."
        )
    if info.kind != "file":
        return f"{raw!r} is not a regular file (a device, pipe or socket); it cannot be read."
    return None


def _refuse_folder_path(raw: str) -> None:
    """Refuse a file path that names a folder by its form (`dir/`, `dir/.`)."""
    if raw.endswith(("/", "/.", "/..")) or raw in (".", ".."):
        raise _RefusedError(
            f"{raw!r} names a directory, not a file. Give the path of the file to write, "
            "e.g. 'dir/name.txt'."
        )


def _os_error(action: str, raw: str, exc: OSError) -> ToolResult:
    return ToolResult.error(f"Could not {action} {raw!r}: {exc.strerror or exc}")


# ---------------------------------------------------------------------------- Read

READ_DESCRIPTION = """\
Read a file from the project and return its lines numbered like `cat -n`.

- file_path: an absolute path, or a path relative to the working directory; it must be \
inside the project.
- By default returns up to 2000 lines from the start. To read a part of a file, pass \
offset (the first line number, counting from 1) and limit (how many lines). Files larger \
than 256 KB must be read in parts this way, or searched with Grep.
- Each line is shown as: spaces, the line number, a tab, then the line. The number and \
the tab are not part of the file: never copy them into Edit's old_string.
- Lines longer than 2000 characters are cut.
- Images (PNG, JPEG, GIF, WebP) are returned as images you can look at.
- Binary files are refused (inspect them with Bash, e.g. `file` or `xxd | head`). \
Directories are refused: use Glob, or Bash `ls`.
- Read a file before you change it with Edit or Write: both refuse files you have not \
read. You may Read several files at once by calling Read in parallel."""

READ_SCHEMA = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "The file to read (absolute path)."},
        "offset": {
            "type": "integer",
            "minimum": 0,
            "description": "The line number to start reading from (1 = first line). "
            "Only for files too large to read at once.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "description": "How many lines to read. Only for files too large to read at once.",
        },
    },
    "required": ["file_path"],
    "additionalProperties": False,
}


async def read_file(inp: ToolInput, ctx: ToolContext) -> ToolResult:
    """Run the Read tool."""
    raw = inp.string("file_path")
    offset, limit = inp.integer("offset"), inp.integer("limit")
    paged = offset is not None or limit is not None
    try:
        path, info = await _resolve(ctx, raw)
        data = await _read_checked(ctx, raw, path, info, paged=paged)
    except (PathError, _RefusedError) as exc:
        return ToolResult.error(str(exc))
    except OSError as exc:
        return _os_error("read", raw, exc)
    media_type = sniff_image(data)
    if media_type is not None:
        return _image_result(ctx, path, data, media_type)
    if is_binary(data):
        return ToolResult.error(
            f"{raw!r} is a binary file (it contains NUL bytes); Read shows text and images "
            "only. Inspect it with Bash, e.g. `file PATH` or `xxd PATH | head`."
        )
    if len(data) > MAX_READ_BYTES and not paged:
        return ToolResult.error(_too_large(raw, len(data)))
    ctx.state.record_read(path, data)
    text = data.decode("utf-8", errors="replace")
    if not text:
        return ToolResult.ok(f"The file {str(path)!r} exists but is empty.", path=str(path))
    return _numbered_result(path, split_lines(text), offset or 1, limit or DEFAULT_LINES)


async def _read_checked(
    ctx: ToolContext, raw: str, path: Path, info: FileStat | None, *, paged: bool
) -> bytes:
    if info is None:
        raise _RefusedError(
            f"File {raw!r} does not exist (resolved to {str(path)!r}). "
            "Check the path, or find the file with Glob."
        )
    problem = _kind_problem(raw, info)
    if problem is not None:
        raise _RefusedError(problem)
    looks_like_image = path.suffix.lower() in _IMAGE_SUFFIXES
    if info.size > MAX_READ_BYTES and not paged and not looks_like_image:
        raise _RefusedError(_too_large(raw, info.size))
    if info.size > MAX_PAGED_BYTES:
        raise _RefusedError(
            f"{raw!r} is {info.size // (1024 * 1024)} MB, too large for Read even in parts. "
            "Search it with Grep, or look at parts with Bash (`head`, `tail`, `sed -n`)."
        )
    return await ctx.fs.read_bytes(path)


def _too_large(raw: str, size: int) -> str:
    return (
        f"{raw!r} is {size // 1024} KB, more than the 256 KB Read returns at once. Read it "
        f"in parts with offset and limit (e.g. offset=1, limit={DEFAULT_LINES}, then "
        f"offset={DEFAULT_LINES + 1}), or search it with Grep."
    )


def _image_result(ctx: ToolContext, path: Path, data: bytes, media_type: str) -> ToolResult:
    if len(data) > MAX_IMAGE_BYTES:
        return ToolResult.error(
            f"The image {str(path)!r} is {len(data) // 1024} KB; images up to "
            f"{MAX_IMAGE_BYTES // 1000} KB can be shown. Resize it first (e.g. with Bash)."
        )
    ctx.state.record_read(path, data)
    note = f"Image {str(path)!r} ({media_type}, {len(data)} bytes):"
    image = ImageBlock(media_type=media_type, data=base64.b64encode(data).decode("ascii"))
    return ToolResult(
        content=(TextBlock(text=note), image),
        data={"path": str(path), "media_type": media_type, "size": len(data)},
    )


def _numbered_result(path: Path, lines: list[str], first: int, limit: int) -> ToolResult:
    total = len(lines)
    if first > total:
        return ToolResult.error(
            f"The file {str(path)!r} has {total} lines; offset {first} is past its end."
        )
    out: list[str] = []
    size = 0
    last = first - 1
    for number in range(first, min(total, first + limit - 1) + 1):
        row = number_line(number, lines[number - 1])
        if out and size + len(row) > MAX_READ_CHARS:
            break
        out.append(row)
        size += len(row) + 1
        last = number
    if last < total:
        out.append(
            f"\n(Showing lines {first}-{last} of {total}. "
            f"Call Read with offset={last + 1} to continue.)"
        )
    return ToolResult.ok(
        "\n".join(out), path=str(path), first_line=first, last_line=last, total_lines=total,
        detail=FileRead(path=str(path), first_line=first, last_line=last, total_lines=total),
    )


READ_TOOL = Tool(
    name="Read",
    description=READ_DESCRIPTION,
    input_schema=READ_SCHEMA,
    run=read_file,
    read_only=True,
    subject=PathSubject(param="file_path"),
)

# ---------------------------------------------------------------------------- Write

WRITE_DESCRIPTION = """\
Write a file, replacing all of its content if it exists.

- file_path: an absolute path, or a path relative to the working directory; it must be \
inside the project. Missing parent directories are created.
- An existing file must have been read with Read in this session and must not have \
changed since; otherwise Write refuses, and you must Read the file again first.
- To change part of an existing file, prefer Edit: it sends only the change.
- content is written exactly as given (UTF-8); include the final newline if the file \
should end with one."""

WRITE_SCHEMA = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "The file to write (absolute path)."},
        "content": {"type": "string", "description": "The complete new content of the file."},
    },
    "required": ["file_path", "content"],
    "additionalProperties": False,
}


async def write_file(inp: ToolInput, ctx: ToolContext) -> ToolResult:
    """Run the Write tool."""
    raw, content = inp.string("file_path"), inp.string("content")
    new = encode_text(content)
    try:
        _refuse_folder_path(raw)
        path, info = await _resolve(ctx, raw)
        old = None if info is None else await _current_for_change(ctx, raw, path, info)
        await ctx.fs.write_atomic(path, new)
    except (PathError, _RefusedError) as exc:
        return ToolResult.error(str(exc))
    except OSError as exc:
        return _os_error("write", raw, exc)
    ctx.state.record_read(path, new)
    old_text = "" if old is None else old.decode("utf-8", errors="replace")
    lines = len(split_lines(content))
    verb = "Created" if old is None else "Wrote"
    return ToolResult.ok(
        f"{verb} {str(path)!r} ({lines} lines).",
        path=str(path),
        created=old is None,
        diff=(diff := unified_diff(path, old_text, content)),
        detail=FileChange(path=str(path), diff=diff, created=old is None),
    )


async def _current_for_change(ctx: ToolContext, raw: str, path: Path, info: FileStat) -> bytes:
    """Return the file's current bytes if the model may change it; refuse otherwise."""
    problem = _kind_problem(raw, info)
    if problem is not None:
        raise _RefusedError(problem)
    data = await ctx.fs.read_bytes(path)
    reason = ctx.state.check_fresh(path, data)
    if reason is not None:
        raise _RefusedError(reason)
    return data


WRITE_TOOL = Tool(
    interrupt=InterruptBehavior.FINISH,
    name="Write",
    description=WRITE_DESCRIPTION,
    input_schema=WRITE_SCHEMA,
    run=write_file,
    subject=PathSubject(param="file_path", writes=True),
)

# ---------------------------------------------------------------------------- Edit

EDIT_DESCRIPTION = """\
Replace exact text in a file, and show the changed lines.

- Read the file in this session before editing it. Edit refuses files you have not read, \
and files that changed since your last Read (then Read them again).
- old_string must match the file exactly, including whitespace and indentation. Copy it \
from Read's output without the line-number prefix (spaces, number, tab).
- old_string must occur exactly once in the file. If it occurs more often, add surrounding \
lines to make it unique, or set replace_all to true to replace every occurrence (e.g. to \
rename a variable).
- new_string must differ from old_string.
- file_path: an absolute path, or a path relative to the working directory.
- To create a new file use Write (or Edit with an empty old_string on a file that does not \
exist yet)."""

EDIT_SCHEMA = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string", "description": "The file to change (absolute path)."},
        "old_string": {"type": "string", "description": "The exact text to replace."},
        "new_string": {
            "type": "string",
            "description": "The text to put in its place (must differ from old_string).",
        },
        "replace_all": {
            "type": "boolean",
            "default": False,
            "description": "Replace every occurrence of old_string (default false).",
        },
    },
    "required": ["file_path", "old_string", "new_string"],
    "additionalProperties": False,
}


def replace_text(text: str, old: str, new: str, *, replace_all: bool) -> tuple[str, int, int]:
    """Return (new text, replacements made, offset of the first one), or raise _RefusedError."""
    if old not in text and "\r\n" in text and "\r" not in old:
        # Read shows CRLF lines without their \r; match them the way the model saw them.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    count = text.count(old)
    if count == 0:
        raise _RefusedError(
            "old_string was not found in the file. It must match exactly, including "
            "whitespace and indentation, without Read's line-number prefix. Read the file "
            "again and copy the text exactly."
        )
    if count > 1 and not replace_all:
        raise _RefusedError(
            f"old_string occurs {count} times in the file. Include more surrounding lines so "
            "it matches exactly one place, or set replace_all to true to replace all of them."
        )
    first = text.index(old)
    result = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    return result, count if replace_all else 1, first


def _snippet(text: str, first: int, new: str) -> str:
    lines = split_lines(text)
    start = text.count("\n", 0, first) + 1
    end = start + new.count("\n")
    low, high = max(1, start - SNIPPET_CONTEXT), min(len(lines), end + SNIPPET_CONTEXT)
    return "\n".join(number_line(n, lines[n - 1]) for n in range(low, high + 1))


async def edit_file(inp: ToolInput, ctx: ToolContext) -> ToolResult:
    """Run the Edit tool."""
    raw = inp.string("file_path")
    old, new = inp.string("old_string"), inp.string("new_string")
    replace_all = inp.boolean("replace_all")
    if old == new:
        return ToolResult.error("old_string and new_string are the same; nothing would change.")
    try:
        _refuse_folder_path(raw)
        path, info = await _resolve(ctx, raw)
        if info is None:
            return await _create_by_edit(ctx, raw, path, old, new)
        if not old:
            raise _RefusedError(
                f"{raw!r} already exists, so old_string must not be empty. Give the exact "
                "text to replace, or use Write to replace the whole file."
            )
        data = await _current_for_change(ctx, raw, path, info)
        if is_binary(data):
            raise _RefusedError(f"{raw!r} is a binary file; Edit changes text files only.")
        text = data.decode("utf-8", errors="surrogateescape")
        result, count, first = replace_text(text, old, new, replace_all=replace_all)
        encoded = encode_text(result)
        await ctx.fs.write_atomic(path, encoded)
    except (PathError, _RefusedError) as exc:
        return ToolResult.error(str(exc))
    except OSError as exc:
        return _os_error("edit", raw, exc)
    ctx.state.record_read(path, encoded)
    what = f"{count} replacements" if count > 1 else "1 replacement"
    return ToolResult.ok(
        f"Edited {str(path)!r} ({what}). The changed region now reads"
        f"{' (first replacement)' if count > 1 else ''}:\n{_snippet(result, first, new)}",
        path=str(path),
        replacements=count,
        diff=(diff := unified_diff(path, text, result)),
        detail=FileChange(path=str(path), diff=diff),
    )


async def _create_by_edit(ctx: ToolContext, raw: str, path: Path, old: str, new: str) -> ToolResult:
    if old:
        raise _RefusedError(
            f"File {raw!r} does not exist (resolved to {str(path)!r}). Check the path with "
            "Glob; to create a new file use Write."
        )
    data = encode_text(new)
    await ctx.fs.write_atomic(path, data)
    ctx.state.record_read(path, data)
    return ToolResult.ok(
        f"Created {str(path)!r} ({len(split_lines(new))} lines).",
        path=str(path),
        created=True,
        diff=(diff := unified_diff(path, "", new)),
        detail=FileChange(path=str(path), diff=diff, created=True),
    )


EDIT_TOOL = Tool(
    interrupt=InterruptBehavior.FINISH,
    name="Edit",
    description=EDIT_DESCRIPTION,
    input_schema=EDIT_SCHEMA,
    run=edit_file,
    subject=PathSubject(param="file_path", writes=True),
)
