"""Questions the REPL asks the person: tool approvals and folder trust.

Approval questions arrive on the live session's one event stream (`ApprovalRequested`); the
REPL's `Questions` subscribes to it as the session's answerer and answers through
`LiveSession.answer`. Trust questions come from the runtime registry while it builds a runtime
(`ask_trust` is its trust callback). The REPL's `Asker` listens to `Questions`: when a question
waits, the normal prompt gives way (its text is kept as the draft) to `choose`, a one-key
prompt, and comes back with the draft once the question is answered. So that keys typed as a
question appears are never read as its answer, `choose` takes no answer until no key was
pressed for `GUARD_SECONDS`, and adds what is typed until then to the draft.

Importing this module stays light: no provider SDK, no rich, nothing of `aimon_core` that
imports the model layer (those are imported inside the functions that need them).
"""

from __future__ import annotations

import asyncio
import textwrap
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from prompt_toolkit import PromptSession
from prompt_toolkit.application import Application
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import FormattedTextControl, Layout, Window
from prompt_toolkit.styles import Style

if TYPE_CHECKING:
    from aimon_core.config import TrustRequest
    from aimon_core.live import LiveSession
    from aimon_core.permission import ApprovalAnswer, ApprovalRequest
    from aimon_core.tools._preview import ProposedChange

GUARD_SECONDS = 0.5
# How long a lone Esc waits for the rest of an escape sequence (prompt-toolkit's 0.5 s made
# Esc feel slower than Ctrl-C); terminals send a sequence's bytes together.
ESCAPE_SECONDS = 0.05
T = TypeVar("T")
INTERRUPT = "interrupt"
LATER = "later"
QUESTION_STYLE = Style.from_dict({
    "key": "bold",
    "hint": "#888888",
    "question": "bold",
    "mark": "bold #d7875f",
    "chosen": "bold #d7875f",
})


# ── the questions waiting for the person ────────────────────────────────────────────────


@dataclass(eq=False, slots=True, kw_only=True)
class ApprovalQuestion:
    """A tool call waiting for the user's answer; `deferred` once put off to /approve.

    `future` completes when the question goes away: answered here or by a command, or
    withdrawn because the turn ended first.
    """

    request: ApprovalRequest
    future: asyncio.Future[ApprovalAnswer | None]
    change: ProposedChange | None = None
    deferred: bool = False


@dataclass(eq=False, slots=True, kw_only=True)
class TrustQuestion:
    """An untrusted project folder whose risky settings wait for the user's trust."""

    request: TrustRequest
    future: asyncio.Future[bool]


Question = ApprovalQuestion | TrustQuestion


def _ignore(*args: object) -> None:
    """Do nothing (the listener before a UI attaches)."""


