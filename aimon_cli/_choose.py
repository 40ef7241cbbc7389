"""The highlighted-choice selector the REPL asks its questions with, and a one-line prompt.

A choice's shortcut (a digit as in Claude Code, or the letter its words suggest) answers at
once; arrow keys move a highlight that Enter confirms. An answer is always a deliberate act:
keys typed before the question was ready (`GUARD_SECONDS` without a key) never count, and
text typed into a question is kept for the prompt, never sent or lost.
"""

from __future__ import annotations

import asyncio
import re
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prompt_toolkit import PromptSession
from prompt_toolkit.application import Application
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import FormattedTextControl, Layout, Window
from prompt_toolkit.styles import Style

from aimon_cli._rules import describe_rule

if TYPE_CHECKING:
    from aimon_core.permission import ApprovalRequest

GUARD_SECONDS = 0.5
# How long a lone Esc waits for the rest of an escape sequence (prompt-toolkit's 0.5 s made
# Esc feel slower than Ctrl-C); terminals send a sequence's bytes together.
ESCAPE_SECONDS = 0.05
INTERRUPT = "interrupt"
LATER = "later"
QUESTION_STYLE = Style.from_dict({
    "key": "bold",
    "hint": "#888888",
    "question": "bold",
    "mark": "bold #d7875f",
    "chosen": "bold #d7875f",
})


def _ignore(*args: object) -> None:
    """Do nothing (a redraw before the app runs)."""


# ── asking: a highlighted-choice selector and a one-line prompt ────────────────────────


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    """An answer: its shortcut keys, what it returns, and the line that explains it.

    A shortcut key answers at once. `immediate` choices (Esc, Ctrl-C: put off, interrupt)
    are not listed; their keys answer even while the guard holds (Ctrl-C) or after it.
    """

    keys: tuple[str, ...]
    value: str
    label: str = ""
    hint: str = ""
    immediate: bool = False


APPROVE_ONCE, APPROVE_SESSION, APPROVE_AGENT, DENY, EDIT = (
    "turn", "session", "agent", "deny", "edit")


def approval_choices(request: ApprovalRequest, root: Path | None = None, *,
                     broader: str = "", editable: bool = False) -> tuple[Choice, ...]:
    """Return the answers offered for `request`: a digit and a letter each, with the rule
    each remembers in words (`broader`: a wider rule safe to offer for the session)."""
    rule, agent_rule = request.suggested_rule, request.agent_rule
    again = f" (and {describe_rule(rule, root)} again this turn)" if rule else ""
    listed = [(("o", "O"), APPROVE_ONCE, f"Yes{again}")]
    if broader or rule:
        listed.append((("y", "Y"), APPROVE_SESSION, "Yes, and don't ask again for "
                       f"{describe_rule(broader or rule, root)} in this session"))
    if broader or agent_rule:
        scope = request.agent_scope or "this agent"
        listed.append((("a", "A"), APPROVE_AGENT, f"Yes, and always for "
                       f"{describe_rule(broader or agent_rule, root)}, for {scope} (new "
                       "sessions too; not other projects)"))
    listed.append((("n", "N"), DENY, "No, and tell the model why (optional)"))
    choices = [Choice(keys=(str(number), *letters), value=value,
                      label=f"{number} {letters[0]}", hint=hint)
               for number, (letters, value, hint) in enumerate(listed, 1)]
    if editable:
        choices.append(Choice(keys=("e", "E"), value=EDIT, label="e",
                              hint="Edit the command, then run it"))
    choices += [
        Choice(keys=("escape",), value=LATER, label="Esc", immediate=True,
               hint="answer later with /approve or /deny · Ctrl-C interrupts the turn"),
        Choice(keys=("c-c",), value=INTERRUPT, immediate=True),
    ]
    return tuple(choices)


TRUST_CHOICES = (
    Choice(keys=("y", "Y"), value="yes", label="y",
           hint="trust this folder: load all of its settings (asked again when they change)"),
    Choice(keys=("n", "N"), value="no", label="n",
           hint="not now: keep these held back (/trust loads them later)"),
    Choice(keys=("escape",), value="no", immediate=True),
    Choice(keys=("c-c",), value="no", immediate=True),
)


class _PathWrapper(textwrap.TextWrapper):
    # Words break at spaces, and a path (a rule's) also after a "/" inside it, not mid-name.
    wordsep_simple_re = re.compile(r"(\s+|(?<=[^\s/]/)(?=[^\s/]))")


def wrap_hint(prefix: str, text: str, width: int) -> list[str]:
    """Return `prefix + text` wrapped at word boundaries, later lines indented under it."""
    room = max(width - len(prefix) - 1, 12)
    lines = _PathWrapper(room, break_on_hyphens=False).wrap(text) or [""]
    return [prefix + lines[0], *(" " * len(prefix) + line for line in lines[1:])]


