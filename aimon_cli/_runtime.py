"""The REPL's agent runtime: built once per process and shared by every session it opens.

It also keeps the runtime in step with the settings files while the REPL runs (hot reload).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from aimon_cli._setup import RuntimeOptions, SetupError

if TYPE_CHECKING:
    from aimon_cli._approval import ApprovalBridge
    from aimon_cli._setup import Assembly
    from aimon_core.config import LoadedSettings, SettingsError
    from aimon_core.session import LiveSession, SessionStore


class SharedRuntime:
    """The REPL's agent runtimes: one per agent, built on first use, shared by its sessions.

    The first `open_session` loads the settings, asks whether to trust the folder if its
    settings want to, and builds the runtime (importing the SDK, off the event loop). /clear
    opens a new session on the current runtime; /resume opens a stored session on the runtime
    of the agent that made it, built then if no session of that agent was open yet. `watch`
    applies settings edits to every runtime; `shutdown` closes their model clients at exit.
    """

    def __init__(self, options: RuntimeOptions, store: SessionStore,
                 questions: ApprovalBridge) -> None:
        self.options = options
        self.store = store
        self.questions = questions
        # The runtime of the current session (the REPL's permission commands act on it).
        self.assembly: Assembly | None = None
        self._built: dict[str | None, asyncio.Task[Assembly]] = {}  # by the --agent asked for
        self._current: LiveSession | None = None
        self._declined: set[str] = set()  # config hashes the user chose not to trust

    async def open_session(self, session_id: str | None) -> LiveSession:
        """Open (or resume) a session on its agent's runtime, with its approvals attached."""
        assembly = await self._runtime_for(session_id)
        live = await open_on(assembly, self.store, self.options.project_root, session_id)
        self._current, self.assembly = live, assembly
        return live

    async def _runtime_for(self, session_id: str | None) -> Assembly:
        if not self._built:  # the first session: the command line decides (--agent wins)
            options = await asyncio.to_thread(with_session_agent, self.options, self.store,
                                              session_id)
            return await self._assembled(options)
        if session_id is None and self.assembly is not None:
            return self.assembly  # /clear: a new session with the same agent
        from aimon_cli._store import agent_of_session

        wanted = (await asyncio.to_thread(agent_of_session, self.store, session_id)
                  if session_id is not None else None)
        for built in self._assemblies():
            if wanted is None or built.runtime.agent.name == wanted:
                return built  # (an unknown session: claiming it will say so)
        return await self._assembled(replace(self.options, agent=wanted))

    def _assembled(self, options: RuntimeOptions) -> asyncio.Future[Assembly]:
        building = self._built.get(options.agent)
        if building is None or (building.done() and not building.cancelled()
                                and building.exception() is not None):
            building = asyncio.get_running_loop().create_task(self._build(options))
            self._built[options.agent] = building
        return asyncio.shield(building)

    def _assemblies(self) -> list[Assembly]:
        """Return the runtimes built so far."""
        return [task.result() for task in self._built.values()
                if task.done() and not task.cancelled() and task.exception() is None]

    async def _build(self, options: RuntimeOptions) -> Assembly:
        from aimon_cli._setup import build_runtime, load_project_settings

        settings = await asyncio.to_thread(load_project_settings, options)
        settings = await self._settle_trust(settings)
        assembly = await asyncio.to_thread(build_runtime, options, settings,
                                           approve=self.questions.approve,
                                           on_event=self.questions.on_event)
        for notice in assembly.notices:
            sys.stderr.write(f"aimon: {notice}\n")
        return assembly

    async def _settle_trust(self, settings: LoadedSettings) -> LoadedSettings:
        """Ask about a folder's untrusted settings; return them reloaded if trusted."""
        from aimon_cli._setup import load_project_settings
        from aimon_core.config import TrustStore

        request = settings.pending_trust
        if request is None or request.config_hash in self._declined:
            return settings
        if not await self.questions.ask_trust(request):
            self._declined.add(request.config_hash)
            return settings
        await asyncio.to_thread(TrustStore().trust, request.folder, request.config_hash)
        return await asyncio.to_thread(load_project_settings, self.options)

    async def shutdown(self) -> None:
        """Close the model clients (once; builds still running are cancelled)."""
        built, self._built = list(self._built.values()), {}
        for task in built:
            task.cancel()
        if built:
            await asyncio.wait(built)
        for task in built:
            if not task.cancelled() and task.exception() is None:
                await task.result().runtime.client.aclose()

    async def watch(self, say: Callable[[str, str], None]) -> None:
        """Apply every settings edit until cancelled; report with `say(text, style)`."""
        from aimon_cli._setup import settings_flags
        from aimon_core.config import TrustStore, watch_settings

        if self.assembly is None:  # no session opened: the REPL reports why
            return
        root = self.options.project_root
        changes: asyncio.Queue[LoadedSettings | SettingsError] = asyncio.Queue()
        stop = asyncio.Event()
        stamps = await asyncio.to_thread(_settings_stamps, root)
        watcher = asyncio.get_running_loop().create_task(watch_settings(
            root, changes.put_nowait, trust_store=TrustStore(),
            flags=settings_flags(self.options), stop_event=stop))
        try:
            while True:
                change = await changes.get()
                now = await asyncio.to_thread(_settings_stamps, root)
                changed: list[tuple[str, Path | None]] = [
                    (layer, path) for layer, (path, stamp) in now.items()
                    if stamps.get(layer, (path, None))[1] != stamp]
                stamps = now
                await self._reloaded(change, changed, say)
        finally:
            stop.set()
            await asyncio.gather(watcher, return_exceptions=True)

    async def _reloaded(self, change: LoadedSettings | SettingsError,
                        changed: list[tuple[str, Path | None]],
                        say: Callable[[str, str], None]
                        ) -> None:
        from aimon_cli._setup import apply_settings
        from aimon_core.config import SettingsError

        assembly = self.assembly
        if assembly is None:
            return
        if isinstance(change, SettingsError):
            say(f"Settings not reloaded (the previous ones stay in effect): {change}", "red")
            return
        try:
            change = await self._settle_trust(change)
        except SetupError as exc:
            say(f"Settings not reloaded (the previous ones stay in effect): {exc}", "red")
            return
        if change == assembly.settings:
            return
        notes = apply_settings(assembly, self.options, change,
                               lambda exc: say(f"settings: {exc}", "red"))
        for other in self._assemblies():  # the runtimes of agents resumed earlier
            if other is not assembly and change != other.settings:
                apply_settings(other, self.options, change, lambda exc: None)
        say("settings reloaded" + (f" ({'; '.join(notes)})" if notes else ""), "dim")
        await self._config_changed(assembly, changed, say)

    async def _config_changed(self, assembly: Assembly, changed: list[tuple[str, Path | None]],
                              say: Callable[[str, str], None]) -> None:
        """Run the ConfigChange hooks, once per settings file that changed."""
        from aimon_core.hook import HookEvent, HookInput

        event, live = HookEvent.ON_CONFIG_RELOAD, self._current
        if not assembly.hooks.has_hooks(event):
            return
        for layer, path in changed or [("project", None)]:
            result = await assembly.hooks.dispatch(event, HookInput(
                event=event, session_id=str(live.id) if live is not None else "",
                cwd=self.options.project_root,
                transcript_path=live.transcript_path if live is not None else None,
                permission_mode=assembly.policy.mode.value, source=f"{layer}_settings",
                extra={"file_path": str(path)} if path is not None else {}))
            for note in (*result.errors, result.system_message):
                if note:
                    say(note, "yellow")


