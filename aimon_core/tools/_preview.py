"""How a tool call is shown: its one-line label, and the change an edit would make.

Each tool carries its own `describe` (the argument in `Read(calc.py)`) and `preview` (the
unified diff an approval question shows before the user answers), so front ends never switch on
tool names. Previews read the file: blocking I/O, call them through `asyncio.to_thread`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PREVIEW_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class ProposedChange:
    """What an Edit or Write call would do to a file: a unified diff, or why there is none."""

    path: Path
    diff: str = ""
    created: bool = False
    note: str = ""


LABEL_CHARS = 80


def call_label(name: str, tool_input: Mapping[str, Any], describe: Describer | None = None,
               project_root: Path | None = None) -> str:
    """Return the one-line form of a call: `Read(calc.py)`, `Grep("x" in src)`, `Bash(ls)`."""
    if describe is not None:
        arg = describe(tool_input, project_root)
    else:  # a tool that says nothing of itself: its first non-empty string argument
        arg = next((str(v) for v in tool_input.values() if isinstance(v, str) and v), "")
    arg = " ".join(arg.split())
    if len(arg) > LABEL_CHARS:
        arg = arg[: LABEL_CHARS - 1] + "…"
    return f"{name}({arg})" if arg else name


Describer = Callable[[Mapping[str, Any], "Path | None"], str]
Previewer = Callable[[Mapping[str, Any], Path], "ProposedChange | None"]


def short_path(raw: str, root: Path | None) -> str:
    """Return `raw` relative to `root` when it is inside it."""
    if root is None or not raw:
        return raw
    try:
        return str(Path(raw).relative_to(root))
    except ValueError:
        return raw


def path_label(key: str) -> Describer:
    """Describe a call by one path argument, shortened to the project."""
    def describe(tool_input: Mapping[str, Any], root: Path | None) -> str:
        return short_path(str(tool_input.get(key, "")), root)
    return describe


def command_label(tool_input: Mapping[str, Any], root: Path | None) -> str:
    """Describe a shell call by its command."""
    return str(tool_input.get("command", "")).strip()


def search_label(quote: bool) -> Describer:
    """Describe a search by its pattern (quoted for Grep) and the folder searched."""
    def describe(tool_input: Mapping[str, Any], root: Path | None) -> str:
        pattern = str(tool_input.get("pattern", ""))
        arg = f'"{pattern}"' if quote else pattern
        if tool_input.get("path"):
            arg += f" in {short_path(str(tool_input['path']), root)}"
        return arg
    return describe


def todo_label(tool_input: Mapping[str, Any], root: Path | None) -> str:
    """Describe a todo list by its size."""
    todos = tool_input.get("todos")
    return f"{len(todos)} items" if isinstance(todos, list) else ""


def edit_preview(tool_input: Mapping[str, Any], project_root: Path) -> ProposedChange | None:
    """Return the change an Edit call would make to the file on disk."""
    return proposed_change("Edit", tool_input, project_root)


def write_preview(tool_input: Mapping[str, Any], project_root: Path) -> ProposedChange | None:
    """Return the change a Write call would make to the file on disk."""
    return proposed_change("Write", tool_input, project_root)


def proposed_change(tool_name: str, tool_input: Mapping[str, Any],
                    project_root: Path) -> ProposedChange | None:
    """Return the change an Edit or Write call would make to the file on disk (None: no file).

    Edit applies old_string → new_string (every occurrence with replace_all) to the current
    content; Write compares the current content with the new one; a new file is all added.
    """
    if tool_name not in ("Edit", "Write"):
        return None
    raw = tool_input.get("file_path")
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        return None
    path = project_root / Path(raw).expanduser()
    old, problem = _current_text(path)
    if problem:
        return ProposedChange(path=path, note=problem)
    if tool_name == "Write":
        new = str(tool_input.get("content", ""))
    else:
        edited, note = _edited(old, tool_input)
        if edited is None:
            return ProposedChange(path=path, note=note)
        new = edited
    from aimon_core.tools._file_tools import unified_diff

    if old is not None and old == new:
        return ProposedChange(path=path, note="the file would not change")
    return ProposedChange(path=path, diff=unified_diff(path, old or "", new), created=old is None)


def _current_text(path: Path) -> tuple[str | None, str]:
    """Return the file's text (None if it does not exist), or a reason it cannot be shown."""
    from aimon_core.tools._file_tools import is_binary

    try:
        if not path.exists():
            return None, ""
        if not path.is_file():
            return None, f"{path} is not a regular file"
        if path.stat().st_size > PREVIEW_BYTES:
            return None, "the file is too large to preview the change"
        data = path.read_bytes()
    except OSError as exc:
        return None, f"cannot read {path}: {exc.strerror or exc}"
    if is_binary(data):
        return None, "binary file: no preview"
    return data.decode("utf-8", errors="surrogateescape"), ""


def _edited(old: str | None, tool_input: Mapping[str, Any]) -> tuple[str | None, str]:
    """Return the text after the Edit, or None and why the Edit will fail."""
    from aimon_core.tools._file_tools import replace_text

    before, after = str(tool_input.get("old_string", "")), str(tool_input.get("new_string", ""))
    if old is None:
        if before:
            return None, "the file does not exist, so this edit will fail"
        return after, ""
    if not before:
        return None, "the file exists and old_string is empty, so this edit will fail"
    try:
        text, _, _ = replace_text(old, before, after,
                                  replace_all=bool(tool_input.get("replace_all")))
    except Exception as exc:  # the tool's refusal: show it, the call will fail the same way
        return None, f"this edit will fail: {exc}"
    return text, ""
