"""The REPL's prompt parts: style, slash-command completer, history file, SIGINT handling,
long pastes folded into placeholders, and the terminal input that takes over from the early
prompt."""

from __future__ import annotations

import asyncio
import logging
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from prompt_toolkit.application import get_app_or_none
from prompt_toolkit.filters import Condition
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.key_binding import (
    KeyBindings,
    KeyBindingsBase,
    KeyPressEvent,
    merge_key_bindings,
)
from prompt_toolkit.keys import Keys
from prompt_toolkit.styles import Style

if TYPE_CHECKING:
    from aimon_cli._early import EarlyPrompt

log = logging.getLogger(__name__)

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
PROMPT_STYLE = Style.from_dict({
    "prompt": "bold",
    "mode": "#d7875f",
    "activity": "#888888",
    "spinner": "#d7875f",
})


def prompt_history(path: Path) -> History:
    """Return the prompt history kept in `path` (in memory if it cannot be written)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    except OSError as exc:
        log.warning("prompt history %s is not writable (%s); keeping it in memory", path, exc)
        return InMemoryHistory()
    return FileHistory(str(path))


# A paste of more lines than this shows as a placeholder; the prompt sends it whole.
PASTE_FOLD_LINES = 10


class Pastes:
    """The long pastes of the prompt being edited, each shown as a placeholder in the box.

    `[Pasted text +12 lines]`, then `[Pasted text #2 +40 lines]`...: what is typed around a
    placeholder stays as typed; Backspace right after one removes it whole; `expand` puts
    the pasted text back when the prompt is sent (the model, the transcript and the history
    get the whole text). A placeholder edited into something else is sent as typed.
    """

    def __init__(self, attach: Callable[[str], str | None] | None = None) -> None:
        self._texts: dict[str, str] = {}
        # Takes a paste that names an image or PDF file (a dropped file); returns what to
        # insert for it (its placeholder), or None when it is not one.
        self.attach = attach

    def fold(self, text: str) -> str:
        """Return what to insert for pasted `text`: itself, or a placeholder if it is long."""
        text = text.replace("\r\n", "\n").replace("\r", "\n")  # as prompt-toolkit's paste
        lines = len(text.splitlines())
        if lines <= PASTE_FOLD_LINES:
            return text
        number = len(self._texts) + 1
        placeholder = f"[Pasted text {f'#{number} ' if number > 1 else ''}+{lines} lines]"
        self._texts[placeholder] = text
        return placeholder

    def expand(self, text: str) -> str:
        """Return `text` with every placeholder replaced by its pasted text (in one pass:
        a pasted text that looks like a placeholder stays as it is)."""
        if not self._texts:
            return text
        pattern = "|".join(re.escape(placeholder) for placeholder in self._texts)
        return re.sub(pattern, lambda match: self._texts[match.group()], text)

    def take(self, text: str) -> str:
        """Return the prompt `text` to send, expanded; forget the pastes (numbering restarts)."""
        text = self.expand(text)
        self._texts.clear()
        return text

    def ending(self, text: str) -> str | None:
        """Return the placeholder `text` ends with, if any."""
        return next((p for p in self._texts if text.endswith(p)), None)

    def with_keys(self, others: KeyBindings) -> KeyBindingsBase:
        """Return `others` with the keys that fold long pastes and delete a placeholder whole."""
        bindings = KeyBindings()

        @bindings.add(Keys.BracketedPaste)
        def _paste(event: KeyPressEvent) -> None:
            attached = self.attach(event.data) if self.attach is not None else None
            event.current_buffer.insert_text(attached or self.fold(event.data))

        @bindings.add("backspace", filter=Condition(self._after_placeholder))
        def _delete(event: KeyPressEvent) -> None:
            buffer = event.current_buffer
            placeholder = self.ending(buffer.document.text_before_cursor)
            buffer.delete_before_cursor(len(placeholder or " "))

        return merge_key_bindings([others, bindings])

    def _after_placeholder(self) -> bool:
        app = get_app_or_none()
        return app is not None and self.ending(
            app.current_buffer.document.text_before_cursor) is not None


class PastingHistory(History):
    """A prompt history that keeps what was sent: pastes whole, not their placeholders."""

    def __init__(self, inner: History, pastes: Pastes) -> None:
        super().__init__()
        self.inner, self._pastes = inner, pastes

    def load_history_strings(self) -> Iterable[str]:
        """Return the inner history's strings, newest first."""
        return self.inner.load_history_strings()

    def store_string(self, string: str) -> None:
        """Store `string` (expanded by `append_string`) in the inner history."""
        self.inner.store_string(string)

    def append_string(self, string: str) -> None:
        """Add `string` (expanded) to the history: recalled, it holds the pasted text."""
        super().append_string(self._pastes.expand(string))


def catch_sigint(loop: asyncio.AbstractEventLoop, on_sigint: Callable[[], None]
                 ) -> Callable[[], None]:
    """Call `on_sigint` on `loop` for each SIGINT; return the function that restores the old
    handler. Only the main thread can do this (elsewhere it does nothing)."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(on_sigint)

    previous = signal.signal(signal.SIGINT, handler)

    def restore() -> None:
        signal.signal(signal.SIGINT, previous)

    return restore


def taking_over(early: EarlyPrompt) -> Input:
    """Return a terminal input whose first raw mode takes the terminal over from `early`.

    prompt-toolkit's raw mode remembers the terminal's mode when it starts and restores it
    when the prompt ends. The early prompt left the terminal in raw mode already, so the
    first raw mode is told to restore the mode from before the early prompt instead; the
    terminal is never in cooked mode in between, so no key typed meanwhile is echoed or
    translated.
    """
    from prompt_toolkit.input.vt100 import Vt100Input, raw_mode

    class _TakingOver(Vt100Input):
        def raw_mode(self) -> AbstractContextManager[None]:
            mode = super().raw_mode()
            before = early.hand_over()
            if before is not None and isinstance(mode, raw_mode):
                mode.attrs_before = before
            return mode

    return _TakingOver(sys.stdin)
