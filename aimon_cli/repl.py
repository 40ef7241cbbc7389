"""The interactive REPL: a prompt-toolkit prompt over a LiveSession, with slash commands.

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
from prompt_toolkit.formatted_text import FormattedText, StyleAndTextTuples
from prompt_toolkit.patch_stdout import patch_stdout

from aimon_cli._approval import ESCAPE_SECONDS, ApprovalQuestion, Asker, Questions
from aimon_cli._early import EarlyPrompt, banner_text
from aimon_cli._keys import repl_key_bindings
from aimon_cli._prompt import (
    PROMPT_STYLE,
    Pastes,
    PastingHistory,
    SlashCompleter,
    catch_sigint,
    prompt_history,
    taking_over,
)
from aimon_cli._terminal import PromptWriter, prompt_message, redraw, tick
from aimon_core.command import CommandOutcome, default_registry, parse_slash

if TYPE_CHECKING:
    from rich.console import Console

    from aimon_cli.render import Renderer
    from aimon_core.config import LoadedSettings, TrustRequest
    from aimon_core.live import LiveSession
    from aimon_core.mcp import MCPServers
    from aimon_core.permission import ApprovalAnswer, ApprovalRequest, PermissionPolicy
    from aimon_core.runtime import AgentAssembly
    from aimon_core.session import SessionStore, SessionSummary

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


# How long the background start waits for the first prompt to be drawn.
_FIRST_PAINT_SECONDS = 0.15


async def run_repl(options: ReplOptions, *, console: Console | None = None) -> int:
    """Run the REPL until the user leaves; return the exit status.

    Raises what `options.open_session` raised if the first session cannot open.
    """
    return await ReplSession(options, console=console).run()


class ReplSession:
    """One interactive run: the prompt, the current LiveSession and its renderer.

    It is the CommandHost of the slash commands.
    """

    def __init__(self, options: ReplOptions, *, console: Console | None = None) -> None:
        if options.early is not None:
            options.early.clear_line()  # before anything below can print on the prompt's line
        self.options = options
        self._console = console
        self.commands = default_registry()
        self._live: LiveSession | None = None
        self._opening: asyncio.Task[LiveSession] | None = None
        self._renderer: Renderer | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._turns: set[asyncio.Task[Any]] = set()
        self._exit_requested = False
        self._exit_code = 0
        self._ctrl_c_armed = False
        self._open_error: BaseException | None = None
        self._closed = False
        self._watching: asyncio.Task[None] | None = None
        self._pastes = Pastes()  # long pastes show as placeholders until the prompt is sent
        self._prompt: PromptSession[str] = PromptSession(
            message=self._message,
            multiline=True,
            prompt_continuation="  ",
            history=PastingHistory(prompt_history(options.history_file), self._pastes),
            completer=SlashCompleter(self.commands),
            complete_while_typing=True,
            reserve_space_for_menu=4,
            key_bindings=self._pastes.with_keys(repl_key_bindings(self)),
            refresh_interval=0,  # the spinner redraws from _tick, only while a turn runs
            style=PROMPT_STYLE,
            enable_suspend=True,
            # After an early prompt, the first prompt takes the terminal over from it.
            input=taking_over(options.early) if options.early is not None else None,
        )
        self.questions = options.questions or Questions(options.project_root)
        self.questions.on_held = self._trust_held
        self._prompt.app.ttimeoutlen = ESCAPE_SECONDS  # Esc interrupts as fast as Ctrl-C
        self._asker = Asker(self.questions, self._prompt, say=self._say,
                            show=self._show_approval, interrupt=self.interrupt)

    # ── CommandHost ──────────────────────────────────────────────────────────────────────

    @property
    def live(self) -> LiveSession | None:
        """Return the current LiveSession, or None while it is still opening."""
        return self._live

    async def live_session(self) -> LiveSession:
        """Return the current LiveSession, waiting for it to open (raises if it failed)."""
        if self._live is not None:
            return self._live
        if self._closed:
            raise RuntimeError("the REPL has ended; its session is closed")
        if self._opening is None:
            self._opening = self._start_opening(self.options.session_id)
        return await asyncio.shield(self._opening)

    async def new_session(self) -> LiveSession:
        """Open a new session in place of the current one (which stays stored)."""
        return await self._switch(None)

    async def resume(self, session_id: str) -> LiveSession:
        """Open a stored session in place of the current one."""
        return await self._switch(session_id)

    async def list_sessions(self, limit: int) -> tuple[SessionSummary, ...]:
        """Return the project's most recent sessions."""
        root = str(self.options.project_root.resolve())
        return await asyncio.to_thread(self.options.store.records.list_sessions, root, limit)

    @property
    def exit_requested(self) -> bool:
        """Return whether the REPL leaves after the current input."""
        return self._exit_requested

    def request_exit(self, code: int = 0) -> None:
        """Leave after the current input; the session is closed and stays resumable."""
        self._exit_requested = True
        self._exit_code = code or self._exit_code
        self._exit_if_requested()

    @property
    def policy(self) -> PermissionPolicy | None:
        """Return the runtime's permission policy, or None before it is built."""
        assembly = self.options.assembly() if self.options.assembly is not None else None
        return assembly.policy if assembly is not None else None

    @property
    def settings(self) -> LoadedSettings | None:
        """Return the settings in effect, or None before the runtime is built."""
        assembly = self.options.assembly() if self.options.assembly is not None else None
        return assembly.settings if assembly is not None else None

    def pending_approvals(self) -> tuple[ApprovalRequest, ...]:
        """Return the tool calls waiting for approval, oldest first."""
        return self.questions.pending()

    def answer_approval(self, request_id: str, answer: ApprovalAnswer) -> bool:
        """Answer a waiting approval; False if none with that id waits."""
        return self.questions.answer(request_id, answer)

    async def confirm(self, question: str, details: str) -> bool:
        """Show `details` (a diff), then ask yes or no."""
        return await self.choose(question, (("y", "yes"), ("n", "no")), details) == "y"

    async def choose(self, question: str, options: tuple[tuple[str, str], ...],
                     details: str) -> str | None:
        """Show `details`, then the options (a key highlights one, Enter confirms); None
        when cancelled (Esc, Ctrl-C)."""
        from aimon_cli._approval import Choice, choose

        if self.busy():  # files may change under a restore while a turn runs
            self._error("A turn is running: let it finish or interrupt it (Esc), then retry.")
            return None
        if details:
            self._say(details)
        choices = (*(Choice(keys=(key,), value=key, label=key, hint=label)
                     for key, label in options),
                   Choice(keys=("escape", "c-c"), value="", immediate=True))
        value = await choose(question, choices, done=asyncio.get_running_loop().create_future(),
                             on_typed=lambda _: None, keys="/".join(key for key, _ in options))
        return value or None

    async def trust_folder(self) -> str:
        """Trust the folder settings that wait for it (/trust) and apply them."""
        request = self.questions.held()
        if request is None:
            return "No settings wait for your trust: this folder's settings are all in effect."
        if self.options.trust is None:
            return "Trust is not available here."
        await self.options.trust(request, self._say)
        self.questions.clear_held()
        return f"Trusted {request.folder}: its settings are in effect now."

    def _trust_held(self, request: TrustRequest) -> None:
        what = "; ".join(request.what)
        self._say(f"⚠ This folder's settings changed and want to: {what}. They are held back "
                  "until you run /trust.", "yellow")

    def _exit_if_requested(self) -> None:
        """End the prompt now if an exit was requested (also run as the prompt's pre_run)."""
        app = self._prompt.app
        if self._exit_requested and app.future is not None and not app.future.done():
            app.exit(result="")
        else:
            self._asker.give_way()

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
                               functools.partial(self.ctrl_c, had_text=False))
        ticker = asyncio.get_running_loop().create_task(tick(
            self._prompt.app, lambda: self._renderer is not None and self._renderer.activity.busy))
        try:
            if self.options.early is None:
                self._banner()
            with patch_stdout(raw=True):
                if self.options.initial_prompt:
                    self._say(f"› {self.options.initial_prompt}", "bold")
                    await self._asker.attend(self._handle(self.options.initial_prompt))
                await self._read_loop()
        finally:
            restore()
            ticker.cancel()
            await self.aclose()
        if self._open_error is not None:
            raise self._open_error
        return self._exit_code

    async def _read_loop(self) -> None:
        while not self._exit_requested:
            if await self._asker.ask_waiting():
                continue
            try:
                text = await self._prompt.prompt_async(default=self._asker.take_draft(),
                                                       pre_run=self._exit_if_requested)
            except KeyboardInterrupt:  # SIGINT from outside, or Ctrl-C the bindings passed on
                self.ctrl_c(had_text=False)
                continue
            except EOFError:
                break
            if self._exit_requested:
                break
            if not self._asker.gave_way():
                await self._asker.attend(self._handle(self._pastes.take(text)))

    def _show_approval(self, question: ApprovalQuestion) -> None:
        from aimon_cli.render import approval_lines

        root = self._live.project_root if self._live is not None else self.options.project_root
        for line in approval_lines(question.request, question.change, root):
            self.console.print(line, no_wrap=True, overflow="ellipsis", crop=True)

    async def _handle(self, text: str) -> None:
        if not text.strip():
            return
        self._ctrl_c_armed = False
        if parse_slash(text) is not None:
            await self._command(text)
        else:
            await self._submit(text)

    async def _command(self, text: str) -> None:
        parsed = parse_slash(text)
        if parsed is not None and self.commands.get(parsed[0]) is None:
            await self._current_or_none()  # the session's runtime brings the skill commands
        try:
            outcome = await self.commands.run(text, self)
        except Exception as exc:  # the session could not open, the store failed, ...
            log.debug("command %r failed", text, exc_info=True)
            self._error(str(exc) or type(exc).__name__)
            return
        self._show(outcome)
        if outcome.prompt:
            await self._submit(outcome.prompt)

    async def _submit(self, prompt: str) -> None:
        try:
            live = await self.live_session()
        except Exception:  # already reported when the opening failed
            return
        from aimon_core.live import LiveSessionClosedError

        try:
            _, task = live.offer_async(prompt)
        except LiveSessionClosedError as exc:
            self._error(str(exc))
            return
        self._turns.add(task)
        task.add_done_callback(self._turn_done)

    def _turn_done(self, task: asyncio.Task[Any]) -> None:
        from aimon_core.live import LiveSessionClosedError

        self._turns.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None and not isinstance(exc, LiveSessionClosedError):
            log.debug("the turn failed", exc_info=exc)
            if self._renderer is not None and not self.busy():
                self._renderer.turn_failed(f"The turn failed: {exc}")
            else:
                self._error(f"The turn failed: {exc}")

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
        assembly = self.options.assembly() if self.options.assembly is not None else None
        if assembly is not None:
            assembly.start_background(lambda text: self._say(text, "yellow"), (self.commands,))

    @property
    def mcp_servers(self) -> MCPServers | None:
        """Return the current runtime's MCP servers (for /mcp), if any."""
        assembly = self.options.assembly() if self.options.assembly is not None else None
        return assembly.mcp if assembly is not None else None

    def _start_watching(self) -> None:
        watch = self.options.watch
        if watch is None or self._watching is not None or self._closed:
            return
        self._watching = asyncio.get_running_loop().create_task(watch(self._say))
        self._watching.add_done_callback(_log_failure)

    async def _switch(self, session_id: str | None) -> LiveSession:
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
            self._say(f"{live.runtime.model} · {live.runtime.client.provider}", "dim")
        self._renderer, self._live = renderer, live
        if live.commands is not None:  # the runtime's commands: system ones plus skills
            self.commands = live.commands
            if isinstance(self._prompt.completer, SlashCompleter):
                self._prompt.completer.registry = live.commands
        self._unsubscribe = live.subscribe(renderer)
        self.questions.attach(live)
        if replay:
            renderer.replay(live.record.transcript.messages)
            for warning in live.record.load_warnings:
                self._say(f"warning: {warning}", "yellow")

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
        if self._watching is not None:
            self._watching.cancel()
            await asyncio.gather(self._watching, return_exceptions=True)
        if self.options.shutdown is not None:
            try:
                await self.options.shutdown()
            except Exception:
                log.warning("shutting down failed", exc_info=True)
        if live is not None and live.is_stored:  # an empty session is not kept: no hint
            self._say(f"Resume this session with: aimon --resume {live.id}")

    # ── Ctrl-C, Esc and the toolbar (the key bindings are in `_keys`) ─────────────────────────

    def busy(self) -> bool:
        """Tell whether a turn runs."""
        live = self._live
        return live is not None and live.status().running_turn is not None

    def idle_and_empty(self) -> bool:
        """Tell whether no turn runs and the prompt is empty."""
        app = get_app_or_none()
        return not self.busy() and app is not None and not app.current_buffer.text

    def interrupt(self) -> bool:
        """Interrupt the running turn (and drop the prompts queued behind it); False when
        there is none to interrupt."""
        live, renderer = self._live, self._renderer
        running = live.status().running_turn if live is not None else None
        if live is None or running is None or (
                renderer is not None and renderer.finished_turn == running):
            return False  # the turn shown has ended (what runs now is its bookkeeping)
        if not live.interrupt(running):
            return False
        queued = [t for t in self._turns if not t.done() and t.cancelling() == 0]
        for task in queued:  # Ctrl-C clears the prompts queued behind the turn too
            task.cancel()
        dropped = f" ({len(queued)} queued prompt{'s' * (len(queued) != 1)} dropped)"
        note = "Interrupting…" + (dropped if queued else "")
        if renderer is not None:
            renderer.forget_queued()
            renderer.note(note, "dim")  # after the partial text, not above it
        else:
            self._say(note, "dim")
        return True

    def ctrl_c(self, *, had_text: bool) -> None:
        """Interrupt the running turn; at an idle, empty prompt, exit on the second press."""
        if self.interrupt() or had_text:
            self._ctrl_c_armed = False
            return
        if self._ctrl_c_armed:
            self.request_exit()
            return
        self._ctrl_c_armed = True
        self._say("Press Ctrl-C again to exit", "dim")

    def expand_last(self) -> None:
        """Show the last folded tool result whole (ctrl+o)."""
        if self._renderer is not None:
            self._renderer.expand_last()

    def _message(self) -> StyleAndTextTuples:
        """Return the prompt, with a spinner line above it while a turn runs.

        The spinner lives in the prompt rather than a bottom toolbar: a toolbar needs the
        terminal to report the cursor position, which not every terminal (or pty) does.
        """
        return prompt_message(self._renderer, self.questions.put_off(), get_app_or_none())

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
            ("#888888", banner_text(__version__, str(self.options.project_root))),
        ]))

    def _show(self, outcome: CommandOutcome) -> None:
        if not outcome.text:
            return
        if outcome.is_error:
            self._error(outcome.text)
        elif outcome.markdown:
            from rich.markdown import Markdown

            self.console.print(Markdown(outcome.text))
        else:
            self._say(outcome.text)

    def _error(self, text: str) -> None:
        self._say(text, "red")

    def _say(self, text: str, style: str = "") -> None:
        self.console.print(text, style=style or None, markup=False, highlight=False)


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("watching the settings failed", exc_info=task.exception())