@dataclass(slots=True)
class Selection:
    """The state of a question on screen: the highlight, and text typed into it.

    Keys pressed before the guard ends are typing (kept for the prompt). After it, a
    shortcut typed first answers; any other text is kept for the prompt, and Enter answers
    nothing until an arrow key chose again.
    """

    choices: tuple[Choice, ...]
    index: int = 0
    typed: str = ""  # text typed into the ready question (for the prompt's draft)
    typing: bool = False  # the last key added text: Enter must not answer now

    @property
    def listed(self) -> tuple[Choice, ...]:
        """Return the choices the highlight moves over."""
        return tuple(c for c in self.choices if c.hint and not c.immediate)

    def current(self) -> Choice:
        """Return the highlighted choice."""
        return self.listed[self.index]

    def move(self, step: int) -> None:
        """Move the highlight (an arrow key): a deliberate choice again."""
        self.index = (self.index + step) % len(self.listed)
        self.typing = False

    def key(self, data: str) -> str | None:
        """Take a printable key: a shortcut typed first answers (its value is returned);
        anything else is text kept for the prompt."""
        if not self.typed:
            for choice in self.listed:
                if data in choice.keys:
                    return choice.value
        self.typed, self.typing = self.typed + data, True
        return None

    def backspace(self) -> None:
        """Remove the last key typed."""
        self.typed = self.typed[:-1]
        self.typing = bool(self.typed)


class _Guard:
    """Holds answers back until no key was pressed for `seconds`; keys meanwhile are typing."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.redraw: Callable[[], None] = _ignore
        self._until = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Hold answers back for `seconds` from now (and redraw when they are let through)."""
        self._until = time.monotonic() + self.seconds
        self.stop()
        self._timer = asyncio.get_running_loop().call_later(self.seconds, self.redraw)

    def stop(self) -> None:
        """Cancel the pending redraw."""
        if self._timer is not None:
            self._timer.cancel()

    def armed(self) -> bool:
        """Tell whether keys now choose an answer."""
        return time.monotonic() >= self._until


def question_lines(question: str, selection: Selection, *, armed: bool, width: int,
                   keys: str) -> StyleAndTextTuples:
    """Return the question as drawn: the choices (one highlighted), the question, the text."""
    out: StyleAndTextTuples = []
    listed = selection.listed
    label_width = max((len(c.label) for c in selection.choices if c.hint), default=0)
    for choice in selection.choices:
        if not choice.hint:
            continue
        chosen = armed and choice in listed and choice is selection.current() \
            and not selection.typing
        mark = "❯ " if chosen else "  "
        prefix = f"{mark}{choice.label.ljust(label_width)}  "
        for number, line in enumerate(wrap_hint(prefix, choice.hint, width)):
            style = "class:chosen" if chosen else "class:hint"
            if number == 0:
                out += [(style, mark), ("class:key", choice.label.ljust(label_width)),
                        (style, line[len(mark) + label_width:] + "\n")]
            else:
                out.append((style, line + "\n"))
    ready = f" [{keys}] ↑/↓ Enter" if armed else " …"
    out += [("class:mark", "? "), ("class:question", question), ("class:hint", ready)]
    if selection.typed:
        shown = selection.typed if len(selection.typed) <= 40 else "…" + selection.typed[-39:]
        note = (f"“{shown}” is kept for your prompt" +
                (" · Enter answers nothing while you type: Backspace it, or choose with ↑/↓"
                 if selection.typing else ""))
        notes = wrap_hint("  ", note, width)[:3]
        out += [("", "\n"), ("class:hint", "\n".join(notes))]
    return out


async def choose(question: str, choices: tuple[Choice, ...], *, done: asyncio.Future[Any],
                 on_typed: Callable[[str], None], guard: float = GUARD_SECONDS,
                 header: StyleAndTextTuples | None = None, keys: str = "",
                 default: int = 0) -> str | None:
    """Show `question` with its choices; return the value the user confirms.

    Arrow keys and shortcut letters move the highlight, Enter confirms it; `immediate`
    choices (Esc, Ctrl-C) answer at once. Keys pressed before no key was pressed for `guard`
    seconds never answer, and text typed into the question is given to `on_typed` (kept for
    the prompt). Return None when `done` completes first (the question went away).
    """
    if done.done():
        return None
    from prompt_toolkit.application import get_app

    holding = _Guard(guard)
    selection = Selection(choices=choices, index=default)
    keys = keys or "/".join(c.label for c in selection.listed if len(c.label) == 1)

    def text() -> StyleAndTextTuples:
        width = get_app().output.get_size().columns
        return [*(header or []), *question_lines(question, selection, armed=holding.armed(),
                                                 width=width, keys=keys)]

    app: Application[str | None] = Application(
        layout=Layout(Window(FormattedTextControl(text), wrap_lines=True,
                             dont_extend_height=True)),
        key_bindings=_choice_bindings(selection, holding, on_typed), style=QUESTION_STYLE,
        erase_when_done=True,
    )
    app.ttimeoutlen = ESCAPE_SECONDS
    holding.redraw = app.invalidate
    holding.start()

    def went_away(_: object) -> None:
        if app.is_running and app.future is not None and not app.future.done():
            app.exit(result=None)

    done.add_done_callback(went_away)
    try:
        return await app.run_async(pre_run=lambda: went_away(None) if done.done() else None)
    finally:
        holding.stop()
        done.remove_done_callback(went_away)
        if selection.typed:
            on_typed(selection.typed)