@dataclass(eq=False, slots=True)
class Questions:
    """The questions waiting for the person, fed by the session's events and the registry.

    `attach(live)` makes it the session's answerer: `ApprovalRequested` events add a question,
    `ApprovalResolved` / `ApprovalWithdrawn` remove it, and `answer` answers through the
    session. `ask_trust` is the runtime registry's trust callback.
    """

    project_root: Path
    _approvals: dict[str, ApprovalQuestion] = field(default_factory=dict)
    _trust: TrustQuestion | None = None
    _on_question: Callable[[], None] = _ignore
    _live: LiveSession | None = None
    _detach: Callable[[], None] = _ignore
    # Once a session runs, trust is never asked mid-session: a folder's new settings wait,
    # announced through `on_held`, until the user runs /trust.
    defer_trust: bool = False
    on_held: Callable[[TrustRequest], None] = _ignore
    _held: TrustRequest | None = None

    def held(self) -> TrustRequest | None:
        """Return the folder settings waiting for /trust, if any."""
        return self._held

    def clear_held(self) -> None:
        """Forget the settings that waited for /trust (they are trusted now)."""
        self._held = None

    def listen(self, on_question: Callable[[], None]) -> None:
        """Call `on_question` when questions come or go."""
        self._on_question = on_question

    def attach(self, live: LiveSession) -> None:
        """Answer `live`'s approval questions (instead of the session attached before)."""
        self.detach()
        self._live = live
        self._detach = live.subscribe(self.on_event, answers=True)

    def detach(self) -> None:
        """Stop answering the attached session's questions; its waiting ones go away."""
        self._detach()
        self._detach, self._live = _ignore, None
        for question in list(self._approvals.values()):
            self._gone(question.request.id)

    def on_event(self, event: object) -> None:
        """Take an approval event from the session's stream."""
        from aimon_core.agent import ApprovalRequested, ApprovalResolved, ApprovalWithdrawn

        match event:
            case ApprovalRequested(request=request):
                future: asyncio.Future[ApprovalAnswer | None] = (
                    asyncio.get_running_loop().create_future())
                self._approvals[request.id] = ApprovalQuestion(request=request, future=future)
                self._on_question()
            case ApprovalResolved(request_id=request_id) | ApprovalWithdrawn(
                    request_id=request_id):
                self._gone(request_id)
            case _:
                pass

    def _gone(self, request_id: str) -> None:
        question = self._approvals.pop(request_id, None)
        if question is not None:
            if not question.future.done():
                question.future.set_result(None)
            self._on_question()

    async def preview(self, question: ApprovalQuestion) -> ProposedChange | None:
        """Return (and keep) the change an approval question's call would make.

        The tool previews it (`Tool.preview`, carried on the request); the front end never
        decides by tool name what a call would change.
        """
        if question.change is None:
            question.change = question.request.preview
        return question.change

    async def ask_trust(self, request: TrustRequest) -> bool:
        """Ask whether to trust the folder's risky settings; True if the user trusts it.

        With `defer_trust`, nothing is asked: the request waits for /trust (False for now).
        """
        if self.defer_trust:
            known = self._held is not None and self._held.config_hash == request.config_hash
            self._held = request
            if not known:
                self.on_held(request)
            return False
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._trust = TrustQuestion(request=request, future=future)
        self._on_question()
        try:
            return await future
        finally:
            self._trust = None
            future.cancel()
            self._on_question()

    def waiting(self) -> Question | None:
        """Return the question the UI should ask now (not put off), trust first."""
        if self._trust is not None and not self._trust.future.done():
            return self._trust
        return next((q for q in self._approvals.values()
                     if not q.deferred and not q.future.done()), None)

    def pending(self) -> tuple[ApprovalRequest, ...]:
        """Return every approval waiting for an answer, oldest first."""
        return tuple(q.request for q in self._approvals.values() if not q.future.done())

    def put_off(self) -> int:
        """Return how many approvals the user put off (to answer with /approve or /deny)."""
        return sum(q.deferred and not q.future.done() for q in self._approvals.values())

    def answer(self, request_id: str, answer: ApprovalAnswer) -> bool:
        """Answer a waiting approval through the session; False if none with that id waits."""
        question = self._approvals.get(request_id)
        if question is None or question.future.done() or self._live is None:
            return False
        if not self._live.answer(request_id, answer):
            return False
        question.future.set_result(answer)
        return True

    def answer_trust(self, trusted: bool) -> bool:
        """Answer the trust question; False if none waits."""
        question = self._trust
        if question is None or question.future.done():
            return False
        question.future.set_result(trusted)
        if not trusted:
            self._held = question.request  # /trust can still accept it later
        return True


# ── asking: a highlighted-choice selector and a one-line prompt ────────────────────────


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    """An answer: its shortcut keys, what it returns, and the line that explains it.

    A shortcut letter only moves the highlight; Enter confirms. `immediate` keys (Esc, Ctrl-C:
    put off, interrupt) answer at once, as they commit to nothing.
    """

    keys: tuple[str, ...]
    value: str
    label: str = ""
    hint: str = ""
    immediate: bool = False


