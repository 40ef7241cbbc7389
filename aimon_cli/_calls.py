"""The tool calls of a turn that have not ended: what the live area above the prompt shows.

A call appears as soon as the model starts it (`Write(…)` while its input streams), gets its
one-line form when it starts, shows its command's last lines of output as they come, and
says when it waits for the person's approval. Its header is printed with its result, once,
when it ends (or earlier, when a subagent's steps are to follow it).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

# The last lines of a running command shown under it.
OUTPUT_ROWS = 5
# The last lines kept for a call cut short (printed under "Interrupted").
KEPT_LINES = 8


@dataclass(slots=True)
class RunningCall:
    """One tool call not ended yet."""

    name: str
    label: str
    started: bool = False  # its input is known (ToolCallStarted came)
    waiting: bool = False  # an approval question waits for it
    shown: bool = False  # its header is printed already
    lines: deque[str] = field(default_factory=lambda: deque(maxlen=KEPT_LINES))
    partial: str = ""  # the unfinished last line of its output

    def output(self, text: str) -> None:
        """Take a piece of its output (whole lines, as the core passes them on)."""
        text = self.partial + text
        *done, self.partial = text.split("\n")
        for line in done:
            self.lines.append(line.rsplit("\r", 1)[-1].rstrip())

    def tail(self, count: int) -> list[str]:
        """Return its last `count` lines of output (the unfinished one too)."""
        rows = [*self.lines, *([self.partial] if self.partial.strip() else [])]
        return rows[-count:]


class RunningCalls:
    """The calls of a turn not ended yet, by tool_use id, in the order they came."""

    def __init__(self) -> None:
        self._calls: dict[str, RunningCall] = {}

    def __bool__(self) -> bool:
        return bool(self._calls)

    def __contains__(self, tool_use_id: object) -> bool:
        return tool_use_id in self._calls

    def announce(self, tool_use_id: str, name: str) -> None:
        """The model began the call: its name is known, its input still streams."""
        self._calls.setdefault(tool_use_id, RunningCall(name=name, label=f"{name}(…)"))

    def start(self, tool_use_id: str, name: str, label: str) -> RunningCall:
        """The call starts with this input (its one-line form is `label`)."""
        call = self._calls.setdefault(tool_use_id, RunningCall(name=name, label=label))
        call.label, call.started = label, True
        return call

    def get(self, tool_use_id: str) -> RunningCall | None:
        """Return the call, if it has not ended."""
        return self._calls.get(tool_use_id)

    def end(self, tool_use_id: str) -> RunningCall | None:
        """Forget the call (it ended); return it."""
        return self._calls.pop(tool_use_id, None)

    def wait(self, tool_use_id: str, waiting: bool) -> None:
        """Say whether an approval question waits for the call."""
        if (call := self._calls.get(tool_use_id)) is not None:
            call.waiting = waiting

    def all(self) -> list[RunningCall]:
        """Return the calls, oldest first."""
        return list(self._calls.values())

    def clear(self) -> list[RunningCall]:
        """Forget every call; return them."""
        calls, self._calls = list(self._calls.values()), {}
        return calls

    def doing(self) -> str | None:
        """Return what the spinner says they do: waiting for approval, or running a tool."""
        if any(call.waiting for call in self._calls.values()):
            return "waiting for your approval"
        running = [call for call in self._calls.values() if not call.shown]
        last = running[-1] if running else None
        if last is None:
            return None
        return f"running {last.name}" if last.started else f"writing {last.name} call"

    def rows(self) -> list[tuple[str, str]]:
        """Return the live area's rows: each call, its state, its last lines of output."""
        rows: list[tuple[str, str]] = []
        for call in self._calls.values():
            if call.shown:
                continue
            state = " · waiting for your approval" if call.waiting else ""
            rows.append(("bold", f"● {call.label}{state}"))
            for number, line in enumerate(call.tail(OUTPUT_ROWS)):
                rows.append(("class:activity", ("  ⎿ " if number == 0 else "    ") + line))
        return rows
