"""What the REPL offers slash commands (their `CommandHost`): the session, the permission
state, questions asked in the terminal, the clipboard and folder trust."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from prompt_toolkit.application import get_app_or_none

from aimon_core.command import CANCELLED, CommandRegistry

if TYPE_CHECKING:
    from aimon_cli.repl import ReplSession
    from aimon_core.config import LoadedSettings, TrustRequest
    from aimon_core.live import LiveSession
    from aimon_core.mcp import MCPServers
    from aimon_core.permission import ApprovalAnswer, ApprovalRequest, PermissionPolicy
    from aimon_core.session import SessionSummary


class ReplCommandHost:
    """The REPL as the host of its slash commands."""

    def __init__(self, repl: ReplSession) -> None:
        self._repl = repl

    @property
    def live(self) -> LiveSession | None:
        """Return the current LiveSession, or None while it is still opening."""
        return self._repl.live

    @property
    def commands(self) -> CommandRegistry:
        """Return the registry the command was found in."""
        return self._repl.commands

    async def live_session(self) -> LiveSession:
        """Return the current LiveSession, waiting for it to open (raises if it failed)."""
        return await self._repl.live_session()

    async def new_session(self) -> LiveSession:
        """Open a new session in place of the current one (which stays stored); the screen
        is cleared for it, as the old conversation is no longer the one going on."""
        live = await self._repl.switch(None)
        self._repl.console.clear()
        return live

    async def resume(self, session_id: str) -> LiveSession:
        """Open a stored session in place of the current one."""
        return await self._repl.switch(session_id)

    async def list_sessions(self, limit: int) -> tuple[SessionSummary, ...]:
        """Return the project's most recent sessions."""
        root = str(self._repl.options.project_root.resolve())
        records = self._repl.options.store.records
        return await asyncio.to_thread(records.list_sessions, root, limit)

    @property
    def exit_requested(self) -> bool:
        """Return whether the REPL leaves after the current input."""
        return self._repl.exiting

    def request_exit(self) -> None:
        """Leave after the current input; the session is closed and stays resumable."""
        self._repl.request_exit()

    @property
    def policy(self) -> PermissionPolicy | None:
        """Return the runtime's permission policy, or None before it is built."""
        return self._repl.policy

    @property
    def settings(self) -> LoadedSettings | None:
        """Return the settings in effect, or None before the runtime is built."""
        assembly = self._repl.assembly()
        return assembly.settings if assembly is not None else None

    @property
    def mcp_servers(self) -> MCPServers | None:
        """Return the current runtime's MCP servers (for /mcp), if any."""
        assembly = self._repl.assembly()
        return assembly.mcp if assembly is not None else None

    def pending_approvals(self) -> tuple[ApprovalRequest, ...]:
        """Return the tool calls waiting for approval, oldest first."""
        return self._repl.questions.pending()

    def answer_approval(self, request_id: str, answer: ApprovalAnswer) -> bool:
        """Answer a waiting approval; False if none with that id waits."""
        return self._repl.questions.answer(request_id, answer)

    async def confirm(self, question: str, details: str) -> bool:
        """Show `details` (a diff), then ask yes or no."""
        return await self.choose(question, (("y", "yes"), ("n", "no")), details) == "y"

    async def choose(self, question: str, options: tuple[tuple[str, str], ...],
                     details: str) -> str | None:
        """Show `details`, then the options (a one-character key answers at once; ↑/↓ and
        Enter too); `CANCELLED` when cancelled (Esc, Ctrl-C)."""
        from aimon_cli._approval import Choice, choose

        if details:
            self._repl.say(details)
        choices = (*(Choice(keys=(key,) if len(key) == 1 else (), value=key,
                            label=key if len(key) == 1 else "", hint=label)
                     for key, label in options),
                   Choice(keys=("escape", "c-c"), value=CANCELLED, immediate=True))
        shortcuts = [key for key, _ in options if len(key) == 1]
        keys = (f"1-{shortcuts[-1]}" if len(shortcuts) > 3 and "".join(shortcuts).isdigit()
                else "/".join(shortcuts))
        async with self._repl.asker.claim():
            value = await choose(question, choices,
                                 done=asyncio.get_running_loop().create_future(),
                                 on_typed=lambda _: None, keys=keys + " · Esc cancels")
        return value if value is not None else CANCELLED

    async def trust_folder(self) -> str:
        """Trust the folder settings that wait for it (/trust) and apply them."""
        questions, trust = self._repl.questions, self._repl.options.trust
        request = questions.held()
        if request is None:
            return "No settings wait for your trust: this folder's settings are all in effect."
        if trust is None:
            return "Trust is not available here."
        await trust(request, self._repl.say)
        questions.clear_held()
        return f"Trusted {request.folder}: its settings are in effect now."

    def held(self, request: TrustRequest) -> None:
        """Say that a folder's changed settings wait for /trust."""
        self._repl.say(f"⚠ This folder's settings changed; held back until you run /trust: "
                       f"{'; '.join(request.what)}.", "yellow")

    async def copy_text(self, text: str) -> str:
        """Put `text` on the clipboard; return where it went, in words."""
        from aimon_cli._pasted import copy_to_clipboard
        from aimon_core.session import user_data_dir

        fallback = user_data_dir() / "last-answer.md"
        return await asyncio.to_thread(copy_to_clipboard, text, fallback)


class ReplKeys:
    """What the REPL's keys act on (`_keys.KeyHost`): interrupting, leaving, the mode, the
    last shortened result, the clipboard's image."""

    def __init__(self, repl: ReplSession) -> None:
        self._repl = repl
        self.armed = False  # a first Ctrl-C at an empty prompt: the second one leaves
        self._cycling: set[asyncio.Task[None]] = set()

    def busy(self) -> bool:
        """Tell whether a turn (or a slash command) runs."""
        return self._repl.busy()

    def interrupt(self) -> bool:
        """Interrupt the running turn or command; False when there is none."""
        return self._repl.interrupt()

    def idle_and_empty(self) -> bool:
        """Tell whether no turn runs and the prompt is empty."""
        app = get_app_or_none()
        return not self.busy() and app is not None and not app.current_buffer.text

    def ctrl_c(self, *, had_text: bool) -> None:
        """Interrupt the running turn; at an idle, empty prompt, exit on the second press."""
        if self.interrupt() or had_text:
            self.armed = False
            return
        if self.armed:
            self._repl.request_exit()
            return
        self.armed = True
        self._repl.say("Press Ctrl-C again to exit", "dim")

    def expand_last(self) -> None:
        """Show the last shortened tool result whole (ctrl+o)."""
        if self._repl.renderer is not None:
            self._repl.renderer.expand_last()

    def cycle_mode(self) -> None:
        """Switch the permission mode: default → acceptEdits → plan → default (Shift-Tab);
        pressed while the session still opens, once it is open."""
        task = asyncio.ensure_future(self._cycle_mode())
        self._cycling.add(task)
        task.add_done_callback(self._cycling.discard)

    async def _cycle_mode(self) -> None:
        from aimon_cli._keys import next_mode
        from aimon_cli._terminal import redraw

        with contextlib.suppress(Exception):  # a failed opening is reported by itself
            await self._repl.live_session()
        if self._repl.policy is not None:
            next_mode(self._repl.policy)
            redraw(self._repl.prompt.app)

    def paste_image(self) -> None:
        """Attach the clipboard's image to the prompt (Ctrl-V), or say why there is none."""
        placeholder = self._repl.attachments.clipboard(self._repl.say)
        app = get_app_or_none()
        if placeholder and app is not None:
            app.current_buffer.insert_text(placeholder)
