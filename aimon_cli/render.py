"""The rich renderer: turns LiveSession events into terminal output, as they stream."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import Heading, Markdown, MarkdownElement
from rich.segment import Segment, Segments
from rich.text import Text

from aimon_cli._lines import (
    RESULT_LINES,
    approval_lines,
    diff_lines,
    resolved_line,
    result_lines,
    status_line,
    stop_line,
    todo_lines,
    tool_label,
)
from aimon_cli._workflow_view import WorkflowView
from aimon_core.agent import (
    ApprovalRequest,
    ApprovalRequested,
    ApprovalResolved,
    ApprovalWithdrawn,
    AssistantMessageCompleted,
    AssistantTextDelta,
    AssistantThinkingDelta,
    Compacted,
    ExecutionFinished,
    IterationStarted,
    ModelRetrying,
    ModelStreamRestarted,
    Notice,
    ToolCallFinished,
    ToolCallStarted,
    WorkflowRunChanged,
    WorkflowTaskChanged,
)
from aimon_core.live import LiveSessionEvent, TurnFinished, TurnQueued, TurnStarted
from aimon_core.llm import Message

# The line builders are part of this module's face: front ends and tests take them from here.
__all__ = ["Activity", "Renderer", "approval_lines", "diff_lines", "replayed", "resolved_line",
           "result_lines", "split_complete", "status_line", "stop_line", "todo_lines",
           "tool_label"]

THINKING_CHARS = 160
REPLAY_MESSAGES = 6
REPLAY_LINES = 12
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,9}[.)])(?:\s|$)")


class _LeftHeading(Heading):
    """A Markdown heading set flush left and bold, as terminals show headings best."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        self.text.justify = "left"
        self.text.stylize("bold")
        yield self.text


class _Markdown(Markdown):
    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements, "heading_open": _LeftHeading}


def split_complete(buffer: str) -> tuple[str, str]:
    """Split streamed Markdown into (complete blocks, the rest still being written).

    Outside a code fence a blank line ends a block; inside one only the closing fence does.
    In a list, the block ends there only once the next line starts at the margin: an
    indented line goes on the item (its second paragraph or its code keeps the indent).
    """
    fence = ""
    cut = pos = 0
    in_list = False  # the block after `cut` has a list item
    ended = -1  # where a list's block ends if the next line is not indented
    for line in buffer.splitlines(keepends=True):
        if ended >= 0 and line.strip():
            if not line[0].isspace():
                cut, in_list = ended, False
            ended = -1
        if not line.endswith("\n"):
            break
        pos += len(line)
        marker = _FENCE.match(line)
        block_ends = False
        if fence:
            if marker and marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence) \
                    and not line.strip().strip(fence[0]):
                fence, block_ends = "", True
        elif marker:
            fence = marker.group(1)
        elif not line.strip():
            block_ends = True
        elif _ITEM.match(line):
            in_list = True
        if block_ends and in_list:
            ended = pos
        elif block_ends:
            cut = pos
    return buffer[:cut], buffer[cut:]


@dataclass(slots=True)
class Activity:
    """What the session is doing, for the spinner: the iteration and the running tool."""

    busy: bool = False
    iteration: int = 0
    tool: str | None = None
    since: float = 0.0
    queued: int = 0

    def describe(self) -> str:
        """Return e.g. `working · iteration 3 · 12s` or `running Bash · iteration 1 · 2s`."""
        what = f"running {self.tool}" if self.tool else "working"
        parts = [what]
        if self.iteration:
            parts.append(f"iteration {self.iteration}")
        parts.append(f"{time.monotonic() - self.since:.0f}s")
        if self.queued:
            parts.append(f"{self.queued} queued")
        return " · ".join(parts)


