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
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from prompt_toolkit import PromptSession
from prompt_toolkit.document import Document

from aimon_cli._choose import (
    BACK,
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
    work_shown,
    wrap_hint,
)

if TYPE_CHECKING:
    from aimon_core.config import TrustRequest
    from aimon_core.live import LiveSession
    from aimon_core.permission import ApprovalAnswer, ApprovalRequest, PermissionPolicy
    from aimon_core.tools import ProposedChange

# Re-exported: the REPL and tests import the selector from here too.
__all__ = ["ESCAPE_SECONDS", "GUARD_SECONDS", "INTERRUPT", "LATER", "QUESTION_STYLE",
           "TRUST_CHOICES", "ApprovalQuestion", "Asker", "Choice", "Questions", "Selection",
           "TrustQuestion", "approval_choices", "ask_line", "choose", "question_lines",
           "wrap_hint"]
T = TypeVar("T")
# Work `attend` waits for shows its spinner only once it has taken this long.
_SPINNER_AFTER = 0.25


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


@dataclass(eq=False, slots=True, kw_only=True)
class PlanQuestion:
    """A plan the model presented in plan mode: start on it (and in which mode), or not."""

    future: asyncio.Future[str | None]


Question = ApprovalQuestion | TrustQuestion | PlanQuestion

