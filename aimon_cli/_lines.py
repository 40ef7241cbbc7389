"""What one part of a turn looks like on screen: a tool call's label and folded result, a
diff, a checklist, an approval question and its answer, the status and stop lines.

Pure functions from values to rich `Text` lines; the renderer (`aimon_cli.render`) decides
when to print them.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from aimon_cli._rules import auth_hint, describe_rule
from aimon_core.agent import (
    ApprovalAnswer,
    ApprovalRequest,
    ApprovalScope,
    ExecutionResult,
    StopCause,
)
from aimon_core.command import format_cost, format_tokens
from aimon_core.llm import Usage
from aimon_core.tools import FileChange, FileRead, TodoList, ToolResult

if TYPE_CHECKING:
    from aimon_core.tools import ProposedChange

RESULT_LINES = 4  # a result of up to this many lines is shown whole; longer ones are folded
DIFF_LINES = 20
APPROVAL_DIFF_LINES = 40
COMMAND_LINES = 12
LABEL_CHARS = 80
_HUNK = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_LIMIT_HINTS = {
    StopCause.ITERATION_LIMIT: "raise it with /budget iterations N",
    StopCause.TOKEN_LIMIT: "raise it with /budget tokens N",
    StopCause.TIME_LIMIT: "raise it with /budget time 10m",
}
_CHECKS = {"completed": "☑", "in_progress": "◐", "pending": "☐"}
_ALLOWED = {ApprovalScope.ONCE: "once", ApprovalScope.TURN: "for this turn",
            ApprovalScope.SESSION: "for this session", ApprovalScope.AGENT: "for this agent"}


def tool_label(name: str, tool_input: Mapping[str, Any], project_root: Path | None = None) -> str:
    """Return the one-line form of a tool call: `Read(calc.py)`, `Grep("x" in src)`."""
    def path(key: str) -> str:
        return _short_path(str(tool_input.get(key, "")), project_root)

    match name:
        case "Read" | "Write" | "Edit":
            arg = path("file_path")
        case "Bash":
            arg = str(tool_input.get("command", "")).strip()
        case "Grep" | "Glob":
            arg = str(tool_input.get("pattern", ""))
            arg = f'"{arg}"' if name == "Grep" else arg
            if tool_input.get("path"):
                arg += f" in {path('path')}"
        case "TodoWrite":
            todos = tool_input.get("todos")
            arg = f"{len(todos)} items" if isinstance(todos, list) else ""
        case _:
            arg = next((str(v) for v in tool_input.values() if isinstance(v, str) and v), "")
    arg = " ".join(arg.split())
    if len(arg) > LABEL_CHARS:
        arg = arg[: LABEL_CHARS - 1] + "…"
    return f"{name}({arg})" if arg else name


def _short_path(raw: str, root: Path | None) -> str:
    if root is None or not raw:
        return raw
    try:
        return str(Path(raw).relative_to(root))
    except ValueError:
        return raw


def result_lines(name: str, result: ToolResult, project_root: Path | None = None) -> list[Text]:
    """Return a tool result folded to a few lines (a diff, a checklist, or the first lines)."""
    if result.is_error:  # the error is at the end: show the tail, and the exit code
        return _tail_folded(result.text)
    match result.detail:
        case FileChange(path=path, diff=diff, created=created):
            return diff_lines(diff, _short_path(path, project_root), created=created)
        case TodoList(items=items):
            return todo_lines([{"content": i.content, "status": i.status} for i in items])
        case FileRead(first_line=first, last_line=last, total_lines=total):
            shown = last - first + 1
            return [Text(f"Read {shown} lines" + (f" of {total}" if shown < total else ""))]
        case _:
            return _folded(result.text)


def result_tail(text: str, *, error: bool) -> list[Text]:
    """Return a result's text folded as a finished call's is (an error: its tail)."""
    return _tail_folded(text) if error else _folded(text)


def _folded(text: str, style: str = "") -> list[Text]:
    lines = text.rstrip("\n").splitlines() or ["(no output)"]
    if len(lines) > RESULT_LINES:
        more = len(lines) - (RESULT_LINES - 1)
        lines = [*lines[: RESULT_LINES - 1], f"… {more} more lines (ctrl+o shows all)"]
    return [Text(line, style=style) for line in lines]


def _tail_folded(text: str) -> list[Text]:
    lines = [line for line in text.rstrip("\n").splitlines() if line.strip()] or ["(no output)"]
    if len(lines) <= RESULT_LINES:
        return [Text(line, style="red") for line in lines]
    hidden = len(lines) - (RESULT_LINES - 1)
    return [Text(f"… {hidden} line{'s' * (hidden != 1)} above (ctrl+o shows all)", style="dim"),
            *(Text(line, style="red") for line in lines[-(RESULT_LINES - 1):])]


def diff_lines(diff: str, path: str, *, created: bool = False,
               limit: int = DIFF_LINES) -> list[Text]:
    """Return a summary and the coloured, numbered lines of a unified diff (capped)."""
    rows: list[Text] = []
    added = removed = old = new = 0
    for line in diff.splitlines():
        if line.startswith("\\"):  # "\ No newline at end of file", of the line above
            rows.append(Text(f"       {line}", style="dim"))
            continue
        if line.startswith(("---", "+++")):
            continue
        if hunk := _HUNK.match(line):
            old, new = int(hunk.group(1)), int(hunk.group(2))
            if rows:
                rows.append(Text("   ⋮", style="dim"))
            continue
        sign, body = line[:1], line[1:]
        if sign == "+":
            rows.append(Text(f"{new:>4} + {body}", style="green"))
            added, new = added + 1, new + 1
        elif sign == "-":
            rows.append(Text(f"{old:>4} - {body}", style="red"))
            removed, old = removed + 1, old + 1
        elif sign == " ":
            rows.append(Text(f"{new:>4}   {body}", style="dim"))
            old, new = old + 1, new + 1
    if created:
        summary = f"Created {path} ({added} line{'s' * (added != 1)})"
    else:
        summary = (f"Updated {path} with {added} addition{'s' * (added != 1)} and "
                   f"{removed} removal{'s' * (removed != 1)}")
    if len(rows) > limit:
        rows = [*rows[:limit], Text(f"… {len(rows) - limit} more lines", style="dim")]
    return [Text(summary), *rows]


def todo_lines(todos: Sequence[Any]) -> list[Text]:
    """Return the todo list as a checklist: ☐ pending, ◐ in progress, ☑ completed."""
    rows = []
    for item in todos:
        if not isinstance(item, Mapping):
            continue
        status = str(item.get("status", "pending"))
        style = {"completed": "dim", "in_progress": "bold"}.get(status, "")
        rows.append(Text(f"{_CHECKS.get(status, '☐')} {item.get('content', '')}", style=style))
    return rows or [Text("(the todo list is empty)", style="dim")]


def approval_lines(request: ApprovalRequest, change: ProposedChange | None,
                   project_root: Path | None = None, width: int = 80) -> list[Text]:
    """Return what an approval question shows: the call, what it is for, why it asks (whole,
    wrapped to `width`), the command or diff."""
    label = request.label or tool_label(request.tool_name, request.tool_input, project_root)
    rows = [Text.assemble(("? ", "bold yellow"), (label, "bold"),
                          (" needs your approval", "bold yellow"))]
    rows += [Text(f"  {line}", style="italic") for line in _purpose(request, width)]
    if request.reason:
        rows += [Text(line, style="dim") for line in textwrap.wrap(
            f"Why: {request.reason}", max(width - 3, 20), initial_indent="  ",
            subsequent_indent="       ")]
    command = request.tool_input.get("command") if request.tool_name == "Bash" else None
    if isinstance(command, str) and (len(command) > LABEL_CHARS or "\n" in command.strip()):
        lines = command.strip().splitlines()
        rows += [Text(f"  $ {line}") for line in lines[:COMMAND_LINES]]
        rows += [Text("  …", style="dim")] if len(lines) > COMMAND_LINES else []
    if change is not None:
        path = _short_path(str(change.path), project_root)
        if change.diff:
            shown = diff_lines(change.diff, path, created=change.created,
                               limit=APPROVAL_DIFF_LINES)
            summary = re.sub(r"^(Creat|Updat)ed", r"\1e", shown[0].plain)  # not done yet
            rows.append(Text.assemble(("  ⎿ ", "dim"), summary))
            rows += [Text.assemble("    ", line) for line in shown[1:]]
        elif change.note:
            rows.append(Text.assemble(("  ⎿ ", "dim"), (f"{path}: {change.note}", "dim")))
    return rows


def _purpose(request: ApprovalRequest, width: int) -> list[str]:
    """Return what the call says it is for: a command's description, a skill's arguments,
    a subagent's task."""
    tool_input = request.tool_input
    match request.tool_name:
        case "Bash":
            said = tool_input.get("description")
        case "Skill":
            args = tool_input.get("args")
            said = f"with: {args}" if isinstance(args, str) and args.strip() else None
        case "Task":
            said = tool_input.get("description")
        case _:
            said = None
    if not isinstance(said, str) or not said.strip():
        return []
    return textwrap.wrap(" ".join(said.split()), max(width - 3, 20))[:3]


