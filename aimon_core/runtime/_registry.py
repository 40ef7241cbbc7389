"""AgentRuntimeRegistry: one runtime per agent, built on first use, kept in step with settings."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from aimon_core.runtime._build import build_runtime, reload_extensions
from aimon_core.runtime._configure import load_runtime_settings
from aimon_core.runtime._parts import (
    NO_FLAGS,
    NO_PARTS,
    RuntimeFlags,
    RuntimeParts,
    RuntimeSetupError,
)

if TYPE_CHECKING:
    from aimon_core.config import LoadedSettings, SettingsError, TrustRequest
    from aimon_core.live import LiveSession
    from aimon_core.runtime._assembly import AgentAssembly

# Asks the person whether to trust a folder's risky settings; True: trust them.
TrustAsker = Callable[["TrustRequest"], Awaitable[bool]]
# Reports a line to the person: (text, style) — style is a hint ("dim", "red", "yellow").
Say = Callable[[str, str], None]
# How often the skill, agent and command folders are looked at for edits (a few dozen stat
# calls each time).
EXTENSIONS_POLL_SECONDS = 1.0


class AgentRuntimeRegistry:
    """The runtimes of one project: one per agent, built on first use, shared by sessions.

    The first `get` loads the settings, asks `trust` about a folder whose settings want to run
    code or widen permissions (print mode passes none: they stay held back), and builds the
    runtime off the event loop. `watch` applies settings edits to every runtime built; `aclose`
    closes them. Whoever made the registry closes it.
    """

    def __init__(self, project_root: Path, flags: RuntimeFlags = NO_FLAGS, *,
                 trust: TrustAsker | None = None, parts: RuntimeParts = NO_PARTS,
                 on_notice: Callable[[str], None] | None = None) -> None:
        self.project_root = Path(project_root).resolve()
        self.flags = flags
        self._trust = trust
        self._parts = parts
        self._on_notice = on_notice
        self._built: dict[str | None, asyncio.Task[AgentAssembly]] = {}
        self._declined: set[str] = set()  # config hashes the person chose not to trust
        # The settings files' stamps taken just before the first runtime read them: `watch`
        # starts from these, so an edit made before it watched is named when caught up.
        self._stamps: Stamps | None = None

    async def get(self, agent: str | None = None) -> AgentAssembly:
        """Return the runtime of `agent` (None: the flags' agent or the default one)."""
        key = agent if agent is not None else self.flags.agent
        building = self._built.get(key)
        if building is None or (building.done() and not building.cancelled()
                                and building.exception() is not None):
            flags = replace(self.flags, agent=key)
            building = asyncio.get_running_loop().create_task(self._build(flags))
            self._built[key] = building
        return await asyncio.shield(building)

    def built(self) -> list[AgentAssembly]:
        """Return the runtimes built so far."""
        return [task.result() for task in self._built.values()
                if task.done() and not task.cancelled() and task.exception() is None]

    def find(self, agent_name: str | None) -> AgentAssembly | None:
        """Return a built runtime whose agent is called `agent_name` (any, for None)."""
        return next((built for built in self.built()
                     if agent_name is None or built.runtime.agent.name == agent_name), None)

    async def _build(self, flags: RuntimeFlags) -> AgentAssembly:
        root = self.project_root
        stamps = await asyncio.to_thread(_settings_stamps, root)
        settings = await asyncio.to_thread(load_runtime_settings, root, flags,
                                           trust_all=self._parts.trust_all)
        if self._stamps is None:
            self._stamps = stamps
        settings = await self.settle_trust(settings)
        assembly = await asyncio.to_thread(build_runtime, root, flags=flags, settings=settings,
                                           parts=self._parts)
        if self._on_notice is not None:
            for notice in assembly.notices:
                self._on_notice(notice)
        return assembly

    async def settle_trust(self, settings: LoadedSettings) -> LoadedSettings:
        """Ask about a folder's untrusted settings; return them reloaded if trusted."""
        from aimon_core.config import TrustStore

        request = settings.pending_trust
        if request is None or self._trust is None or request.config_hash in self._declined:
            return settings
        if not await self._trust(request):
            self._declined.add(request.config_hash)
            return settings
        await asyncio.to_thread(TrustStore().trust, request.folder, request.items)
        return await asyncio.to_thread(load_runtime_settings, self.project_root, self.flags)

    async def reload(self, say: Say, live: LiveSession | None = None) -> None:
        """Load the settings again and apply them to the built runtimes (e.g. after trust)."""
        try:
            now = await asyncio.to_thread(load_runtime_settings, self.project_root, self.flags)
        except RuntimeSetupError as exc:
            say(f"Settings not reloaded (the previous ones stay in effect): {exc}", "red")
            return
        await self._reloaded(now, [], say, live)

    async def __aenter__(self) -> AgentRuntimeRegistry:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every runtime's model client (builds still running are cancelled)."""
        built, self._built = list(self._built.values()), {}
        for task in built:
            task.cancel()
        if built:
            await asyncio.wait(built)
        for task in built:
            if not task.cancelled() and task.exception() is None:
                await task.result().aclose()

    async def watch(self, say: Say, current: Callable[[], LiveSession | None] = lambda: None
                    ) -> None:
        """Apply every settings edit, and every skill, agent and command file edit, to the
        built runtimes until cancelled.

        `say` reports each reload; ConfigChange hooks fire bound to `current()`'s session.
        """
        extensions = asyncio.get_running_loop().create_task(self.watch_extensions(say))
        try:
            await self._watch_settings(say, current)
        finally:
            extensions.cancel()
            await asyncio.gather(extensions, return_exceptions=True)

    async def watch_extensions(self, say: Say, poll: float = EXTENSIONS_POLL_SECONDS, *,
                               ready: asyncio.Event | None = None) -> None:
        """Read the skills, subagents and commands again whenever their files change
        (`ready` is set once their state is known: later edits are seen)."""
        stamp = await asyncio.to_thread(extension_stamps, self.project_root)
        if ready is not None:
            ready.set()
        while True:
            await asyncio.sleep(poll)
            now = await asyncio.to_thread(extension_stamps, self.project_root)
            if now == stamp:
                continue
            stamp = now
            for assembly in self.built():
                before = _offered(assembly)
                notes = await asyncio.to_thread(reload_extensions, assembly)
                say(_reloaded_text(before, _offered(assembly)), "dim")
                for note in notes:
                    say(note, "yellow")

    async def _watch_settings(self, say: Say, current: Callable[[], LiveSession | None]
                              ) -> None:
        from aimon_core.config import TrustStore, watch_settings

        root = self.project_root
        changes: asyncio.Queue[LoadedSettings | SettingsError] = asyncio.Queue()
        stop, ready = asyncio.Event(), asyncio.Event()
        # Stamps older than what the runtimes read can only name too much, never too little:
        # a change caught up below is then named by its file, not guessed.
        files = _ChangedFiles(self._stamps if self._stamps is not None
                              else await asyncio.to_thread(_settings_stamps, root))
        watcher = asyncio.get_running_loop().create_task(watch_settings(
            root, changes.put_nowait, trust_store=TrustStore(),
            flags=self.flags.settings_layer(), stop_event=stop, ready=ready))
        try:
            await ready.wait()
            # An edit made after the runtimes were built and before the files were watched
            # sent no event: compare once now that every later edit will.
            await self._catch_up(changes)
            while True:
                change = await changes.get()
                changed = files.changed(await asyncio.to_thread(_settings_stamps, root))
                await self._reloaded(change, changed, say, current())
        finally:
            stop.set()
            await asyncio.gather(watcher, return_exceptions=True)

    async def _catch_up(self, changes: asyncio.Queue[LoadedSettings | SettingsError]) -> None:
        from aimon_core.config import SettingsError

        built = self.built()
        if not built:
            return
        try:
            now = await asyncio.to_thread(load_runtime_settings, self.project_root, self.flags)
        except RuntimeSetupError as exc:
            cause = exc.__context__
            if isinstance(cause, SettingsError):
                changes.put_nowait(cause)
            return
        if now != built[0].settings:
            changes.put_nowait(now)

    async def _reloaded(self, change: LoadedSettings | SettingsError,
                        changed: list[tuple[str, Path | None]], say: Say,
                        live: LiveSession | None) -> None:
        from aimon_core.config import SettingsError

        built = self.built()
        if not built:
            return
        if isinstance(change, SettingsError):
            say(f"Settings not reloaded (the previous ones stay in effect): {change}", "red")
            return
        try:
            change = await self.settle_trust(change)
        except RuntimeSetupError as exc:
            say(f"Settings not reloaded (the previous ones stay in effect): {exc}", "red")
            return
        first = self.find(live.runtime.agent.name if live is not None else None) or built[0]
        if change == first.settings:
            return
        notes = first.apply_settings(change, lambda exc: say(f"settings: {exc}", "red"))
        for other in built:
            if other is not first and change != other.settings:
                other.apply_settings(change, lambda exc: None)
        say("settings reloaded" + (f": {'; '.join(notes)}" if notes else ""), "dim")
        await _config_changed(first, live, changed, say)


async def _config_changed(assembly: AgentAssembly, live: LiveSession | None,
                          changed: list[tuple[str, Path | None]], say: Say) -> None:
    """Run the ConfigChange hooks, once per settings file that changed."""
    from aimon_core.hook import ConfigChangeInput, HookDispatcher, HookEvent

    event = HookEvent.ON_CONFIG_RELOAD
    hooks = live.hooks if live is not None else HookDispatcher(
        assembly.hooks, cwd=assembly.project_root,
        permission_mode=assembly.runtime.permission_mode)
    if not hooks.active(event):
        return
    for layer, path in changed or [("project", None)]:
        result = await hooks.fire(ConfigChangeInput(
            source=f"{layer}_settings", file_path=str(path) if path is not None else None))
        for note in (*result.errors, result.system_message):
            if note:
                say(note, "yellow")


Stamps = dict[str, tuple[Path, tuple[int, int] | None]]


class _ChangedFiles:
    """Which settings files a reload comes from, for its ConfigChange hooks.

    Those whose stamp moved since the last look. When none did, the edit was stamped with an
    earlier event (two quick edits: the first event's look saw the second's stamp, and named
    its files): this reload is the rest of that edit, so the same files are named again,
    not guessed (it was reported as `project_settings` with no file).
    """

    __slots__ = ("_last", "_stamps")

    def __init__(self, stamps: Stamps) -> None:
        self._stamps = stamps
        self._last: list[tuple[str, Path | None]] = []

    def changed(self, now: Stamps) -> list[tuple[str, Path | None]]:
        """Return the (layer, path) pairs this reload comes from, given the stamps `now`."""
        moved: list[tuple[str, Path | None]] = [
            (layer, path) for layer, (path, stamp) in now.items()
            if self._stamps.get(layer, (path, None))[1] != stamp]
        self._stamps = now
        if moved:
            self._last = moved
        return moved or self._last


def _settings_stamps(root: Path) -> Stamps:
    """Return each settings file's (mtime, size), None when missing, by layer name."""
    from aimon_core.config import settings_paths

    stamps: Stamps = {}
    for layer, path in settings_paths(root):
        try:
            info = path.stat()
        except OSError:
            stamps[layer.value] = (path, None)
        else:
            stamps[layer.value] = (path, (info.st_mtime_ns, info.st_size))
    return stamps


def extension_stamps(root: Path) -> frozenset[tuple[str, int, int]]:
    """Return (path, mtime, size) of every file and folder under the skill, agent and command
    folders of the project and the user (what a reload reads)."""
    from aimon_core.command import command_roots
    from aimon_core.config import claude_user_dir
    from aimon_core.session import user_config_dir

    folders = [base / name for base in (root / ".aimon", root / ".claude", user_config_dir())
               for name in ("skills", "agents")]
    folders += command_roots(root, claude_user_dir())
    found: set[tuple[str, int, int]] = set()
    for folder in folders:
        _stamp_tree(folder, found, depth=3)
    return frozenset(found)


def _stamp_tree(folder: Path, found: set[tuple[str, int, int]], depth: int) -> None:
    import os

    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                info = entry.stat(follow_symlinks=False)
                found.add((entry.path, info.st_mtime_ns, info.st_size))
                if depth and entry.is_dir(follow_symlinks=False):
                    _stamp_tree(Path(entry.path), found, depth - 1)
    except OSError:
        return


def _offered(assembly: AgentAssembly) -> frozenset[str]:
    """Return what a reload may change: the custom commands and the subagents, by name."""
    commands = assembly.commands.custom() if assembly.commands is not None else ()
    agents = assembly.extensions.agents.names() if assembly.extensions is not None else ()
    return frozenset({*(f"/{c.name}" for c in commands if not c.origin.startswith("MCP")),
                      *(f"subagent {name}" for name in agents)})


def _reloaded_text(before: frozenset[str], after: frozenset[str]) -> str:
    added, removed = sorted(after - before), sorted(before - after)
    changes = [*(f"+{name}" for name in added), *(f"-{name}" for name in removed)]
    return "skills, subagents and commands reloaded" + (
        f": {', '.join(changes)}" if changes else " (edited)")
