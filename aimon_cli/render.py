"""The rich renderer: turns LiveSession events into terminal output, as they stream."""

from __future__ import annotations

import re
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import Heading, Markdown, MarkdownElement
from rich.segment import Segment, Segments
from rich.text import Text

from aimon_cli._calls import KEPT_LINES, RunningCalls
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
from aimon_cli._replay import REPLAY_PROMPTS, replay_lines
from aimon_cli._workflow_view import WorkflowView
from aimon_core.agent import (
    ApprovalRefused,
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
    SubagentFinished,
    SubagentStarted,
    SubagentStep,
    ToolCallAnnounced,
    ToolCallFinished,
    ToolCallOutput,
    ToolCallStarted,
    WorkflowRunChanged,
    WorkflowTaskChanged,
)
from aimon_core.command import format_tokens, plural
from aimon_core.live import LiveSessionEvent, TurnFinished, TurnQueued, TurnStarted
from aimon_core.llm import Message

# The line builders are part of this module's face: front ends and tests take them from here.
__all__ = ["Activity", "Renderer", "approval_lines", "diff_lines", "resolved_line",
           "result_lines", "split_complete", "status_line", "stop_line", "todo_lines",
           "tool_label"]

THINKING_CHARS = 160
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
    """What the session is doing, for the spinner: the iteration and what runs now."""

    busy: bool = False
    iteration: int = 0
    doing: str | None = None  # "running Bash", "waiting for your approval", "compacting …"
    since: float = 0.0
    queued: int = 0

    def describe(self) -> str:
        """Return e.g. `working · iteration 3 · 12s` or `running Bash · iteration 1 · 2s`."""
        parts = [self.doing or "working"]
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
        # Tool calls not ended: the live area above the prompt shows them, and their header
        # is printed with their result, once (see `_calls`).
        self.calls = RunningCalls()
        self._queued: dict[str, str] = {}  # turn id → prompt, waiting to run
        self._approvals: dict[str, ApprovalRequest] = {}  # questions asked and not answered
        self._user_denied: set[str] = set()  # calls the person denied (their ✗ line is out)
        self._refused: dict[str, str] = {}  # calls a rule refused → why
        self._held: list[Text] = []  # notices that came while calls ran: printed after them
        self._forks: dict[str, tuple[str, bool]] = {}  # running subagents: id → (agent, call)
        # Called when the live text changes (the REPL redraws it above the prompt at once).
        self.on_change: Callable[[], None] | None = None
        self.last_folded: tuple[str, str] | None = None  # (call, whole text): ctrl+o shows it
        self.finished_turn: str | None = None  # the last turn whose end was shown
        self.workflows = WorkflowView()  # the session's workflow runs (_workflow_view.py)
        self._command_doing: str | None = None  # what a running slash command does

    def note(self, text: str, style: str = "dim") -> None:
        """Print a line after the text streamed so far (which is printed first)."""
        self._line(text, style)

    def take_queued(self) -> list[str]:
        """Forget the queued prompts (an interruption dropped them); return them, oldest first."""
        prompts = list(self._queued.values())
        self._queued.clear()
        self.activity.queued = 0
        self._changed()
        return prompts

    def expand_last(self) -> None:
        """Print the whole text of the last tool result shown shortened (ctrl+o)."""
        if self.last_folded is None:
            self._line("No shortened tool result to expand.", "dim")
            return
        label, text = self.last_folded
        self._line_text(Text.assemble(("● ", "bold"), (label, "bold"), (" (whole result)", "dim")))
        for line in text.rstrip("\n").splitlines():  # whole: long lines fold, never cut
            self.console.print(Text(f"    {line}"), overflow="fold")

    def live_text(self) -> str:
        """Return the streamed text not printed yet: the Markdown block still being written."""
        return self._text if self._text.strip() else ""

    def running_calls(self) -> list[str]:
        """Return the headers of the tool calls still running, as the live area shows them."""
        return [*(text for style, text in self.calls.rows() if style == "bold"),
                *self.workflows.tree_lines()]

    def live_rows(self) -> list[tuple[str, str]]:
        """Return the live area's rows below the streamed text: calls, workflows, then
        queued prompts."""
        queued = [("class:activity", f"⧗ queued: {_first_line(prompt)}")
                  for prompt in self._queued.values()]
        workflows = [("bold", line) for line in self.workflows.tree_lines()]
        return [*self.calls.rows(), *workflows, *queued]

    def _changed(self) -> None:
        self.activity.doing = self._command_doing or self.calls.doing()
        if self.on_change is not None:
            self.on_change()

    def command_started(self, doing: str) -> None:
        """Show the spinner for a command that runs (`compacting the conversation`)."""
        self._command_doing = doing
        self.activity.busy, self.activity.since = True, time.monotonic()
        self.activity.iteration = 0
        self._changed()

    def command_finished(self) -> None:
        """End the spinner of a command."""
        self._command_doing = None
        self.activity.busy = False
        self._changed()

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
                self.activity.iteration = iteration
            case ToolCallAnnounced() | ToolCallStarted() | ToolCallOutput() | ToolCallFinished():
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
                self._notice(Text(text, style={"warning": "yellow", "error": "red"}.get(
                    level, "dim")))
            case Compacted(trigger="auto", text=text, summarised=summarised, advice=advice):
                # `/compact` shows its own outcome; only the automatic one is an event here.
                self._line(f"⟲ {text}", "dim cyan" if summarised else "yellow")
                if advice:
                    self._line(advice, "yellow")
            case ApprovalRequested() | ApprovalResolved() | ApprovalWithdrawn() | \
                    ApprovalRefused():
                self.approval_event(event)
            case WorkflowTaskChanged() | WorkflowRunChanged():
                for text, style in self.workflows.update(event):
                    self._line(text, style)
                self._changed()
            case SubagentStarted() | SubagentStep() | SubagentFinished():
                self._subagent_event(event)
            case _:
                self._session_event(event)

    def _session_event(self, event: LiveSessionEvent) -> None:
        match event:
            case TurnQueued(turn_id=turn_id, prompt=prompt):
                self._queued[turn_id] = prompt
                self.activity.queued = len(self._queued)
                self._changed()  # the live area lists it; the answer streaming stays whole
            case TurnStarted(turn_id=turn_id, prompt=prompt):
                if self._queued.pop(turn_id, None) is not None:
                    self.activity.queued = len(self._queued)
                    self._line(f"› {prompt}", "bold")  # where it runs, not where it was typed
                self.activity.busy, self.activity.since = True, time.monotonic()
                self.activity.iteration = 0
                self._blocks = 0
                self._changed()
            case ExecutionFinished():
                self._flush()
                self._close_pending()
            case TurnFinished(result=result, turn_id=turn_id):
                self.finished_turn = turn_id
                self._flush()
                self._close_pending()
                if (line := stop_line(result)) is not None:
                    self.console.print(line)
                if result.iterations or result.usage.total_tokens:  # not a !command
                    self.console.print(status_line(result.usage, result.cost_usd,
                                                   self.session_id,
                                                   estimated=result.usage_estimated))
                self.activity.busy = False
                self._changed()
            case _:
                pass

    def approval_event(self, event: object) -> None:
        """Render approval events: remember a request, print how it was answered."""
        match event:
            case ApprovalRequested(request=request):
                self._approvals[request.id] = request
                self.calls.wait(request.tool_use_id, True)
            case ApprovalResolved(request_id=request_id, answer=answer, remembered=remembered):
                asked = self._approvals.pop(request_id, None)
                if asked is not None:
                    self.calls.wait(asked.tool_use_id, False)
                    if not answer.allowed:
                        self._user_denied.add(asked.tool_use_id)
                self._line_text(resolved_line(answer, remembered, asked, self.project_root))
            case ApprovalWithdrawn(request_id=request_id):
                asked = self._approvals.pop(request_id, None)
                if asked is not None:
                    self.calls.wait(asked.tool_use_id, False)
            case ApprovalRefused(tool_use_id=tool_use_id, reason=reason, denied=True):
                self._refused[tool_use_id] = reason
            case _:
                return
        self._changed()  # the live area says which running call waits for an answer

    def turn_failed(self, message: str) -> None:
        """End a turn that raised instead of finishing: close what it left open, say why."""
        self._flush()
        self._close_pending("Not finished")
        self.console.print(Text(f"✗ {message}", style="bold red"))
        self.activity.busy = False
        self._changed()

    def _tool_event(self, event: ToolCallAnnounced | ToolCallStarted | ToolCallOutput |
                    ToolCallFinished) -> None:
        """Keep a running call in the live area; print its header with its result, once.

        Printing the header at the start put it on screen twice whenever something came
        between the start and the result (an approval question, a parallel call's result).
        """
        match event:
            case ToolCallAnnounced(tool_use_id=tool_use_id, name=name):
                self._flush()  # the text before a call is complete
                self.calls.announce(tool_use_id, name)
            case ToolCallStarted(tool_use_id=tool_use_id, name=name, input=tool_input):
                self._flush()
                self.calls.start(tool_use_id, name, event.label or tool_label(
                    name, tool_input, self.project_root))
            case ToolCallOutput(tool_use_id=tool_use_id, text=text):
                call = self.calls.get(tool_use_id)
                if call is not None:
                    call.output(text)
            case ToolCallFinished():
                self._finished(event)
        self._changed()

    def _finished(self, event: ToolCallFinished) -> None:
        self._flush()
        call = self.calls.end(event.tool_use_id)
        label = event.label or tool_label(event.name, event.input, self.project_root)
        if event.tool_use_id in self._user_denied:  # its "✗ denied: …" line says it all
            self._user_denied.discard(event.tool_use_id)
        elif (why := self._refused.pop(event.tool_use_id, None)) is not None:
            self._header(label, denied=True)
            self._wrapped(f"Denied: {why}", "red")
        else:
            if call is None or not call.shown:
                self._header(label)
            lines = result_lines(event.name, event.result, self.project_root)
            cut = self._indented(lines)
            if cut or len(event.result.text.rstrip("\n").splitlines()) > RESULT_LINES:
                self.last_folded = (label, event.result.text)
        self._release_held()

    def _subagent_event(self, event: SubagentStarted | SubagentStep | SubagentFinished) -> None:
        """Show a subagent's work under the call (or command) that started it."""
        self._flush()
        match event:
            case SubagentStarted(execution_id=execution_id, agent=agent, goal=goal):
                starter = next((c for c in self.calls.all() if c.name in ("Task", "Skill")
                                and not c.shown), None)
                if starter is not None:
                    starter.shown = True
                    self._header(starter.label)
                else:
                    self._header(f"{agent}({_one_line(goal, 60)})")
                self._forks[execution_id] = (agent, starter is not None)
            case SubagentStep(execution_id=execution_id, agent=agent, label=label):
                who = f"{agent} · " if len(self._forks) > 1 else ""
                self._indented([Text(f"{who}{label}", style="dim")], first=True)
            case SubagentFinished(execution_id=execution_id, result=result):
                self._forks.pop(execution_id, None)
                tokens = result.usage.input_tokens + result.usage.output_tokens + \
                    result.usage.cache_read_tokens + result.usage.cache_write_tokens
                done = "Done" if result.stop.ok else f"Stopped: {result.reason}"
                self._indented([Text(f"{done} ({plural(result.tool_calls, 'tool call')} · "
                                     f"{format_tokens(tokens)} tokens · "
                                     f"{result.duration_s:.0f}s)", style="dim")], first=True)
        self._changed()

    def _notice(self, text: Text) -> None:
        """Print a notice, or hold it until the running calls end (it follows them)."""
        if self.calls:
            self._held.append(text)
        else:
            self._line_text(text)

    def _release_held(self) -> None:
        if not self.calls:
            held, self._held = self._held, []
            for text in held:
                self.console.print(text)

    def _header(self, label: str, *, denied: bool = False) -> None:
        bullet = ("✗ ", "bold red") if denied else ("● ", "bold")
        self.console.print(Text.assemble(bullet, (label, "bold")), no_wrap=True,
                           overflow="ellipsis", crop=True)

    def _indented(self, lines: list[Text], *, first: bool = True) -> bool:
        """Print `lines` under a header, each on one row; return whether any was cut."""
        room = self.console.width - 4
        for index, line in enumerate(lines):
            prefix = "  ⎿ " if index == 0 and first else "    "
            self.console.print(Text.assemble((prefix, "dim"), line), no_wrap=True,
                               overflow="ellipsis", crop=True)
        return any(line.cell_len > room for line in lines)

    def _wrapped(self, text: str, style: str) -> None:
        """Print `text` under a header, wrapped between words (never cut)."""
        rows = textwrap.wrap(text, max(self.console.width - 5, 20)) or [""]
        for index, row in enumerate(rows):
            self.console.print(Text.assemble(("  ⎿ " if index == 0 else "    ", "dim"),
                                             (row, style)))

    def _close_pending(self, outcome: str = "Interrupted") -> None:
        for call in self.calls.clear():
            if not call.shown:
                self._header(call.label)
            self._indented([Text(outcome, style="red"),
                            *(Text(line, style="dim") for line in call.tail(KEPT_LINES))])
        self._release_held()
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

    def markdown(self, text: str) -> None:
        """Print `text` as Markdown, as answers are (a command's answer)."""
        self._flush()
        self._blocks = 0
        self._markdown(text)
        self._blocks = 0

    def _line(self, text: str, style: str) -> None:
        self._line_text(Text(text, style=style))

    def _line_text(self, text: Text) -> None:
        self._flush()
        self.console.print(text)

    def replay(self, messages: Sequence[Message], *, prompts: int = REPLAY_PROMPTS) -> None:
        """Print the last prompts of a resumed session with what each did, shortened."""
        for line in replay_lines(messages, self.session_id, self.project_root,
                                 prompts=prompts):
            if isinstance(line, str):
                self.markdown(line)
            else:
                self.console.print(line, no_wrap=True, overflow="ellipsis", crop=True)


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


def _one_line(text: str, width: int) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= width else first[: width - 1] + "…"


def _first_line(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    extra = len(text.strip().splitlines()) - 1
    return first + (f" (+{extra} line{'s' * (extra != 1)})" if extra > 0 else "")
