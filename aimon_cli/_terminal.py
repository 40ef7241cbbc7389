"""Writing above a live prompt at once, and the streamed text drawn live above it.

prompt-toolkit's `patch_stdout` hands output to a thread that batches it (up to 0.2 s apart)
and prints it later through `run_in_terminal`. The REPL's streamed answer needs better: the
unfinished Markdown block is drawn live in the prompt's message area, and when the block
completes it is printed above as Markdown *in the same instant* it leaves the live area, so
no line is ever shown twice or missing for a frame. `PromptWriter` does that write
synchronously: erase the prompt, write, ask for a redraw.
"""

from __future__ import annotations

import asyncio
import io
import os
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from prompt_toolkit.application import get_app_or_none
from prompt_toolkit.formatted_text import StyleAndTextTuples

from aimon_cli._prompt import SPINNER

if TYPE_CHECKING:
    from aimon_cli.render import Renderer

SPINNER_SECONDS = 0.125
IDLE_SECONDS = 0.5
# The streamed text shown live never takes more than the screen less this many rows
# (the spinner, the prompt and some scrollback stay visible).
KEEP_ROWS = 8
LIVE_ROWS = 12  # the live area shows at most this many rows of calls and their output


class PromptWriter(io.TextIOBase):
    """A text file that writes above the running prompt-toolkit app at once (or plainly).

    Give it to a rich Console: every print erases the prompt, writes, and redraws it.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        super().__init__()
        self._stream = stream or sys.__stdout__ or sys.stdout

    def writable(self) -> bool:
        """Return True: this is an output file."""
        return True

    def isatty(self) -> bool:
        """Tell whether the real output is a terminal (rich picks colours by it)."""
        return self._stream.isatty()

    def fileno(self) -> int:
        """Return the real output's descriptor (rich reads the terminal size from it)."""
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        """Return the real output's encoding."""
        return getattr(self._stream, "encoding", None) or "utf-8"

    def write(self, data: str) -> int:
        """Write `data` above the prompt now (the prompt is redrawn on the next tick)."""
        app = get_app_or_none()
        if app is None or not app.is_running or app.is_done or \
                getattr(app, "_running_in_terminal", False):
            self._stream.write(data)
            self._stream.flush()
            return len(data)
        app.renderer.erase()  # the prompt (and the live text) go; the cursor is at its start
        app.output.write_raw(data.replace("\r\n", "\n").replace("\n", "\r\n"))
        app.output.flush()
        app.invalidate()
        return len(data)

    def flush(self) -> None:
        """Flush the real output (writes are not buffered here)."""
        self._stream.flush()


def live_lines(text: str, *, columns: int, rows: int) -> StyleAndTextTuples:
    """Return the unfinished streamed text as message lines, its last lines if it is long.

    Each line is wrapped here, between words, to one column less than the screen: the
    prompt's message window cuts a longer line (only its first row showed), and a row that
    fills the screen's width leaves terminals unsure where the next one starts.
    """
    width = max(columns - 1, 10)
    lines = [row for line in text.rstrip("\n").splitlines()
             for row in (textwrap.wrap(line, width, drop_whitespace=False,
                                       break_on_hyphens=False) or [""])]
    if not lines:
        return []
    room = max(rows - KEEP_ROWS, 3)
    kept = lines[-room:]
    hidden = len(lines) - len(kept)
    out: StyleAndTextTuples = []
    if hidden:
        out.append(("class:activity", f"… {hidden} more line{'s' * (hidden != 1)} above\n"))
    out += [("class:live", line + "\n") for line in kept]
    return out


# The permission mode shown before the prompt glyph (none in the default mode).
MODE_MARKS = {"acceptEdits": "⏵⏵ accept edits", "plan": "⏸ plan mode",
              "bypassPermissions": "⚠ bypass permissions"}