PLAN_CHOICES = (
    Choice(keys=("1", "a", "A"), value="acceptEdits", label="1 a",
           hint="Yes, start now, and accept edits in the project without asking"),
    Choice(keys=("2", "y", "Y"), value="default", label="2 y",
           hint="Yes, start now, and ask before each edit"),
    Choice(keys=("3", "n", "N"), value="", label="3 n",
           hint="No, keep planning (say what to change)"),
    Choice(keys=("escape", "c-c"), value="", immediate=True),
)
# What the model is told when the person approves its plan.
PLAN_APPROVED = "The plan is approved: go ahead and carry it out."


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
    _plan: PlanQuestion | None = None
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

    async def ask_plan(self) -> str | None:
        """Ask whether to start on the plan the model presented; return the mode to start
        in ("acceptEdits", "default"), or None to keep planning."""
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._plan = PlanQuestion(future=future)
        self._on_question()
        try:
            return await future
        finally:
            self._plan = None
            future.cancel()
            self._on_question()

    def waiting(self) -> Question | None:
        """Return the question the UI should ask now (not put off): trust, approvals, plan."""
        if self._trust is not None and not self._trust.future.done():
            return self._trust
        approval = next((q for q in self._approvals.values()
                         if not q.deferred and not q.future.done()), None)
        if approval is None and self._plan is not None and not self._plan.future.done():
            return self._plan
        return approval

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
        self._claimed = 0  # a command asks something itself: no spinner meanwhile
        questions.listen(self._question_changed)

    @contextlib.asynccontextmanager
    async def claim(self) -> AsyncIterator[None]:
        """Hold the terminal for a question a command asks itself (a picker): the spinner of
        the work `attend` shows gives way until it is answered."""
        self._claimed += 1
        self._changed.set()
        try:
            yield
        finally:
            self._claimed -= 1
            self._changed.set()

    def put_back(self, prompts: list[str]) -> None:
        """Put prompts an interruption dropped back into the input box, before the text
        typed there."""
        app = self._prompt.app
        typed = self._prompt.default_buffer.text if app.is_running else ""
        text = "\n".join([*prompts, *([typed] if typed.strip() else [])])
        if app.is_running:
            self._prompt.default_buffer.text = text
            self._prompt.default_buffer.cursor_position = len(text)
        else:
            self.set_draft(text)

    def set_draft(self, text: str) -> None:
        """Put `text` in the input box of the next prompt (a command's draft, a prompt back)."""
        self._draft = Document(text, len(text))

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

    async def attend(self, work: Awaitable[T], doing: str | None = None) -> T:
        """Await `work`, asking the questions that come meanwhile (it may wait for one).

        With `doing` ("compacting the conversation"), work that takes a moment shows a
        spinner line saying so, and Esc or Ctrl-C cancels it (the CancelledError is raised).
        """
        task = asyncio.ensure_future(work)
        started = time.monotonic()
        while True:
            self._changed.clear()
            await self.ask_waiting()
            if task.done():
                return task.result()
            changed = asyncio.ensure_future(self._changed.wait())
            if doing is not None and not self._claimed:
                await asyncio.wait({task, changed}, timeout=_SPINNER_AFTER)
                if not (task.done() or changed.done() or self._claimed):
                    await self._spin(task, changed, doing, started)
            await asyncio.wait({task, changed}, return_when=asyncio.FIRST_COMPLETED)
            changed.cancel()

    async def _spin(self, task: asyncio.Future[Any], changed: asyncio.Future[Any], doing: str,
                    started: float) -> None:
        """Show what runs until it ends or something must be asked; cancel it on Esc."""
        stop = asyncio.ensure_future(asyncio.wait({task, changed},
                                                  return_when=asyncio.FIRST_COMPLETED))
        try:
            if await work_shown(lambda: f"{doing} · {time.monotonic() - started:.0f}s",
                                done=stop):
                task.cancel()
        finally:
            stop.cancel()

    async def ask_waiting(self) -> bool:
        """Ask every question that waits (new ones too); return whether any was asked."""
        asked = False
        while (question := self.questions.waiting()) is not None:
            asked = True
            match question:
                case TrustQuestion():
                    await self._trust(question)
                case PlanQuestion(future=future):
                    value = await choose("Start on this plan?", PLAN_CHOICES, done=future,
                                         on_typed=self._typed, keys="1-3 or a/y/n")
                    if not future.done():
                        future.set_result(value or None)
                case _:
                    await self._approval(question)
        return asked

    async def _approval(self, question: ApprovalQuestion) -> None:
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
        answer: ApprovalAnswer | str | None = BACK
        while answer == BACK:  # Esc in the reason or the edit goes back to the question
            answer = await self._approval_answer(request, done)
        if answer is None or done.done():
            return
        if answer in (INTERRUPT, LATER):
            question.deferred = True
            if answer == LATER or not self._interrupt():
                self._say("The approval waits: answer it with /approve or /deny "
                          "(/pending lists what waits).", "dim")
            return
        assert not isinstance(answer, str)
        self.questions.answer(request.id, answer)

    async def _approval_answer(self, request: ApprovalRequest, done: asyncio.Future[Any]
                               ) -> ApprovalAnswer | str | None:
        """Ask once; return the answer, `BACK`, `LATER`, `INTERRUPT` or None (gone)."""
        from aimon_core.permission import ApprovalAnswer, ApprovalScope, broader_rule

        command = request.tool_input.get("command") if request.tool_name == "Bash" else None
        editable = isinstance(command, str)
        broader = broader_rule(request.tool_name, request.tool_input) if editable else ""
        choices = approval_choices(request, self.questions.project_root, broader=broader,
                                   editable=editable)
        count = sum(1 for c in choices if c.hint and not c.immediate and c.label[:1].isdigit())
        letters = "/".join(c.label.split()[-1] for c in choices if c.hint and not c.immediate)
        value = await choose(f"Allow this {request.tool_name} call?", choices, done=done,
                             on_typed=self._typed, keys=f"1-{count} or {letters}")
        match value:
            case "deny":
                said = await ask_line("Why? The model is told (Enter to skip, Esc to go "
                                      "back): ", done=done, back=True)
                return said if said in (None, BACK) else ApprovalAnswer(allowed=False,
                                                                         reason=said or "")
            case "edit":
                edited = await ask_line("Run instead (Enter runs it, Esc goes back): ",
                                        done=done, default=str(command), back=True)
                if edited in (None, BACK) or not edited:
                    return BACK if edited is not None else None
                return ApprovalAnswer(allowed=True, updated_input={
                    **request.tool_input, "command": edited})
            case "turn" | "session" | "agent":
                scope = {"turn": ApprovalScope.TURN, "session": ApprovalScope.SESSION,
                         "agent": ApprovalScope.AGENT}[value]
                rule = broader if broader and scope is not ApprovalScope.TURN else ""
                return ApprovalAnswer(allowed=True, scope=scope, rule=rule)
        return value

    async def _trust(self, question: TrustQuestion) -> None:
        request = question.request
        self._say(f"Settings in {request.folder} that wait for your trust:", "bold")
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


def plan_presented(event: object, policy: PermissionPolicy | None) -> bool:
    """Tell whether `event` ends a turn that answered in plan mode (it presented a plan)."""
    from aimon_core.agent import StopCause
    from aimon_core.live import TurnFinished
    from aimon_core.permission import PermissionMode

    return (isinstance(event, TurnFinished) and event.result.stop is StopCause.ANSWERED
            and bool(event.result.iterations) and policy is not None
            and policy.mode is PermissionMode.PLAN)


async def approve_plan(questions: Questions, policy: PermissionPolicy | None,
                       say: Callable[[str, str], None]) -> bool:
    """Ask whether to start on the plan; on yes switch to the mode chosen. True: start."""
    from aimon_core.permission import PermissionMode

    mode = await questions.ask_plan()
    if mode is None or policy is None:
        say("Still in plan mode: say what to change in the plan.", "dim")
        return False
    policy.set_mode(PermissionMode(mode))
    say(f"Permission mode: {mode}. Starting on the plan.", "dim")
    return True
