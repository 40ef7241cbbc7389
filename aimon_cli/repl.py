"""The interactive REPL: a prompt-toolkit prompt over a LiveSession, with slash commands,
`!command` and attachments.

Startup is kept light: this module imports prompt-toolkit and the command registry only.
The LiveSession (and with it the provider SDK) opens in a background task while the first
prompt is already on screen; rich and the renderer are imported, off the event loop, then.

When the runtime asks a question (a tool call to approve, a folder to trust), the prompt
gives way to a one-key question prompt (see `_approval`) and comes back with the draft.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from prompt_toolkit import PromptSession, print_formatted_text
from prompt_toolkit.application import get_app_or_none
from prompt_toolkit.completion import ThreadedCompleter
from prompt_toolkit.formatted_text import FormattedText, StyleAndTextTuples
from prompt_toolkit.patch_stdout import patch_stdout

from aimon_cli._approval import (
    ESCAPE_SECONDS,
    PLAN_APPROVED,
    ApprovalQuestion,
    Asker,
    Questions,
    approve_plan,
    plan_presented,
)
from aimon_cli._complete import PromptCompleter
from aimon_cli._early import EarlyPrompt, banner_text, screen_width
from aimon_cli._keys import repl_key_bindings
from aimon_cli._pasted import Attachments, refused_attachments
from aimon_cli._prompt import (
    PROMPT_STYLE,
    Pastes,
    PastingHistory,
    catch_sigint,
    prompt_history,
    taking_over,
)
from aimon_cli._replhost import ReplCommandHost, ReplKeys
from aimon_cli._rules import hanging
from aimon_cli._terminal import PromptWriter, prompt_message, redraw, tick
from aimon_core.command import CommandOutcome, default_registry, parse_slash

if TYPE_CHECKING:
    from rich.console import Console

    from aimon_cli.render import Renderer
    from aimon_core.config import TrustRequest
    from aimon_core.live import LiveSession, LiveSessionEvent
    from aimon_core.llm import ContentBlock
    from aimon_core.permission import PermissionPolicy
    from aimon_core.runtime import AgentAssembly
    from aimon_core.session import SessionStore

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplOptions:
    """What the REPL needs from the command line."""

    project_root: Path
    store: SessionStore
    # None → a new session; an id → resume it. The first call may take a second (it imports
    # the provider SDK): the REPL calls it in the background and shows the prompt at once.
    open_session: Callable[[str | None], Awaitable[LiveSession]]
    history_file: Path
    session_id: str | None = None
    initial_prompt: str | None = None
    # Releases what open_session made (the runtime's model client); called once at exit.
    shutdown: Callable[[], Awaitable[None]] | None = None
    # The questions waiting for the person (tool approvals, folder trust).
    questions: Questions | None = None
    # The runtime's policy, hooks and settings once built (for the permission commands).
    assembly: Callable[[], AgentAssembly | None] | None = None
    # Applies settings edits until cancelled, printing with say(text, style); run from the
    # first session's opening until the REPL exits.
    watch: Callable[[Callable[[str, str], None]], Coroutine[Any, Any, None]] | None = None
    # The banner and prompt glyph drawn before prompt-toolkit loaded, holding the keys typed
    # since; the REPL takes over from it instead of printing the banner again.
    early: EarlyPrompt | None = None
    # Trusts a folder's settings that waited for /trust and applies them (say reports).
    trust: Callable[[TrustRequest, Callable[[str, str], None]], Awaitable[None]] | None = None
    # What building the runtime had to say (settings read, files skipped), shown above the
    # first prompt's answer rather than written to stderr over the prompt.
    notices: Callable[[], list[str]] = list


# How long the background start waits for the first prompt to be drawn.
_FIRST_PAINT_SECONDS = 0.15


async def run_repl(options: ReplOptions, *, console: Console | None = None) -> int:
    """Run the REPL until the user leaves; return the exit status.

    Raises what `options.open_session` raised if the first session cannot open.
    """
    return await ReplSession(options, console=console).run()


class ReplSession:
    """One interactive run: the prompt, the current LiveSession and its renderer.

    Slash commands run with `host` (a `ReplCommandHost`) as their CommandHost.
    """

    def __init__(self, options: ReplOptions, *, console: Console | None = None) -> None:
        if options.early is not None:
            options.early.clear_line()  # before anything below can print on the prompt's line
        self.options = options
        self._console = console
        self.commands = default_registry()
        self.host = ReplCommandHost(self)
        self.keys = ReplKeys(self)
        self._live: LiveSession | None = None
        self._opening: asyncio.Task[LiveSession] | None = None
        self._renderer: Renderer | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._turns: dict[asyncio.Task[Any], str] = {}  # running and queued turns → prompt
        self._command: asyncio.Task[Any] | None = None  # a slash command running
        self.exiting = False  # the REPL leaves after the current input
        self._exit_code = 0
        self._open_error: BaseException | None = None
        self._closed = False
        self._watching: asyncio.Task[None] | None = None
        self._planning: asyncio.Task[None] | None = None
        self._attachments = Attachments()  # images and PDFs in the prompt being edited
        self._pastes = Pastes(attach=self._attach_pasted)  # long pastes show as placeholders
        self.completer = PromptCompleter(self.commands, options.project_root,
                                         live=lambda: self._live)
        self._prompt: PromptSession[str] = PromptSession(
            message=self._message,
            multiline=True,
            prompt_continuation="  ",
            history=PastingHistory(prompt_history(options.history_file), self._pastes),
            completer=ThreadedCompleter(self.completer),
            complete_while_typing=True,
            reserve_space_for_menu=4,
            key_bindings=self._pastes.with_keys(repl_key_bindings(self.keys)),
            refresh_interval=0,  # the spinner redraws from _tick, only while a turn runs
            style=PROMPT_STYLE,
            enable_suspend=True,
            # After an early prompt, the first prompt takes the terminal over from it.
            input=taking_over(options.early) if options.early is not None else None,
        )
        self.questions = options.questions or Questions(options.project_root)
        self.questions.on_held = self.host.held
        self._prompt.app.ttimeoutlen = ESCAPE_SECONDS  # Esc interrupts as fast as Ctrl-C
        self.asker = Asker(self.questions, self._prompt, say=self.say,
                           show=self._show_approval, interrupt=self.interrupt)

    # ── what commands and keys act on ─────────────────────────────────────────────────────

    @property
    def live(self) -> LiveSession | None:
        """Return the current LiveSession, or None while it is still opening."""
        return self._live

    def assembly(self) -> AgentAssembly | None:
        """Return the current runtime's assembly, once built."""
        return self.options.assembly() if self.options.assembly is not None else None

    @property
    def policy(self) -> PermissionPolicy | None:
        """Return the runtime's permission policy, or None before it is built."""
        assembly = self.assembly()
        return assembly.policy if assembly is not None else None

    async def live_session(self) -> LiveSession:
        """Return the current LiveSession, waiting for it to open (raises if it failed)."""
        if self._live is not None:
            return self._live
        if self._closed:
            raise RuntimeError("the REPL has ended; its session is closed")
        if self._opening is None:
            self._opening = self._start_opening(self.options.session_id)
        return await asyncio.shield(self._opening)

    def request_exit(self, code: int = 0) -> None:
        """Leave after the current input; the session is closed and stays resumable."""
        self.exiting = True
        self._exit_code = code or self._exit_code
        self._exit_if_requested()

    def _exit_if_requested(self) -> None:
        """End the prompt now if an exit was requested (also run as the prompt's pre_run)."""
        app = self._prompt.app
        if self.exiting and app.future is not None and not app.future.done():
            if self._open_error is not None:  # the error is said below, not after a prompt
                app.erase_when_done = True
            app.exit(result="")
        else:
            self.asker.give_way()

    # ── the loop ─────────────────────────────────────────────────────────────────────────

    async def run(self) -> int:
        """Show the prompt until the user leaves; return the exit status.

        If the first session cannot open (no model configured, an unknown or locked session
        id), the REPL ends and re-raises that error for the caller to report.
        """
        if self._opening is None:
            self._opening = self._start_opening(self.options.session_id)
        # SIGINT (Ctrl-C while no prompt reads keys) counts as a Ctrl-C key.
        restore = catch_sigint(asyncio.get_running_loop(),
                               functools.partial(self.keys.ctrl_c, had_text=False))
        ticker = asyncio.get_running_loop().create_task(tick(
            self._prompt.app, lambda: self._renderer is not None and self._renderer.activity.busy))
        try:
            if self.options.early is None:
                self._banner()
            with patch_stdout(raw=True):
                if self.options.initial_prompt:
                    await self.asker.attend(self._first(self.options.initial_prompt))
                await self._read_loop()
        finally:
            restore()
            ticker.cancel()
            await self.aclose()
        if self._open_error is not None:
            raise self._open_error
        return self._exit_code

    async def _first(self, prompt: str) -> None:
        """Run the command line's prompt once the session is open (its notices first)."""
        with contextlib.suppress(Exception):  # a failed opening is reported by itself
            await self.live_session()
        if not self.exiting:
            self.say(f"› {prompt}", "bold")
            await self._handle(prompt)

    async def _read_loop(self) -> None:
        while not self.exiting:
            if await self.asker.ask_waiting():
                continue
            try:
                text = await self._prompt.prompt_async(default=self.asker.take_draft(),
                                                       pre_run=self._exit_if_requested)
            except KeyboardInterrupt:  # SIGINT from outside, or Ctrl-C the bindings passed on
                self.keys.ctrl_c(had_text=False)
                continue
            except EOFError:
                break
            if self.exiting:
                break
            if not self.asker.gave_way():
                await self.asker.attend(self._handle(self._pastes.take(text)))

    def _show_approval(self, question: ApprovalQuestion) -> None:
        from aimon_cli.render import approval_lines

        root = self._live.project_root if self._live is not None else self.options.project_root
        for line in approval_lines(question.request, question.change, root, self.console.width):
            self.console.print(line, no_wrap=True, overflow="ellipsis", crop=True)

    async def _handle(self, text: str) -> None:
        if not text.strip():
            return
        self.keys.armed = False
        if parse_slash(text) is not None:
            await self._run_command(text)
        elif text.startswith("!") and text[1:].strip():
            await self._submit(text[1:].strip(), shell=True)
        else:
            await self._submit(text, attachments=self._attachments.take(text))

    async def _run_command(self, text: str) -> None:
        parsed = parse_slash(text)
        if parsed is not None and self.commands.get(parsed[0]) is None:
            await self._current_or_none()  # the session's runtime brings the skill commands
        name = parsed[0] if parsed is not None else ""
        doing = "compacting the conversation" if name == "compact" else f"running /{name}"
        self._command = asyncio.ensure_future(self.commands.run(text, self.host))
        try:
            outcome = await self.asker.attend(self._command, doing=doing)
        except asyncio.CancelledError:
            if self._closed or asyncio.current_task().cancelling():  # type: ignore[union-attr]
                raise
            try:  # a command that stops its work itself says how it ended (/workflow)
                outcome = await self._command
            except (asyncio.CancelledError, Exception):
                self.say(f"Cancelled /{name}: nothing it had not finished was kept.", "dim")
                return
        except Exception as exc:  # the session could not open, the store failed, ...
            log.debug("command %r failed", text, exc_info=True)
            self._error(str(exc) or type(exc).__name__)
            return
        finally:
            self._command = None
        self._show(outcome)
        if outcome.draft is not None:
            self.asker.set_draft(outcome.draft)
        if outcome.prompt:
            await self._submit(outcome.prompt)

    async def _submit(self, prompt: str, *, shell: bool = False,
                      attachments: tuple[ContentBlock, ...] = ()) -> None:
        try:
            live = await self.live_session()
        except Exception:  # already reported when the opening failed
            return
        from aimon_core.live import LiveSessionClosedError

        refused = refused_attachments(live.runtime.model, live.runtime.client.provider,
                                      attachments)
        if refused:
            self._error(refused)
            self.asker.set_draft(prompt)
            return
        try:
            _, task = live.offer_async(prompt, shell=shell, attachments=attachments)
        except LiveSessionClosedError as exc:
            self._error(str(exc))
            return
        self._turns[task] = f"!{prompt}" if shell else prompt
        task.add_done_callback(self._turn_done)

    def _turn_done(self, task: asyncio.Task[Any]) -> None:
        from aimon_core.live import LiveSessionClosedError

        self._turns.pop(task, None)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None and not isinstance(exc, LiveSessionClosedError):
            log.debug("the turn failed", exc_info=exc)
            if self._renderer is not None and not self.busy():
                self._renderer.turn_failed(f"The turn failed: {exc}")
            else:
                self._error(f"The turn failed: {exc}")

    def _attach_pasted(self, text: str) -> str | None:
        """Take a pasted path to an image or PDF (a dropped file); return its placeholder."""
        return self._attachments.pasted(text, self.say)

    @property
    def attachments(self) -> Attachments:
        """Return the images and PDFs attached to the prompt being edited."""
        return self._attachments

    @property
    def renderer(self) -> Renderer | None:
        """Return the current session's renderer, once it is open."""
        return self._renderer

    @property
    def prompt(self) -> PromptSession[str]:
        """Return the prompt session (the keys redraw it)."""
        return self._prompt

    # ── opening, switching and closing sessions ─────────────────────────────────────────

    def _start_opening(self, session_id: str | None) -> asyncio.Task[LiveSession]:
        async def open_first() -> LiveSession:
            if not self.options.initial_prompt:
                # Let the first prompt paint before the SDK import competes for the GIL.
                await asyncio.sleep(_FIRST_PAINT_SECONDS)
            live = await self.options.open_session(session_id)
            # From now on a folder's new settings never interrupt: they wait for /trust.
            self.questions.defer_trust = True
            await asyncio.to_thread(importlib.import_module, "aimon_cli.render")
            for notice in self.options.notices():
                self.say(notice, "yellow")
            self._attach(live, replay=session_id is not None)
            self._start_watching()
            self._start_mcp()
            return live

        task = asyncio.get_running_loop().create_task(open_first())
        task.add_done_callback(self._first_opened)
        return task

    def _first_opened(self, task: asyncio.Task[LiveSession]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self._open_error = exc
            self.request_exit(1)

    def _start_mcp(self) -> None:
        # After the first paint: MCP servers connect in the background, tools join later.
        assembly = self.assembly()
        if assembly is not None:
            assembly.start_background(lambda text: self.say(f"⚠ {text}", "yellow"),
                                      (self.commands,))

    def _start_watching(self) -> None:
        watch = self.options.watch
        if watch is None or self._watching is not None or self._closed:
            return
        self._watching = asyncio.get_running_loop().create_task(watch(self.say))
        self._watching.add_done_callback(_log_failure)

    async def switch(self, session_id: str | None) -> LiveSession:
        """Open another session (a new one for None) in place of the current one."""
        old = await self._current_or_none()
        live = await self.options.open_session(session_id)
        if old is not None:
            await self._detach(old)
        self._attach(live, replay=session_id is not None)
        self._start_mcp()  # another agent's runtime (/resume) has its own servers
        return live

    async def _current_or_none(self) -> LiveSession | None:
        with contextlib.suppress(Exception):
            return await self.live_session()
        return None

    def _attach(self, live: LiveSession, *, replay: bool) -> None:
        from aimon_cli.render import Renderer

        renderer = Renderer(self.console, session_id=live.id, project_root=live.project_root)
        renderer.on_change = functools.partial(redraw, self._prompt.app)
        if self._renderer is None:  # the first session: say which model answers
            self.say(f"{live.runtime.model} · {live.runtime.client.provider}", "dim")
        self._renderer, self._live = renderer, live
        if live.commands is not None:  # the runtime's commands: system ones plus skills
            self.commands = self.completer.registry = live.commands
        stops = (live.subscribe(renderer), live.subscribe(self._watch_turns))
        self._unsubscribe = lambda: _call_all(stops)
        self.questions.attach(live)
        if replay:
            renderer.replay(live.record.transcript.messages)
            for warning in live.record.load_warnings:
                self.say(f"warning: {warning}", "yellow")

    def _watch_turns(self, event: LiveSessionEvent) -> None:
        """After an answer in plan mode, offer to approve the plan and start on it."""
        if self._planning is None and len(self._turns) <= 1 and plan_presented(event,
                                                                               self.policy):
            self._planning = asyncio.get_running_loop().create_task(self._plan_step())

    async def _plan_step(self) -> None:
        try:
            if await approve_plan(self.questions, self.policy, self.say):
                await self._submit(PLAN_APPROVED)
        finally:
            self._planning = None

    async def _detach(self, live: LiveSession) -> None:
        self.questions.detach()
        await live.close()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._live = None

    async def aclose(self) -> None:
        """Close the current session (it stays resumable) and say how to resume it."""
        if self._closed:
            return
        self._closed = True
        live = self._live
        if live is None and self._opening is not None:
            with contextlib.suppress(Exception):
                live = await asyncio.shield(self._opening)
        if live is not None:
            await self._detach(live)
        if self._turns:
            await asyncio.gather(*self._turns, return_exceptions=True)
        for task in (self._watching, self._planning):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if self.options.shutdown is not None:
            try:
                await self.options.shutdown()
            except Exception:
                log.warning("shutting down failed", exc_info=True)
        if live is not None and live.is_stored:  # an empty session is not kept: no hint
            self.say(f"Resume this session with: aimon --resume {live.id}")

    # ── Ctrl-C, Esc, Shift-Tab and the live area (the key bindings are in `_keys`) ─────────

    def busy(self) -> bool:
        """Tell whether a turn (or a slash command) runs."""
        live = self._live
        return (self._command is not None and not self._command.done()) or (
            live is not None and live.status().running_turn is not None)

    def interrupt(self) -> bool:
        """Interrupt the running turn or command; the prompts queued behind a turn go back
        into the input box. False when there is nothing to interrupt."""
        if self._command is not None and not self._command.done():
            live = self._live  # a command that runs a turn (/workflow) has the turn stopped
            running = live.status().running_turn if live is not None else None
            if running is None or live is None or not live.interrupt(running):
                self._command.cancel()
            return True
        live, renderer = self._live, self._renderer
        running = live.status().running_turn if live is not None else None
        if live is None or running is None or (
                renderer is not None and renderer.finished_turn == running):
            return False  # the turn shown has ended (what runs now is its bookkeeping)
        # Turns run in the order they were offered: the first not done is the running one.
        queued = [t for t in self._turns if not t.done() and t.cancelling() == 0][1:]
        if not live.interrupt(running):
            return False
        dropped = [self._turns[t] for t in queued]
        for task in queued:
            task.cancel()
        if renderer is not None:
            renderer.take_queued()
        note = "Interrupting…"
        if dropped:
            note += (f" ({len(dropped)} queued prompt{'s' * (len(dropped) != 1)} put back in "
                     "the input box)")
            self.asker.put_back(dropped)
        if renderer is not None:
            renderer.note(note, "dim")  # after the partial text, not above it
        else:
            self.say(note, "dim")
        return True

    def _message(self) -> StyleAndTextTuples:
        """Return the prompt, with a spinner line above it while a turn runs.

        The spinner lives in the prompt rather than a bottom toolbar: a toolbar needs the
        terminal to report the cursor position, which not every terminal (or pty) does.
        """
        from aimon_cli._footer import status_footer

        policy = self.policy
        mode = policy.mode.value if policy is not None else "default"
        app = get_app_or_none()
        message = prompt_message(self._renderer, self.questions.put_off(), app, mode)
        assembly = self.options.assembly() if self.options.assembly is not None else None
        footer = status_footer(self._live, assembly, app)  # above the mode and prompt glyph
        tail = 2 if len(message) > 1 and message[-2][0] == "class:mode" else 1
        return [*message[:-tail], *footer, *message[-tail:]] if footer else message

    # ── output ───────────────────────────────────────────────────────────────────────────

    @property
    def console(self) -> Console:
        """Return the rich console (made on first use: importing rich takes a while)."""
        if self._console is None:
            from rich.console import Console

            # Writes above the prompt at once, in step with the live text (see _terminal).
            self._console = Console(highlight=False, file=cast("IO[str]", PromptWriter()))
        return self._console

    def _banner(self) -> None:
        from aimon_core import __version__

        print_formatted_text(FormattedText([
            ("#888888", banner_text(__version__, str(self.options.project_root),
                                    screen_width())),
        ]))

    def _show(self, outcome: CommandOutcome) -> None:
        if outcome.text and outcome.markdown and self._renderer is not None \
                and not outcome.is_error:
            self._renderer.markdown(outcome.text)
        elif outcome.text:
            self.say(outcome.text, "red" if outcome.is_error else "")
        if outcome.usage is not None and self._live is not None:
            from aimon_cli.render import status_line

            self.console.print(status_line(outcome.usage, outcome.cost_usd, self._live.id))

    def _error(self, text: str) -> None:
        self.say(text, "red")

    def say(self, text: str, style: str = "") -> None:
        """Print lines above the prompt (`style`: "dim", "red"...), wrapped by `hanging`."""
        for line in hanging(text, max(self.console.width - 1, 20)):
            self.console.print(line, style=style or None, markup=False, highlight=False,
                               no_wrap=True, overflow="fold")


def _call_all(calls: tuple[Callable[[], None], ...]) -> None:
    for call in calls:
        call()


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("watching the settings failed", exc_info=task.exception())
