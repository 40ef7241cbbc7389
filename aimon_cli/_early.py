"""The first prompt, drawn before the line editor has loaded; what is typed meanwhile is kept.

Python, asyncio and prompt-toolkit take a quarter of a second to import. Rather than leave the
terminal blank (and echo keys into it) for that long, `paint` draws the banner and the prompt
glyph at once and puts the terminal in the same raw mode prompt-toolkit uses: keys are not
echoed or translated, they wait in the terminal's input queue. When the REPL starts,
`release` restores the terminal and clears the glyph's line; prompt-toolkit then draws the
prompt in the same place and reads the waiting keys as if they had been typed at its prompt
(Enter, Ctrl-C, Ctrl-D and pastes included).

This module imports nothing that is not already loaded but `termios`: it runs on the
critical path.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

_BRACKETED_PASTE_ON, _BRACKETED_PASTE_OFF = "\x1b[?2004h", "\x1b[?2004l"
# The space prompt-toolkit reserves under the prompt for the completion menu
# (`reserve_space_for_menu` in repl.py): reserved here too, so nothing moves at the handover.
_MENU_ROWS = 4


def banner_text(version: str, project_root: str) -> str:
    """Return the line shown above the first prompt."""
    return f"aimon {version} · {project_root} · /help for commands"


class EarlyPrompt:
    """The banner and prompt glyph on screen, the terminal in raw mode until `release`."""

    def __init__(self, saved_mode: list[Any], stdin: int, stdout: int) -> None:
        self._saved_mode: list[Any] | None = saved_mode
        self._stdin, self._stdout = stdin, stdout

    @classmethod
    def paint(cls, banner: str, *, stdin: int = 0, stdout: int = 1) -> EarlyPrompt | None:
        """Draw `banner` and the prompt glyph; None if stdin or stdout is not a terminal."""
        if not (os.isatty(stdin) and os.isatty(stdout)) or os.environ.get("TERM") == "dumb":
            return None
        try:
            import termios
        except ImportError:  # not a POSIX system: the prompt comes when the editor is ready
            return None
        try:
            saved = termios.tcgetattr(stdin)
            raw = [*saved[:6], list(saved[6])]
            # What prompt-toolkit's raw_mode sets: no echo, no line editing, no signals from
            # keys (Ctrl-C reaches the prompt as a key), Enter arrives as \r.
            raw[0] &= ~(termios.IXON | termios.IXOFF | termios.ICRNL | termios.INLCR
                        | termios.IGNCR)
            raw[3] &= ~(termios.ECHO | termios.ICANON | termios.IEXTEN | termios.ISIG)
            raw[6][termios.VMIN] = 1
            termios.tcsetattr(stdin, termios.TCSANOW, raw)
        except (OSError, termios.error):
            return None
        early = cls(saved, stdin, stdout)
        reserve = "\r\n" * (_MENU_ROWS - 1) + f"\x1b[{_MENU_ROWS - 1}A"
        early._write(f"{_grey(banner)}\r\n{reserve}{_BRACKETED_PASTE_ON}\x1b[0;1m›\x1b[0m ")
        return early

    def release(self, *, handover: bool = True) -> None:
        """Give the terminal back as it was; clear the glyph's line. Safe to call again.

        With `handover`, prompt-toolkit draws the prompt next (and turns bracketed paste on
        itself) and reads the keys typed so far. Without, aimon is leaving before any prompt:
        the keys typed for it are discarded (not run by the shell aimon returns to) and
        bracketed paste goes off.
        """
        if self._saved_mode is None:
            return
        import termios

        saved, self._saved_mode = self._saved_mode, None
        when = termios.TCSANOW if handover else termios.TCSAFLUSH  # TCSAFLUSH drops the keys
        with contextlib.suppress(termios.error):
            termios.tcsetattr(self._stdin, when, saved)
        self._write("\r\x1b[K" + ("" if handover else _BRACKETED_PASTE_OFF))

    def _write(self, text: str) -> None:
        data = text.encode("utf-8", "replace")
        while data:
            try:
                data = data[os.write(self._stdout, data):]
            except InterruptedError:
                continue
            except OSError:
                return


def _grey(text: str) -> str:
    """Return `text` in the grey prompt-toolkit uses for the banner (#888888)."""
    if "NO_COLOR" in os.environ:
        return text
    if os.environ.get("TERM") in ("linux", "eterm-color"):  # 16 colours
        return f"\x1b[0;90m{text}\x1b[0m"
    return f"\x1b[0;38;5;102m{text}\x1b[0m"
