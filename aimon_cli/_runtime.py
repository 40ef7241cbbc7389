"""The REPL's sessions on the core's runtimes: which agent's runtime opens which session.

The runtimes themselves come from `aimon_core.runtime.AgentRuntimeRegistry` (one per agent,
built on first use, kept in step with the settings files); this module only decides, for the
REPL, which runtime a new or resumed session belongs to, and makes the REPL's `Questions` the
registry's trust callback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from aimon_cli import _startup

if TYPE_CHECKING:
    from pathlib import Path

    from aimon_cli._approval import Questions
    from aimon_core.config import TrustRequest
    from aimon_core.live import LiveSession
    from aimon_core.runtime import AgentAssembly, AgentRuntimeRegistry, RuntimeFlags
    from aimon_core.session import SessionStore


class ReplRuntimes:
    """The REPL's runtimes (one per agent) and the session currently open on one of them.

    The first `open_session` builds the runtime of the agent the command line asked for (or,
    resuming, the agent that made the session); /clear opens a new session on the current
    runtime; /resume opens a stored session on the runtime of the agent that made it.
    """

    def __init__(self, project_root: Path, flags: RuntimeFlags, store: SessionStore,
                 questions: Questions) -> None:
        from aimon_core.runtime import Application

        self.store = store
        self.flags = flags
        # What building a runtime had to say; the REPL prints it above its prompt (written to
        # stderr, it landed on the prompt's line).
        self.notices: list[str] = []
        # The REPL is one application: it closes the runtimes it made at exit (`shutdown`).
        self.app = Application(store)
        from aimon_cli._schedule_repl import schedule_parts

        self.registry: AgentRuntimeRegistry = self.app.runtimes(
            project_root, flags, trust=questions.ask_trust, on_notice=self.notices.append,
            parts=schedule_parts())  # the model's schedule_task and its two companions
        # The runtime of the current session (the REPL's permission commands act on it).
        self.assembly: AgentAssembly | None = None
        self._current: LiveSession | None = None

    async def open_session(self, session_id: str | None) -> LiveSession:
        """Open (or resume) a session on its agent's runtime."""
        from aimon_cli._schedule_repl import register_schedule_here
        from aimon_cli._service_bg import register_bg

        try:
            assembly = await self._runtime_for(session_id)
            register_bg(assembly.commands, self.flags)  # /bg: the session to the service
            register_schedule_here(assembly.commands)  # /schedule: the service's routines
            live = await assembly.open_session(self.store, session_id=session_id)
        finally:
            _startup.finish()  # the start is over, whether the session opened or not
        self._current, self.assembly = live, assembly
        return live

    async def _runtime_for(self, session_id: str | None) -> AgentAssembly:
        if session_id is None:
            return self.assembly or await self.registry.get()  # /clear keeps the agent
        if self.assembly is None and self.flags.agent is not None:
            return await self.registry.get()  # --agent wins over the session's own
        from aimon_cli._store import agent_of_session

        wanted = await asyncio.to_thread(agent_of_session, self.store, session_id)
        built = self.registry.find(wanted) if wanted is not None else self.assembly
        return built or await self.registry.get(wanted)

    def take_notices(self) -> list[str]:
        """Return the notices since the last call (and forget them)."""
        notices, self.notices[:] = list(self.notices), []
        return notices

    async def shutdown(self) -> None:
        """Close the application: every runtime's model client and MCP servers."""
        await self.app.aclose()

    async def trust(self, request: TrustRequest, say: Callable[[str, str], None]) -> None:
        """Trust the folder's settings that wait (`/trust`) and apply them to every runtime."""
        from aimon_core.config import TrustStore

        await asyncio.to_thread(TrustStore().trust, request.folder, request.items)
        await self.registry.reload(say, self._current)

    async def watch(self, say: Callable[[str, str], None]) -> None:
        """Apply settings edits to every runtime until cancelled."""
        if self.assembly is None:  # no session opened: the REPL reports why
            return
        await self.registry.watch(say, current=lambda: self._current)
