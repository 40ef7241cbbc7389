"""What slash commands may do when they run inside a LiveSession with no terminal around it."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Protocol

from aimon_core.command import CommandError, CommandRegistry

if TYPE_CHECKING:
    from aimon_core.agent import ApprovalAnswer, ApprovalRequest
    from aimon_core.command import MCPStatus
    from aimon_core.config import LoadedSettings
    from aimon_core.live._live import LiveSession
    from aimon_core.permission import PermissionPolicy
    from aimon_core.session import SessionSummary

_TERMINAL_ONLY = "works in the interactive session (run `aimon`); here, start another run instead"


class CommandScope(Protocol):
    """What a session's slash commands may act on beyond it: its runtime's policy, settings
    and MCP servers (an `AgentAssembly` is one; each is read when a command runs, so a
    settings reload is seen)."""

    @property
    def policy(self) -> PermissionPolicy | None:
        """Return the runtime's permission policy, if it has one."""
        ...

    @property
    def settings(self) -> LoadedSettings | None:
        """Return the settings the runtime uses now."""
        ...

    @property
    def mcp(self) -> MCPStatus | None:
        """Return the runtime's MCP servers (None: none configured)."""
        ...


class SessionCommandHost:
    """The CommandHost of print mode and library callers: one session, no terminal.

    Commands that switch sessions say where they work instead; the permission commands act on
    the scope's policy when the runtime has one.
    """

    def __init__(self, live: LiveSession, commands: CommandRegistry,
                 scope: CommandScope | None = None) -> None:
        self._live = live
        self._commands = commands
        self._scope = scope

    @property
    def mcp_servers(self) -> MCPStatus | None:
        """Return the runtime's MCP servers, for /mcp."""
        return self._scope.mcp if self._scope is not None else None

    @property
    def live(self) -> LiveSession | None:
        """Return the session the command runs in."""
        return self._live

    @property
    def commands(self) -> CommandRegistry:
        """Return the registry the command was found in."""
        return self._commands

    async def live_session(self) -> LiveSession:
        """Return the session the command runs in."""
        return self._live

    async def new_session(self) -> LiveSession:
        """Refuse: a new session is the next run's."""
        raise CommandError(f"/clear {_TERMINAL_ONLY}")

    async def resume(self, session_id: str) -> LiveSession:
        """Refuse: resuming is the next run's (`aimon -p --resume ID`)."""
        raise CommandError(f"/resume {_TERMINAL_ONLY} (or `aimon -p --resume {session_id}`)")

    async def list_sessions(self, limit: int) -> tuple[SessionSummary, ...]:
        """Return the project's most recent sessions."""
        root = str(self._live.project_root.resolve())
        return await asyncio.to_thread(self._live.store.records.list_sessions, root, limit)

    def request_exit(self) -> None:
        """Nothing to leave: the run ends after this input anyway."""

    @property
    def policy(self) -> PermissionPolicy | None:
        """Return the runtime's permission policy, if it has one."""
        return self._scope.policy if self._scope is not None else None

    @property
    def settings(self) -> LoadedSettings | None:
        """Return the settings the runtime uses now, if any."""
        return self._scope.settings if self._scope is not None else None

    def pending_approvals(self) -> tuple[ApprovalRequest, ...]:
        """Return the session's waiting approval questions."""
        return self._live.pending_approvals()

    def answer_approval(self, request_id: str, answer: ApprovalAnswer) -> bool:
        """Answer one of the session's waiting approval questions."""
        return self._live.answer(request_id, answer)

    async def confirm(self, question: str, details: str) -> bool:
        """Go ahead: typing the command (`aimon -p "/undo"`) was the confirmation."""
        return True

    async def choose(self, question: str, options: tuple[tuple[str, str], ...],
                     details: str) -> str | None:
        """Nobody to ask: the command must say what it wants in its arguments."""
        return None
