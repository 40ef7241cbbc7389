"""The REPL's prompt parts: style, slash-command completer, history file, SIGINT handling,
and the terminal input that takes over from the early prompt."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input import Input
from prompt_toolkit.styles import Style

from aimon_core.command import CommandRegistry

if TYPE_CHECKING:
    from aimon_cli._early import EarlyPrompt

log = logging.getLogger(__name__)

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
PROMPT_STYLE = Style.from_dict({
    "prompt": "bold",
    "activity": "#888888",
    "spinner": "#d7875f",
})


class SlashCompleter(Completer):
    """Completes `/name` from the command registry, with each command's description."""

    def __init__(self, registry: CommandRegistry) -> None:
        self.registry = registry

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterable[Completion]:
        """Yield the commands whose name starts with what was typed after the slash."""
        text = document.text_before_cursor
        if not text.startswith("/") or any(c.isspace() for c in text):
            return
        typed = text[1:].lower()
        for name in self.registry.names():
            command = self.registry.get(name)
            if name.startswith(typed) and command is not None:
                yield Completion("/" + name, start_position=-len(text),
                                 display_meta=command.description)


def prompt_history(path: Path) -> History:
    """Return the prompt history kept in `path` (in memory if it cannot be written)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    except OSError as exc:
        log.warning("prompt history %s is not writable (%s); keeping it in memory", path, exc)
        return InMemoryHistory()
    return FileHistory(str(path))


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
