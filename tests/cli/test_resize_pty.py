"""What the REPL leaves on a terminal screen: `aimon` in a pty, its bytes fed to a small
terminal emulator that rewraps lines on resize as most terminals do (issue 9).

One `aimon` process carries the whole story (each costs ~1.5 CPU-seconds): parallel tool
calls and an approved one, each with one header; a resize while the spinner shows, which must
leave no stale spinner row; and Ctrl-C mid-answer, whose notice comes after the partial text.
Every wait is on the emulated screen's text, never a fixed sleep.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pytest

from aimon_cli._terminal import rewrapped_rows
from aimon_core.testing import LoopbackModelServer, Reply, ScriptedToolCall, StallStream

from .conftest import AIMON, TIMEOUT

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")

_CODES = re.compile(r"\x1b\[([?>=]?)([\d;]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
                    r"|\x1b[()][0-9A-Za-z]|\x1b([78=>DEM])|([\x00-\x1f])|([^\x00-\x1f\x1b]+)")


class Terminal:
    """A VT100 screen, enough of it for what prompt-toolkit and rich write.

    Rows remember whether they were autowrapped; `resize` rewraps each line at the new width
    the way VTE, kitty or iTerm2 do (a line wider than the screen takes more rows).
    """

    def __init__(self, rows: int, columns: int) -> None:
        self.rows, self.columns = rows, columns
        self.lines = [[" "] * columns for _ in range(rows)]
        self.wrapped = [False] * rows  # the row goes on in the next one
        self.gone: list[str] = []  # rows scrolled off the top
        self.row = self.column = 0
        self.pending_wrap, self.autowrap = False, True
        self.erases = 0  # how many erase-below sequences came (prompt-toolkit's erase)

    def screen(self) -> list[str]:
        return ["".join(line).rstrip() for line in self.lines]

    def everything(self) -> list[str]:
        return [*self.gone, *self.screen()]

    def feed(self, data: str) -> None:
        for match in _CODES.finditer(data):
            private, params, final, _, control, text = match.groups()
            if text:
                self._text(text)
            elif control:
                self._control(control)
            elif final:
                self._csi(private, params, final)

    def _text(self, text: str) -> None:
        for char in text:
            if self.pending_wrap and self.autowrap:
                self.wrapped[self.row], self.column = True, 0
                self._line_feed()
            self.pending_wrap = False
            self.lines[self.row][self.column] = char
            if self.column == self.columns - 1:
                self.pending_wrap = True
            else:
                self.column += 1

    def _control(self, char: str) -> None:
        self.pending_wrap = False
        if char == "\r":
            self.column = 0
        elif char == "\n":
            self._line_feed()
        elif char == "\b":
            self.column = max(0, self.column - 1)

    def _line_feed(self) -> None:
        if self.row < self.rows - 1:
            self.row += 1
            return
        self.gone.append("".join(self.lines.pop(0)).rstrip())
        self.wrapped.pop(0)
        self.lines.append([" "] * self.columns)
        self.wrapped.append(False)

    def _csi(self, private: str, params: str, final: str) -> None:
        numbers = [int(p or 0) for p in params.split(";")] if params else []
        n = max(numbers[0], 1) if numbers else 1
        self.pending_wrap = False
        if private:
            if params == "7" and final in "hl":
                self.autowrap = final == "h"
            return
        if final in "ABCDG":
            row, column = {"A": (self.row - n, self.column), "B": (self.row + n, self.column),
                           "C": (self.row, self.column + n), "D": (self.row, self.column - n),
                           "G": (self.row, n - 1)}[final]
            self.row = min(max(row, 0), self.rows - 1)
            self.column = min(max(column, 0), self.columns - 1)
        elif final == "J" and (not numbers or numbers[0] == 0):
            self.erases += 1
            # Erasing a row's end ends its continuation too (xterm's ClearRight).
            self.lines[self.row][self.column:] = [" "] * (self.columns - self.column)
            self.wrapped[self.row] = False
            for row in range(self.row + 1, self.rows):
                self.lines[row], self.wrapped[row] = [" "] * self.columns, False
        elif final == "K" and (not numbers or numbers[0] == 0):
            self.lines[self.row][self.column:] = [" "] * (self.columns - self.column)
            self.wrapped[self.row] = False

    def resize(self, columns: int) -> None:
        """Narrow or widen the screen, rewrapping its lines (the cursor stays on its char)."""
        logical: list[str] = []
        text, cursor = "", (0, 0)
        for row, line in enumerate(self.lines):
            if row == self.row:
                cursor = (len(logical), len(text) + self.column)
            text += "".join(line) if self.wrapped[row] else "".join(line).rstrip()
            if not self.wrapped[row]:
                logical, text = [*logical, text], ""
        rows: list[tuple[str, bool]] = []
        for index, joined in enumerate(logical):
            parts = [joined[at:at + columns] for at in range(0, len(joined), columns)] or [""]
            if index == cursor[0]:
                self.row, self.column = len(rows) + cursor[1] // columns, cursor[1] % columns
            rows += [(part, at < len(parts) - 1) for at, part in enumerate(parts)]
        while self.row >= self.rows:  # the cursor's row stays on screen
            self.gone.append(rows.pop(0)[0].rstrip())
            self.row -= 1
        rows = (rows + [("", False)] * self.rows)[:self.rows]
        self.columns = columns
        self.lines = [list(part.ljust(columns)) for part, _ in rows]
        self.wrapped = [wrapped for _, wrapped in rows]


def test_the_emulator_rewraps_a_long_row_when_narrowed() -> None:
    terminal = Terminal(5, 20)
    terminal.feed("0123456789abcdef\r\n› ")
    terminal.resize(10)
    assert terminal.screen()[:3] == ["0123456789", "abcdef", "›"]
    terminal.feed("\x1b[1A\r\x1b[J")  # prompt-toolkit's erase of one drawn row above
    assert terminal.screen()[:2] == ["0123456789", ""]  # the row's first part stays


def test_rewrapped_rows_counts_the_rows_each_drawn_row_takes() -> None:
    assert rewrapped_rows([54, 0, 20], 2, 40) == 4
    assert rewrapped_rows([54, 81], 45, 40) == 2 + 3 + 1
    assert rewrapped_rows([], 0, 1) == 0


class Session:
    """`aimon` in a pty, its output fed to a `Terminal` as it comes."""

    def __init__(self, child: pexpect.spawn, terminal: Terminal) -> None:
        self.child, self.terminal = child, terminal

    def wait(self, condition: Callable[[list[str]], bool], what: str) -> list[str]:
        """Read output until `condition(screen rows)` holds; return those rows."""
        deadline = time.monotonic() + TIMEOUT
        while not condition(self.terminal.screen()):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting until {what}:\n" +
                                     "\n".join(self.terminal.everything()))
            try:
                self.terminal.feed(self.child.read_nonblocking(65536, timeout=0.1))
            except pexpect.TIMEOUT:
                continue
        return self.terminal.screen()

    def shows(self, text: str) -> list[str]:
        return self.wait(lambda rows: any(text in row for row in rows), f"{text!r} shows")


def redrawn(rows: list[str]) -> bool:
    """Tell whether the prompt shows last, under the spinner (the live area is drawn)."""
    shown = [row for row in rows if row.strip()]
    return len(shown) > 2 and shown[-1].startswith("›") and any(
        "working ·" in row for row in shown[-3:-1])


@pytest.fixture
def session(tmp_path: Path) -> Iterator[tuple[Session, LoopbackModelServer, Path]]:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    with LoopbackModelServer(provider="openai") as server:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("ANTHROPIC_", "OPENAI_", "AIMON_PROVIDER", "AIMON_MODEL",
                                    "XTERM_VERSION"))}
        env.update(OPENAI_API_KEY="k", OPENAI_BASE_URL=server.openai_base_url,
                   AIMON_HOME=os.environ["AIMON_HOME"], AIMON_NO_LOCAL_PROBE="1",
                   PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm")
        child = pexpect.spawn(AIMON, ["--provider", "openai", "--model", "gpt-5.4"],
                              cwd=str(project), env=env, dimensions=(30, 100),
                              encoding="utf-8", timeout=TIMEOUT)
        try:
            yield Session(child, Terminal(30, 100)), server, project
        finally:
            child.terminate(force=True)


def test_calls_print_one_header_each_resize_leaves_no_stale_spinner_and_interrupting_follows_the_text(  # noqa: E501
        session: tuple[Session, LoopbackModelServer, Path]) -> None:
    aimon, server, project = session
    calc, missing = str(project / "calc.py"), str(project / "missing.py")
    server.add(
        Reply(text="Looking.", tool_calls=(
            ScriptedToolCall(name="Read", input={"file_path": calc}),
            ScriptedToolCall(name="Read", input={"file_path": missing}),
            ScriptedToolCall(name="Bash", input={"command": "touch made.txt",
                                                 "description": "Make a file"}))),
        Reply(text="Done."),
        StallStream(reply=Reply(text="A first paragraph.\n\nAnd a half-written " + "x" * 30),
                    after_events=4, seconds=60))
    aimon.shows("›")
    aimon.child.send("look\r")
    aimon.shows("] ↑/↓ Enter")
    aimon.child.send("o")
    aimon.shows("─ ")  # the status line: the turn ended
    shown = "\n".join(aimon.terminal.everything())
    for header in ("● Read(calc.py)", "● Read(missing.py)", "● Bash(touch made.txt)"):
        assert shown.count(header) == 1, shown
    assert shown.index("needs your approval") < shown.index("✓ allowed") < shown.index(
        "● Bash(touch made.txt)") < shown.index("Done.")
    assert (project / "made.txt").exists()

    aimon.child.send("tell a story\r")
    # The text streams in two halves ("…And a half-wri", "tten xxx…"): wait for the second,
    # or a loaded machine resizes while only the first is drawn.
    aimon.shows("And a half-written")
    aimon.shows("Esc/Ctrl-C to interrupt")
    erased = aimon.terminal.erases
    aimon.terminal.resize(40)  # the terminal rewraps first, then the program hears SIGWINCH
    aimon.child.setwinsize(30, 40)
    rows = aimon.wait(lambda rows: aimon.terminal.erases > erased and redrawn(rows),
                      "the live area is erased and drawn again")
    for live in ("working ·", "And a half-written"):  # each live row is on screen once
        assert len([row for row in rows if live in row]) == 1, "\n".join(rows)

    aimon.child.sendcontrol("c")
    aimon.shows("Interrupted. Partial output is kept")
    shown = "\n".join(aimon.terminal.everything())
    assert shown.index("A first paragraph.") < shown.index("And a half-written") < \
        shown.index("Interrupting…") < shown.index("⏹ Interrupted.")


def test_narrowing_during_a_long_answer_shows_it_whole_and_leaves_no_stale_rows(
        session: tuple[Session, LoopbackModelServer, Path]) -> None:
    """m4 (issue 26): narrowed from 100 to 60 columns while a long paragraph streams."""
    aimon, server, _ = session
    paragraph = " ".join(f"word{n}" for n in range(60)) + " last-word-shown"
    server.add(StallStream(reply=Reply(text=paragraph + "\n\nThe end."), after_events=3,
                           seconds=60, released=True))
    aimon.shows("›")
    aimon.child.send("tell it\r")
    aimon.shows("last-word-shown")
    aimon.shows("Esc/Ctrl-C to interrupt")
    for columns in (90, 80, 70, 60):  # a drag: one resize after another
        erased = aimon.terminal.erases
        aimon.terminal.resize(columns)
        aimon.child.setwinsize(30, columns)
        aimon.wait(lambda rows, before=erased: aimon.terminal.erases > before and redrawn(rows),
                   f"the live area is drawn again at {columns} columns")
    rows = aimon.wait(lambda rows: any("last-word-shown" in row for row in rows),
                      "the whole paragraph shows at 60 columns")
    everything = aimon.terminal.everything()
    assert sum("working ·" in row for row in everything) == 1, "\n".join(everything)
    assert sum("word0 word1" in row for row in everything) == 1, "\n".join(everything)
    assert all(len(row) <= 60 for row in rows)
    server.release()
    aimon.shows("The end.")