def prompt_message(renderer: Renderer | None, put_off: int, app: Any,
                   mode: str = "default") -> StyleAndTextTuples:
    """Return the prompt, with the live text and a spinner line above it while a turn runs.

    The spinner lives in the prompt rather than a bottom toolbar: a toolbar needs the
    terminal to report the cursor position, which not every terminal (or pty) does. Once
    the prompt is done (sent), only the prompt glyph stays: nothing live is left in the
    scrollback. A permission mode other than the default shows before the glyph.
    """
    mark = MODE_MARKS.get(mode)
    prompt: StyleAndTextTuples = [("class:prompt", "› ")]
    done = app is not None and app.is_done
    if mark and not done:
        prompt = [("class:mode", f"{mark} "), *prompt]
    if put_off and not done:
        prompt = [("class:spinner", f"⚠ {put_off} approval{'s' * (put_off > 1)} waiting: "
                   "/approve or /deny (/pending)\n"), *prompt]
    if renderer is None or not renderer.activity.busy or done:
        return prompt
    size = app.output.get_size() if app is not None else None
    columns, rows = (size.columns, size.rows) if size else (80, 24)
    calls = running_lines(renderer.live_rows(), columns=columns)
    live = live_lines(renderer.live_text(), columns=columns, rows=rows - len(calls))
    frame = SPINNER[int(time.monotonic() * 10) % len(SPINNER)]
    spinner = fit(f"{frame} {renderer.activity.describe()} · Esc/Ctrl-C to interrupt", columns)
    return [*live, *calls, ("class:spinner", spinner[:1]), ("class:activity", spinner[1:] + "\n"),
            *prompt]


def fit(line: str, columns: int) -> str:
    """Return `line` cut to fit one row of `columns` (an ellipsis marks the cut).

    The spinner and the running calls stay one row each, however long: the live area keeps
    its height, and a narrower terminal rewraps fewer rows (see `guard_resize`).
    """
    width = max(columns - 1, 1)  # the last column would wrap in some terminals
    return line if len(line) <= width else line[: width - 1] + "…"


def running_lines(rows: list[tuple[str, str]], *, columns: int) -> StyleAndTextTuples:
    """Return the live area's rows (running calls, their output, queued prompts), the last
    few, each cut to one row."""
    shown = rows[-LIVE_ROWS:]
    out: StyleAndTextTuples = []
    if len(rows) > len(shown):
        out.append(("class:activity", f"… {len(rows) - len(shown)} more rows\n"))
    out += [(style, fit(text, columns) + "\n") for style, text in shown]
    return out


def rewrapped_rows(widths: Sequence[int], cursor_x: int, columns: int) -> int:
    """Return how many rows above the cursor the drawn rows take once rewrapped at `columns`.

    Args:
        widths: the width of each drawn row above the cursor's row, top first.
        cursor_x: the cursor's column in its row (a long typed line rewraps too).
    """
    columns = max(columns, 1)
    return sum(max(1, -(-width // columns)) for width in widths) + cursor_x // columns


def guard_resize(app: Any) -> None:
    """Make `app` erase all of its live area after the terminal is narrowed.

    prompt-toolkit erases before a redraw by moving up as many rows as it drew. Most
    terminals (VTE, kitty, iTerm2, Windows Terminal, tmux) rewrap lines when narrowed: a
    drawn row wider than the new width then takes two rows, and the erase left its first
    part on screen (a stale spinner line). So move up the extra rows first. xterm does not
    rewrap (it sets XTERM_VERSION): there the extra rows would be output, so nothing changes.
    """
    if os.environ.get("XTERM_VERSION") or getattr(app, "_aimon_guarded", False):
        return
    resize = app._on_resize  # prompt-toolkit binds it (SIGWINCH, size polling) at each run

    def on_resize() -> None:
        extra = _extra_rows(app.renderer, app.output.get_size().columns)
        if extra > 0:
            app.output.cursor_up(extra)
        resize()

    app._on_resize, app._aimon_guarded = on_resize, True


def _extra_rows(renderer: Any, columns: int) -> int:
    """Return how many more rows than drawn the live area takes after a rewrap at `columns`."""
    screen, cursor = renderer._last_screen, renderer._cursor_pos
    if screen is None or cursor.y <= 0:
        return 0
    widths = []
    for y in range(cursor.y):
        row = screen.data_buffer.get(y, {})
        widths.append(max((x + char.width for x, char in row.items() if char.char.strip()),
                          default=0))
    return rewrapped_rows(widths, int(cursor.x), columns) - int(cursor.y)


async def tick(app: Any, busy: Callable[[], bool]) -> None:
    """Redraw the spinner while a turn runs; idle, wake rarely (no CPU at an empty prompt).

    prompt-toolkit's refresh_interval redrew the idle prompt 8 times a second (~2 % of a
    core measured by bench/bench_repl.py); this ticker keeps it near 0 %. It also guards
    the prompt's redraw after a resize (`guard_resize`).
    """
    guard_resize(app)
    while True:
        running = busy()
        await asyncio.sleep(SPINNER_SECONDS if running else IDLE_SECONDS)
        if running and app.is_running and not app.is_done:
            app.invalidate()


def redraw(app: Any) -> None:
    """Redraw a running prompt now (the streamed text changed)."""
    if app.is_running and not app.is_done:
        app.invalidate()
