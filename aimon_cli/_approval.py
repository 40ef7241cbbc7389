"""Questions the REPL asks the person: tool approvals and folder trust.

Approval questions arrive on the live session's one event stream (`ApprovalRequested`); the
REPL's `Questions` subscribes to it as the session's answerer and answers through
`LiveSession.answer`. Trust questions come from the runtime registry while it builds a runtime
(`ask_trust` is its trust callback). The REPL's `Asker` listens to `Questions`: when a question
waits, the normal prompt gives way (its text is kept as the draft) to `choose` (see `_choose`:
a highlighted choice that Enter confirms), and comes back with the draft once the question is
answered. Keys typed as a question appears, and text typed into it, go to the draft.

Importing this module stays light: no provider SDK, no rich, nothing of `aimon_core` that
imports the model layer (those are imported inside the functions that need them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from prompt_toolkit import PromptSession
from prompt_toolkit.document import Document

from aimon_cli._choose import (
    ESCAPE_SECONDS,
    GUARD_SECONDS,
    INTERRUPT,
    LATER,
    QUESTION_STYLE,
    TRUST_CHOICES,
    Choice,
    Selection,
    approval_choices,
    ask_line,
    choose,
    question_lines,
    wrap_hint,
)

if TYPE_CHECKING:
    from aimon_core.config import TrustRequest
    from aimon_core.live import LiveSession
    from aimon_core.permission import ApprovalAnswer, ApprovalRequest
    from aimon_core.tools import ProposedChange

# Re-exported: the REPL and tests import the selector from here too.
__all__ = ["ESCAPE_SECONDS", "GUARD_SECONDS", "INTERRUPT", "LATER", "QUESTION_STYLE",
           "TRUST_CHOICES", "ApprovalQuestion", "Asker", "Choice", "Questions", "Selection",
           "TrustQuestion", "approval_choices", "ask_line", "choose", "question_lines",
           "wrap_hint"]
T = TypeVar("T")


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
        if request.form is not None:  # the running call's server asks for input
            from aimon_cli._form import ask_form

            given = await ask_form(request.form, done=done, say=self._say, on_typed=self._typed)
            if given is not None:
                self.questions.answer(request.id, given)
            return
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