class Renderer:
    """Prints the events of one LiveSession to a rich Console; call it with each event."""

    def __init__(self, console: Console, *, session_id: str = "",
                 project_root: Path | None = None) -> None:
        self.console = console
        self.session_id = session_id
        self.project_root = project_root
        self.activity = Activity()
        self._text = ""
        self._thinking = ""
        self._blocks = 0  # Markdown blocks printed in this answer (to space the next one)
        # Tool calls started and not finished: id → (tool, label). Their header is printed
        # with their result, once; until then the live area above the prompt shows them.
        self._pending: dict[str, tuple[str, str]] = {}
        self._queued: set[str] = set()
        self._approvals: dict[str, ApprovalRequest] = {}  # questions asked and not answered
        # Called when the live text changes (the REPL redraws it above the prompt at once).
        self.on_change: Callable[[], None] | None = None
        self.last_folded: tuple[str, str] | None = None  # (call, whole text): ctrl+o shows it
        self.finished_turn: str | None = None  # the last turn whose end was shown
        self.workflows = WorkflowView()  # the session's workflow runs (_workflow_view.py)

    def note(self, text: str, style: str = "dim") -> None:
        """Print a line after the text streamed so far (which is printed first)."""
        self._line(text, style)

    def forget_queued(self) -> None:
        """Forget the queued prompts (they were dropped)."""
        self._queued.clear()
        self.activity.queued = 0

    def expand_last(self) -> None:
        """Print the whole text of the last tool result shown folded (ctrl+o)."""
        if self.last_folded is None:
            self._line("No folded tool result to expand.", "dim")
            return
        label, text = self.last_folded
        self._line_text(Text.assemble(("● ", "bold"), (label, "bold"), (" (whole result)", "dim")))
        for line in text.rstrip("\n").splitlines():
            self.console.print(Text(f"    {line}"), no_wrap=True, overflow="ellipsis", crop=True)

    def live_text(self) -> str:
        """Return the streamed text not printed yet: the Markdown block still being written."""
        return self._text if self._text.strip() else ""

    def running_calls(self) -> list[str]:
        """Return the headers of the tool calls still running, to show in the live area."""
        asked = {request.tool_use_id for request in self._approvals.values()}
        return [*(f"● {label}" + (" · waits for approval" if tool_use_id in asked else "")
                  for tool_use_id, (_, label) in self._pending.items()),
                *self.workflows.tree_lines()]

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    def __call__(self, event: LiveSessionEvent) -> None:
        """Render one event."""
        match event:
            case AssistantTextDelta(text=text):
                self._flush_thinking()
                self._text += text
                complete, self._text = split_complete(self._text)
                self._markdown(complete)
                self._changed()
            case AssistantThinkingDelta(text=text):
                self._thinking += text
            case AssistantMessageCompleted():
                self._flush()
            case IterationStarted(iteration=iteration):
                self.activity.iteration, self.activity.tool = iteration, None
            case ToolCallStarted() | ToolCallFinished():
                self._tool_event(event)
            case ModelRetrying(attempt=attempt, delay=delay, reason=reason):
                self._line(f"↻ {reason}; retrying in {delay:.1f} s (attempt {attempt})",
                           "dim yellow")
            case ModelStreamRestarted(reason=reason):
                self._text, self._thinking = "", ""
                self._changed()
                self._line(f"↻ The answer stream broke ({reason}); the model starts its answer "
                           "again.", "dim yellow")
            case Notice(text=text, level=level):
                self._line(text, {"warning": "yellow", "error": "red"}.get(level, "dim"))
            case Compacted(trigger="auto", text=text, summarised=summarised, advice=advice):
                # `/compact` shows its own outcome; only the automatic one is an event here.
                self._line(f"⟲ {text}", "dim cyan" if summarised else "yellow")
                if advice:
                    self._line(advice, "yellow")
            case ApprovalRequested() | ApprovalResolved() | ApprovalWithdrawn():
                self.approval_event(event)
            case WorkflowTaskChanged() | WorkflowRunChanged():
                for text, style in self.workflows.update(event):
                    self._line(text, style)
                self._changed()
            case _:
                self._session_event(event)

    def _session_event(self, event: LiveSessionEvent) -> None:
        match event:
            case TurnQueued(turn_id=turn_id, prompt=prompt):
                self._queued.add(turn_id)
                self.activity.queued += 1
                self._line(f"⧗ queued: {_first_line(prompt)} (runs after the current turn)",
                           "dim")
            case TurnStarted(turn_id=turn_id, prompt=prompt):
                if turn_id in self._queued:
                    self._queued.discard(turn_id)
                    self.activity.queued = max(0, self.activity.queued - 1)
                    self._line(f"› {_first_line(prompt)}", "bold")
                self.activity.busy, self.activity.since = True, time.monotonic()
                self.activity.iteration, self.activity.tool = 0, None
                self._blocks = 0
            case ExecutionFinished():
                self._flush()
                self._close_pending()
            case TurnFinished(result=result, turn_id=turn_id):
                self.finished_turn = turn_id
                self._flush()
                self._close_pending()
                if (line := stop_line(result)) is not None:
                    self.console.print(line)
                self.console.print(status_line(result.usage, result.cost_usd, self.session_id,
                                               estimated=result.usage_estimated))
                self.activity.busy, self.activity.tool = False, None
            case _:
                pass

    def approval_event(self, event: object) -> None:
        """Render approval events: remember a request, print how it was answered."""
        match event:
            case ApprovalRequested(request=request):
                self._approvals[request.id] = request
            case ApprovalResolved(request_id=request_id, answer=answer, remembered=remembered):
                asked = self._approvals.pop(request_id, None)
                self._line_text(resolved_line(answer, remembered, asked, self.project_root))
            case ApprovalWithdrawn(request_id=request_id):
                self._approvals.pop(request_id, None)
            case _:
                return
        self._changed()  # the live area says which running call waits for an answer

    def turn_failed(self, message: str) -> None:
        """End a turn that raised instead of finishing: close what it left open, say why."""
        self._flush()
        self._close_pending("Not finished")
        self.console.print(Text(f"✗ {message}", style="bold red"))
        self.activity.busy, self.activity.tool = False, None

    def _tool_event(self, event: ToolCallStarted | ToolCallFinished) -> None:
        """Print a call's header with its result, once, when it finishes.

        Printing the header at the start put it on screen twice whenever something came
        between the start and the result (an approval question, a parallel call's result).
        """
        self._flush()
        label = event.label or tool_label(event.name, event.input, self.project_root)
        if isinstance(event, ToolCallStarted):
            self._pending[event.tool_use_id] = (event.name, label)
            self.activity.tool = event.name
            self._changed()
            return
        self._pending.pop(event.tool_use_id, None)
        self.activity.tool = next(reversed(self._pending.values()))[0] if self._pending else None
        self._header(label)
        self._indented(result_lines(event.name, event.result, self.project_root))
        if len(event.result.text.rstrip("\n").splitlines()) > RESULT_LINES:
            self.last_folded = (label, event.result.text)
        self._changed()

    def _header(self, label: str) -> None:
        self.console.print(Text.assemble(("● ", "bold"), (label, "bold")), no_wrap=True,
                           overflow="ellipsis", crop=True)

    def _indented(self, lines: list[Text]) -> None:
        for index, line in enumerate(lines):
            prefix = "  ⎿ " if index == 0 else "    "
            self.console.print(Text.assemble((prefix, "dim"), line), no_wrap=True,
                               overflow="ellipsis", crop=True)

    def _close_pending(self, outcome: str = "Interrupted") -> None:
        for _, label in self._pending.values():
            self._header(label)
            self._indented([Text(outcome, style="red")])
        if self._pending:
            self._pending.clear()
            self._changed()

    def _flush(self) -> None:
        self._flush_thinking()
        rest, self._text = self._text, ""
        self._markdown(rest)
        if rest:
            self._changed()

    def _flush_thinking(self) -> None:
        thought, self._thinking = " ".join(self._thinking.split()), ""
        if thought:
            short = thought if len(thought) <= THINKING_CHARS else \
                thought[: THINKING_CHARS - 1] + "…"
            self.console.print(Text(f"✻ {short}", style="dim italic"), no_wrap=True,
                               overflow="ellipsis", crop=True)

    def _markdown(self, text: str) -> None:
        if not text.strip():
            return
        lines = self.console.render_lines(_Markdown(text.strip("\n")), pad=False)
        while lines and _blank(lines[0]):
            lines.pop(0)
        while lines and _blank(lines[-1]):
            lines.pop()
        if self._blocks:
            self.console.print()
        self._blocks += 1
        segments: list[Segment] = []
        for line in lines:
            segments.extend(_rstrip(line))
            segments.append(Segment.line())
        self.console.print(Segments(segments), end="")

    def _line(self, text: str, style: str) -> None:
        self._line_text(Text(text, style=style))

    def _line_text(self, text: Text) -> None:
        self._flush()
        self.console.print(text)

    def replay(self, messages: Sequence[Message], *, limit: int = REPLAY_MESSAGES) -> None:
        """Print the last user prompts and answers of a resumed session, shortened."""
        shown = replayed(messages, limit)
        self.console.print(Text(
            f"── Resumed session {self.session_id} · {len(messages)} "
            f"message{'s' * (len(messages) != 1)} ──", style="dim"))
        for message in shown:
            # A prompt is what was typed: the context blocks aimon added after it stay out.
            shown_text = message.first_text if message.role == "user" else message.text
            lines = shown_text.strip().splitlines()
            cut = len(lines) > REPLAY_LINES
            text = "\n".join(lines[:REPLAY_LINES]) + ("\n…" if cut else "")
            if message.role == "user":
                self.console.print(Text(f"› {text}", style="bold"))
            else:
                self._blocks = 0
                self._markdown(text)
        self.console.print(Text("──", style="dim"))
        self._blocks = 0


