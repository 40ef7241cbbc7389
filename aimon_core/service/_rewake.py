"""Rewake: background work that finishes while its session is idle wakes the session.

When the model starts a background command (Bash with run_in_background) or a background
subagent (Task with run_in_background), the hosted session watches it. When it finishes and the
model has not read its end already, the session gets a new turn whose prompt is the result,
marked as a rewake (it starts with `[rewake]`); the turn runs on the session's budget like any
other. While a turn runs, a due rewake waits for the session to be idle. `/rewakes` lists
them; the `service.rewake` setting turns them off (finished work is then listed as "off").
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from aimon_core.agent import ToolCallFinished
from aimon_core.tools import ToolInput

if TYPE_CHECKING:
    from aimon_core.live import LiveSession

log = logging.getLogger(__name__)

REWAKE_MARK = "[rewake]"
# AgentOutput waits this long (ms) per call for a background subagent to finish.
_TASK_WAIT_MS = 3_600_000


@runtime_checkable
class WaitsForJobs(Protocol):
    """A shell that can wait for one of its background jobs to end (LocalShell)."""

    async def wait_background(self, shell_id: str) -> str:
        """Wait until the job ends; return its status."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Rewake:
    """One piece of background work the session may be woken for.

    `state`: watching (still running), due (finished; the session wakes when idle),
    delivered (its turn ran), read (the model read its end itself: no turn), off (the
    setting is off), closed (the session closed first).
    """

    id: str
    source: str
    kind: str  # "command" or "subagent"
    label: str
    state: str = "watching"
    finished_at: float | None = None
    text: str = ""

    def line(self) -> str:
        """Return the entry as one line of `/rewakes`."""
        when = time.strftime("%H:%M:%S", time.localtime(self.finished_at)) \
            if self.finished_at else "--:--:--"
        return f"{self.id}  {when}  {self.state:<9}  {self.kind} {self.source}: {self.label}"


class Rewakes:
    """The rewakes of one hosted session: what it watches, what is due, what was delivered."""

    def __init__(self, live: LiveSession, *, enabled: bool, wake: Callable[[], None]) -> None:
        self._live = live
        self.enabled = enabled
        self._wake = wake
        self._entries: dict[str, Rewake] = {}
        self._by_source: dict[str, str] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._ids = itertools.count(1)

    def all(self) -> tuple[Rewake, ...]:
        """Return every rewake, oldest first."""
        return tuple(self._entries.values())

    def watching(self) -> int:
        """Return how many background jobs are still running."""
        return sum(1 for e in self._entries.values() if e.state == "watching")

    def pending_count(self) -> int:
        """Return how many rewakes wait for the session to be idle."""
        return sum(1 for e in self._entries.values() if e.state == "due")

    def text(self) -> str:
        """Return what `/rewakes` shows."""
        if not self._entries:
            return ("No rewakes: background commands and subagents this session starts wake it "
                    "when they finish while it is idle." + ("" if self.enabled else
                                                            " (Rewakes are off: service.rewake.)"))
        head = "" if self.enabled else "Rewakes are off (the service.rewake setting).\n"
        return head + "\n".join(entry.line() for entry in self._entries.values())

    def saw_tool_call(self, event: ToolCallFinished) -> None:
        """Watch background work a call started; note when the model read work's end."""
        data, result = event.result.data, event.result
        if result.is_error:
            return
        match event.name:
            case "Bash" if isinstance(data.get("shell_id"), str):
                self._start(str(data["shell_id"]), "command", str(data.get("command", "")),
                            self._watch_command)
            case "Task" if isinstance(data.get("task_id"), str):
                label = str(event.input.get("description", "")) or "subagent"
                self._start(str(data["task_id"]), "subagent", label, self._watch_subagent)
            case "BashOutput" if data.get("status") not in (None, "running"):
                self._read(str(data.get("shell_id", "")))
            case "AgentOutput" if "stop" in data:
                self._read(str(data.get("task_id", "")))

    def _start(self, source: str, kind: str, label: str,
               watch: Callable[[Rewake], Coroutine[Any, Any, None]]) -> None:
        if source in self._by_source:
            return
        entry = Rewake(id=f"rewake-{next(self._ids)}", source=source, kind=kind, label=label)
        self._entries[entry.id] = entry
        self._by_source[source] = entry.id
        task = asyncio.get_running_loop().create_task(watch(entry), name=f"rewake {source}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _read(self, source: str) -> None:
        entry_id = self._by_source.get(source)
        entry = self._entries.get(entry_id or "")
        if entry is not None and entry.state in ("watching", "due"):
            self._entries[entry.id] = replace(entry, state="read")

    def _finished(self, entry: Rewake, text: str = "") -> None:
        now = self._entries.get(entry.id, entry)
        if now.state != "watching":
            return  # read by the model meanwhile, or closed
        state = "due" if self.enabled else "off"
        self._entries[entry.id] = replace(now, state=state, finished_at=time.time(), text=text)
        if state == "due":
            self._wake()

    async def _watch_command(self, entry: Rewake) -> None:
        shell = self._live.tool_context.shell
        if not isinstance(shell, WaitsForJobs):
            self._entries[entry.id] = replace(entry, state="unsupported")
            return
        try:
            await shell.wait_background(entry.source)
        except LookupError:  # the shell forgot it (killed with the session)
            return
        self._finished(entry)  # its output is read when the rewake is delivered

    async def _watch_subagent(self, entry: Rewake) -> None:
        tool = self._live.runtime.tools.get("AgentOutput")
        if tool is None:
            return
        while True:
            result = await tool.run(ToolInput({"task_id": entry.source, "block": True,
                                               "timeout": _TASK_WAIT_MS}),
                                    self._live.tool_context)
            if result.data.get("state") != "running":
                self._finished(entry, result.text)
                return

    async def take_due(self) -> str | None:
        """Return the prompt of the oldest due rewake (now delivered), or None.

        A command's output is read now, just before its turn, as BashOutput reads it: read
        when it finished, it would be gone for a BashOutput call the model made meanwhile.
        """
        await self._read_outputs()
        for entry in self._entries.values():
            if entry.state == "due":
                self._entries[entry.id] = replace(entry, state="delivered")
                return self._prompt(entry)
        return None

    def _prompt(self, entry: Rewake) -> str:
        what = (f"The background command {entry.source} ({entry.label})"
                if entry.kind == "command" else
                f"The background subagent task {entry.source} ({entry.label})")
        return f"{REWAKE_MARK} {what} finished while the session was idle.\n\n" + (
            entry.text or "(Read its output with BashOutput.)")

    async def _read_outputs(self) -> None:
        tool = self._live.runtime.tools.get("BashOutput")
        for entry in list(self._entries.values()):
            if entry.state == "due" and entry.kind == "command" and not entry.text \
                    and tool is not None:
                result = await tool.run(ToolInput({"bash_id": entry.source}),
                                        self._live.tool_context)
                self._entries[entry.id] = replace(entry, text=result.text)

    async def close(self) -> None:
        """Stop watching; what was not delivered is marked closed."""
        for task in list(self._tasks):
            task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for entry in list(self._entries.values()):
            if entry.state in ("watching", "due"):
                self._entries[entry.id] = replace(entry, state="closed")
