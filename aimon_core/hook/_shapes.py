"""Claude Code's `tool_response` shapes, built from what aimon's built-in tools report.

Hooks written for Claude Code read fields such as `tool_response.stdout` (Bash) or
`tool_response.filePath` (Write, Edit); aimon's tools keep their own result data, and this
module is the one place that converts it. A tool without a Claude Code shape gets its text
as `content` and its data as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")

Shape = Callable[[Mapping[str, Any], str, Mapping[str, Any]], dict[str, Any]]


def claude_tool_response(tool_name: str, tool_input: Mapping[str, Any], text: str,
                         data: Mapping[str, Any]) -> dict[str, Any]:
    """Return the `tool_response` a Claude Code hook expects for this tool's result.

    Args:
        text: the result text the model saw.
        data: the tool's result data (`ToolResult.data`).
    """
    shape = _SHAPES.get(tool_name)
    if shape is None:
        return {"content": text, **dict(data)}
    return shape(tool_input, text, data)


def structured_patch(diff: str) -> list[dict[str, Any]]:
    """Turn a unified diff into Claude Code's `structuredPatch` (one object per hunk)."""
    hunks: list[dict[str, Any]] = []
    for line in diff.splitlines():
        found = _HUNK.match(line)
        if found is not None:
            old_start, old_lines, new_start, new_lines = found.groups()
            hunks.append({
                "oldStart": int(old_start), "oldLines": int(old_lines or 1),
                "newStart": int(new_start), "newLines": int(new_lines or 1), "lines": [],
            })
        elif hunks and line[:1] in (" ", "+", "-") and not line.startswith(("+++", "---")):
            hunks[-1]["lines"].append(line)
    return hunks


def _bash(tool_input: Mapping[str, Any], text: str, data: Mapping[str, Any]) -> dict[str, Any]:
    if "shell_id" in data:  # started in the background
        return {"stdout": "", "stderr": "", "interrupted": False, "isImage": False,
                "backgroundTaskId": data["shell_id"]}
    return {
        "stdout": data.get("stdout", text), "stderr": data.get("stderr", ""),
        "interrupted": bool(data.get("interrupted", False)), "isImage": False,
        "exitCode": data.get("exit_code"),
    }


def _write(tool_input: Mapping[str, Any], text: str, data: Mapping[str, Any]) -> dict[str, Any]:
    created = bool(data.get("created", False))
    return {
        "type": "create" if created else "update",
        "filePath": data.get("path", tool_input.get("file_path")),
        "content": tool_input.get("content", ""),
        "structuredPatch": [] if created else structured_patch(str(data.get("diff", ""))),
        # aimon does not keep the old content beside the result; Claude Code's is null on
        # create too, so readers handle null.
        "originalFile": None,
    }


def _edit(tool_input: Mapping[str, Any], text: str, data: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "filePath": data.get("path", tool_input.get("file_path")),
        "oldString": tool_input.get("old_string", ""),
        "newString": tool_input.get("new_string", ""),
        "originalFile": None,
        "structuredPatch": structured_patch(str(data.get("diff", ""))),
        "userModified": False,
        "replaceAll": bool(tool_input.get("replace_all", False)),
    }


def _read(tool_input: Mapping[str, Any], text: str, data: Mapping[str, Any]) -> dict[str, Any]:
    path = data.get("path", tool_input.get("file_path"))
    if "media_type" in data:
        return {"type": "image", "file": {"filePath": path, "type": data["media_type"],
                                          "originalSize": data.get("size")}}
    first, last = data.get("first_line", 1), data.get("last_line", 0)
    return {"type": "text", "file": {
        "filePath": path, "content": text, "numLines": max(0, int(last) - int(first) + 1),
        "startLine": first, "totalLines": data.get("total_lines", 0),
    }}


def _glob(tool_input: Mapping[str, Any], text: str, data: Mapping[str, Any]) -> dict[str, Any]:
    count = int(data.get("count", 0))
    names = [line for line in text.splitlines() if line.startswith("/")] if count else []
    return {"filenames": names, "numFiles": count,
            "truncated": bool(data.get("truncated", False)), "durationMs": 0}


def _grep(tool_input: Mapping[str, Any], text: str, data: Mapping[str, Any]) -> dict[str, Any]:
    mode = str(data.get("mode", tool_input.get("output_mode", "files_with_matches")))
    count = int(data.get("count", 0))
    lines = text.splitlines() if count else []
    if mode == "files_with_matches":
        return {"mode": mode, "filenames": lines, "numFiles": count}
    return {"mode": mode, "content": text if count else "", "numLines": len(lines),
            "filenames": [], "numFiles": 0}


_SHAPES: dict[str, Shape] = {
    "Bash": _bash, "Write": _write, "Edit": _edit, "Read": _read, "Glob": _glob,
    "Grep": _grep,
}