def replayed(messages: Sequence[Message], limit: int) -> list[Message]:
    """Return the messages a resume shows: the last `limit` with text, reaching back (to at
    most twice that) so that an answer comes with its prompt. Only the end is looked at."""
    spoken: list[Message] = []
    for message in reversed(messages):
        if len(spoken) == 2 * limit:
            break
        if message.text.strip():
            spoken.append(message)
    spoken.reverse()
    start = max(len(spoken) - limit, 0)
    while start > 0 and spoken[start].role != "user":  # an answer comes with its prompt
        start -= 1
    return spoken[start:]


def _blank(line: list[Segment]) -> bool:
    return all(not segment.text.strip() for segment in line)


def _rstrip(line: list[Segment]) -> list[Segment]:
    """Drop trailing spaces of unstyled segments (rich pads lines; tests and copies hate it)."""
    out = list(line)
    while out and not out[-1].text.strip() and not (out[-1].style and out[-1].style.bgcolor):
        out.pop()
    if out and out[-1].text != out[-1].text.rstrip() and not (
            out[-1].style and out[-1].style.bgcolor):
        last = out.pop()
        out.append(Segment(last.text.rstrip(), last.style, last.control))
    return out


def _first_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    extra = len(text.strip().splitlines()) - 1
    return first + (f" (+{extra} lines)" if extra > 0 else "")