def resolved_line(answer: ApprovalAnswer, remembered: str, request: ApprovalRequest | None,
                  project_root: Path | None = None) -> Text:
    """Return the line that records the user's answer to an approval question."""
    label = ((request.label or tool_label(request.tool_name, request.tool_input, project_root))
             if request is not None else "the tool call")
    if not answer.allowed:
        why = f" ({answer.reason})" if answer.reason else ""
        return Text(f"✗ denied: {label}{why}", style="red")
    if answer.updated_input is not None:
        edited = tool_label(request.tool_name if request else "", answer.updated_input,
                            project_root)
        return Text(f"✓ allowed as you edited it: {edited}", style="green")
    if answer.scope is not ApprovalScope.ONCE and not remembered:
        return Text(f"✓ allowed: {label} (this call only)", style="green")
    shown = describe_rule(remembered, project_root) if remembered else label
    return Text(f"✓ allowed {_ALLOWED[answer.scope]}: {shown}", style="green")


def status_line(usage: Usage, cost_usd: float, session_id: str, *,
                estimated: bool = False) -> Text:
    """Return the line shown after a turn: tokens, cost (`~` if estimated) and session."""
    prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    about = "~" if estimated else ""  # an interrupted call: counted from what streamed
    parts = [f"{about}{format_tokens(prompt)} in", f"{about}{format_tokens(usage.output_tokens)}"
             " out", about + format_cost(cost_usd)]
    if session_id:
        parts.append(f"session {session_id}")
    return Text("─ " + " · ".join(parts), style="dim")


def stop_line(result: ExecutionResult) -> Text | None:
    """Return the line that says why a turn stopped, or None when it simply answered."""
    reason = result.reason[:1].upper() + result.reason[1:]
    match result.stop:
        case StopCause.ANSWERED | StopCause.COMMAND | StopCause.COMMAND_FAILED:
            return None  # (a `!command`: its call line tells how it went)
        case StopCause.INTERRUPTED:
            return Text("⏹ Interrupted. Partial output is kept; say what to do next.",
                        style="yellow")
        case StopCause.MODEL_ERROR:
            hint = auth_hint(result.error)
            return Text(f"✗ Model error: {result.reason}" + (f"\n  {hint}" if hint else ""),
                        style="bold red")
        case cause if cause in _LIMIT_HINTS:
            return Text(f"⚠ {reason}; {_LIMIT_HINTS[cause]}.", style="yellow")
        case _:
            return Text(f"⚠ {reason}.", style="yellow")