def _settings_stamps(root: Path) -> dict[str, tuple[Path, tuple[int, int] | None]]:
    """Return each settings file's (mtime, size), None when missing, by layer name."""
    from aimon_core.config import settings_paths

    stamps: dict[str, tuple[Path, tuple[int, int] | None]] = {}
    for layer, path in settings_paths(root):
        try:
            info = path.stat()
        except OSError:
            stamps[layer.value] = (path, None)
        else:
            stamps[layer.value] = (path, (info.st_mtime_ns, info.st_size))
    return stamps


async def open_on(assembly: Assembly, store: SessionStore, project_root: Path,
                  session_id: str | None) -> LiveSession:
    """Open (or resume) a session on a built runtime, with its approvals attached."""
    from aimon_cli._setup import attach_policy, make_tool_context
    from aimon_core.session import LiveSession

    context = make_tool_context(project_root, agent_name=assembly.runtime.agent.name,
                                env=assembly.settings.settings.env)
    live = await LiveSession.open(assembly.runtime, store, context, session_id=session_id)
    attach_policy(assembly.policy, live)
    return live


def with_session_agent(options: RuntimeOptions, store: SessionStore, session_id: str | None
                        ) -> RuntimeOptions:
    """Resume a session with the agent it was made with, unless --agent says otherwise."""
    from aimon_cli._store import agent_of_session

    if session_id is None or options.agent is not None:
        return options
    return replace(options, agent=agent_of_session(store, session_id))