Handler = Callable[[KeyPressEvent], None]


def _guard(holding: _Guard, on_typed: Callable[[str], None]) -> Callable[[Handler], Handler]:
    """Return a decorator: before the guard ends, a key is typing (kept), not an answer."""
    def guarded(handler: Handler) -> Handler:
        def run(event: KeyPressEvent) -> None:
            if holding.armed():
                handler(event)
                return
            if len(event.data) == 1 and event.data.isprintable():
                on_typed(event.data)
            holding.start()
        return run
    return guarded


def _bind_immediate(bindings: KeyBindings, selection: Selection,
                    guarded: Callable[[Handler], Handler]) -> None:
    """Bind Esc and Ctrl-C style choices: they answer at once (Ctrl-C even while guarded)."""
    for choice in selection.choices:
        if not choice.immediate:
            continue
        for key in choice.keys:
            def answer(event: KeyPressEvent, value: str = choice.value) -> None:
                event.app.exit(result=value)
            bindings.add(key)(answer if key == "c-c" else guarded(answer))


def _choice_bindings(selection: Selection, holding: _Guard,
                     on_typed: Callable[[str], None]) -> KeyBindings:
    bindings = KeyBindings()
    guarded = _guard(holding, on_typed)

    @bindings.add("<any>")
    @guarded
    def _other(event: KeyPressEvent) -> None:
        if len(event.data) == 1 and event.data.isprintable():
            value = selection.key(event.data)
            if value is not None:
                event.app.exit(result=value)

    @bindings.add("up")
    @guarded
    def _up(event: KeyPressEvent) -> None:
        selection.move(-1)

    @bindings.add("down")
    @bindings.add("tab")
    @guarded
    def _down(event: KeyPressEvent) -> None:
        selection.move(1)

    @bindings.add("backspace")
    @guarded
    def _back(event: KeyPressEvent) -> None:
        selection.backspace()

    @bindings.add("enter")
    @guarded
    def _enter(event: KeyPressEvent) -> None:
        if not selection.typing:
            event.app.exit(result=selection.current().value)

    _bind_immediate(bindings, selection, guarded)
    for choice in selection.listed:  # shortcuts answer (through `<any>`)
        for key in choice.keys:
            bindings.add(key)(_other)
    return bindings


# What `ask_line` returns when the person pressed Esc to go back to the question.
BACK = "\x00back"


async def ask_line(message: str, *, done: asyncio.Future[Any], default: str = "",
                   back: bool = False) -> str | None:
    """Read one line (Enter sends, may be empty); None if Ctrl-C or `done` completes first.

    `default` is the text to edit; with `back`, Esc returns `BACK` (a change of mind).
    """
    if done.done():
        return None
    bindings = KeyBindings()
    if back:
        @bindings.add("escape")
        def _back(event: KeyPressEvent) -> None:
            event.app.exit(result=BACK)

    session: PromptSession[str] = PromptSession(style=QUESTION_STYLE, key_bindings=bindings)
    session.app.ttimeoutlen = ESCAPE_SECONDS

    def went_away(_: object) -> None:
        app = session.app
        if app.is_running and app.future is not None and not app.future.done():
            app.exit(result="", style="")

    done.add_done_callback(went_away)
    try:
        line = await session.prompt_async([("class:mark", "  "), ("class:question", message)],
                                          default=default)
    except (KeyboardInterrupt, EOFError):
        return None
    finally:
        done.remove_done_callback(went_away)
    return None if done.done() else (line if line == BACK else line.strip())


async def work_shown(describe: Callable[[], str], *, done: asyncio.Future[Any]) -> bool:
    """Show a spinner line (`describe()`) until `done` completes; True if the person
    cancelled with Esc or Ctrl-C first. The line is erased when it ends."""
    if done.done():
        return False
    from prompt_toolkit.application import get_app

    bindings = KeyBindings()

    @bindings.add("escape")
    @bindings.add("c-c")
    def _cancel(event: KeyPressEvent) -> None:
        event.app.exit(result=True)

    def text() -> StyleAndTextTuples:
        width = get_app().output.get_size().columns
        line = f"{_frame()} {describe()} · Esc/Ctrl-C to cancel"
        line = line if len(line) < width else line[: max(width - 2, 1)] + "…"
        return [("class:mark", line[:1]), ("class:hint", line[1:])]

    app: Application[bool] = Application(
        layout=Layout(Window(FormattedTextControl(text), dont_extend_height=True)),
        key_bindings=bindings, style=QUESTION_STYLE, erase_when_done=True,
        refresh_interval=0.125)
    app.ttimeoutlen = ESCAPE_SECONDS

    def finished(_: object) -> None:
        if app.is_running and app.future is not None and not app.future.done():
            app.exit(result=False)

    done.add_done_callback(finished)
    try:
        return bool(await app.run_async(pre_run=lambda: finished(None) if done.done()
                                        else None))
    finally:
        done.remove_done_callback(finished)


def _frame() -> str:
    from aimon_cli._prompt import SPINNER

    return SPINNER[int(time.monotonic() * 10) % len(SPINNER)]