def approval_choices(request: ApprovalRequest) -> tuple[Choice, ...]:
    """Return the answers offered for `request`, with the rules each one remembers."""
    rule, agent_rule = request.suggested_rule, request.agent_rule
    once = (f"allow, and allow {rule} again this turn" if rule
            else "allow this call (no rule can describe it to remember)")
    choices = [Choice(keys=("o", "O"), value="turn", label="o", hint=once)]
    if rule:
        choices.append(Choice(keys=("y", "Y"), value="session", label="y",
                              hint=f"always allow {rule} in this session"))
    if agent_rule:
        scope = getattr(request, "agent_scope", "") or "this agent"
        choices.append(Choice(keys=("a", "A"), value="agent", label="a",
                              hint=f"always allow {agent_rule} for {scope} "
                                   "(new sessions too; not other projects)"))
    choices += [
        Choice(keys=("n", "N"), value="deny", label="n", hint="deny, then say why (optional)"),
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


def wrap_hint(prefix: str, text: str, width: int) -> list[str]:
    """Return `prefix + text` wrapped at word boundaries, later lines indented under it."""
    room = max(width - len(prefix) - 1, 12)
    lines = textwrap.wrap(text, room, break_long_words=True, break_on_hyphens=False) or [""]
    return [prefix + lines[0], *(" " * len(prefix) + line for line in lines[1:])]


@dataclass(slots=True)
class Selection:
    """The state of a question on screen: the highlight, and text typed into it.

    Keys pressed before the guard ends are typing (kept for the prompt). After it, a
    shortcut letter typed first only moves the highlight; any other text is kept for the
    prompt too, and Enter answers nothing until an arrow key chose again.
    """

    choices: tuple[Choice, ...]
    index: int = 0
    typed: str = ""  # text typed into the ready question (for the prompt's draft)
    letter: str = ""  # a shortcut letter that moved the highlight (not yet text)
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
        self.letter, self.typing = "", False

    def key(self, data: str) -> None:
        """Take a printable key: a first shortcut letter highlights, anything else is text."""
        if not self.typed and not self.letter:
            for index, choice in enumerate(self.listed):
                if data in choice.keys:
                    self.index, self.letter, self.typing = index, data, False
                    return
        self.typed, self.letter, self.typing = self.typed + self.letter + data, "", True

    def backspace(self) -> None:
        """Remove the last key typed."""
        if self.letter:
            self.letter = ""
        else:
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
                (" · Enter answers nothing while you type: choose with ↑/↓, then Enter"
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
            selection.key(event.data)

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
    for choice in selection.listed:  # letters: highlight (through `<any>`), never answer
        for key in choice.keys:
            bindings.add(key)(_other)
    return bindings


async def ask_line(message: str, *, done: asyncio.Future[Any]) -> str | None:
    """Read one line (Enter sends, may be empty); None if Ctrl-C or `done` completes first."""
    if done.done():
        return None
    session: PromptSession[str] = PromptSession(style=QUESTION_STYLE)

    def went_away(_: object) -> None:
        app = session.app
        if app.is_running and app.future is not None and not app.future.done():
            app.exit(result="", style="")

    done.add_done_callback(went_away)
    try:
        line = await session.prompt_async([("class:mark", "  "), ("class:question", message)])
    except (KeyboardInterrupt, EOFError):
        return None
    finally:
        done.remove_done_callback(went_away)
    return None if done.done() else line.strip()


class Asker:
    """Lets the runtime's questions take over the REPL's prompt, asks them, gives it back.

    When a question waits, the prompt ends (erased; its text kept as the draft) and the REPL's
    read loop calls `ask_waiting`, then shows the prompt again with `take_draft()`. Work the
    REPL awaits (a command, the first opening) runs under `attend`, which asks meanwhile.

    Args:
        say: prints a line (text, rich style) above the prompt.
        show: prints an approval question's call, reason and proposed change.
        interrupt: interrupts the running turn (Ctrl-C); False if none runs.
    """

    def __init__(self, questions: Questions, prompt: PromptSession[str], *,
                 say: Callable[[str, str], None], show: Callable[[ApprovalQuestion], None],
                 interrupt: Callable[[], bool]) -> None:
        self.questions, self._prompt = questions, prompt
        self._say, self._show, self._interrupt = say, show, interrupt
        self._draft: Document | None = None
        self._gave_way = False
        self._changed = asyncio.Event()
        questions.listen(self._question_changed)

    def take_draft(self) -> Document | str:
        """Return the text to show in the next prompt (the draft kept while asking)."""
        draft, self._draft = self._draft, None
        self._prompt.app.erase_when_done = False
        return draft or ""

    def gave_way(self) -> bool:
        """Tell (once) whether the last prompt ended to let a question be asked."""
        gave_way, self._gave_way = self._gave_way, False
        return gave_way

    def give_way(self) -> None:
        """End the prompt if a question waits (also called when the prompt starts)."""
        app = self._prompt.app
        if self.questions.waiting() is None or self._gave_way or not app.is_running \
                or app.future is None or app.future.done():
            return
        self._draft, self._gave_way = self._prompt.default_buffer.document, True
        app.erase_when_done = True
        app.exit(result="")

    def _question_changed(self) -> None:
        self._changed.set()
        self.give_way()

    def _typed(self, text: str) -> None:
        """Add text typed just before a question was ready to the draft, at its cursor."""
        draft = self._draft or Document()
        at = draft.cursor_position
        self._draft = Document(draft.text[:at] + text + draft.text[at:], at + len(text))

    async def attend(self, work: Awaitable[T]) -> T:
        """Await `work`, asking the questions that come meanwhile (it may wait for one)."""
        task = asyncio.ensure_future(work)
        while True:
            self._changed.clear()
            await self.ask_waiting()
            if task.done():
                return task.result()
            changed = asyncio.ensure_future(self._changed.wait())
            await asyncio.wait({task, changed}, return_when=asyncio.FIRST_COMPLETED)
            changed.cancel()

    async def ask_waiting(self) -> bool:
        """Ask every question that waits (new ones too); return whether any was asked."""
        asked = False
        while (question := self.questions.waiting()) is not None:
            asked = True
            if isinstance(question, TrustQuestion):
                await self._trust(question)
            else:
                await self._approval(question)
        return asked

    async def _approval(self, question: ApprovalQuestion) -> None:
        from aimon_core.permission import ApprovalAnswer, ApprovalScope

        request, done = question.request, question.future
        await self.questions.preview(question)
        if done.done():
            return
        self._show(question)
        choices = approval_choices(request)
        value = await choose(f"Allow this {request.tool_name} call?", choices, done=done,
                             on_typed=self._typed)
        reason = ""
        if value == "deny":
            said = await ask_line("Why? The model is told (Enter to skip): ", done=done)
            value, reason = (INTERRUPT, "") if said is None else ("deny", said)
        if value is None or done.done():
            return
        if value in (INTERRUPT, LATER):
            question.deferred = True
            if value == LATER or not self._interrupt():
                self._say("The approval waits: answer it with /approve or /deny "
                          "(/pending lists what waits).", "dim")
            return
        scopes = {"turn": ApprovalScope.TURN, "session": ApprovalScope.SESSION,
                  "agent": ApprovalScope.AGENT}
        answer = (ApprovalAnswer(allowed=False, reason=reason) if value == "deny"
                  else ApprovalAnswer(allowed=True, scope=scopes[value]))
        self.questions.answer(request.id, answer)

    async def _trust(self, question: TrustQuestion) -> None:
        request = question.request
        self._say(f"This folder's settings ({request.folder}) want to:", "bold")
        for what in request.what:
            self._say(f"  • {what}", "")
        value = await choose("Trust this folder?", TRUST_CHOICES, done=question.future,
                             on_typed=self._typed, keys="y/N", default=1)
        if value is None or question.future.done():
            return
        trusted = value == "yes"
        self.questions.answer_trust(trusted)
        if trusted:
            self._say("Trusted: this folder's settings are in effect.", "dim")
        else:
            self._say("Not trusted: those settings stay held back (/trust loads them; you are "
                      "asked again when aimon starts here).", "yellow")
