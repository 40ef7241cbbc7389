"""Hot reload: watch the settings files and hand every new merged view (or error) to a callback."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aimon_core.config._layers import (
    CLAUDE_DIR,
    LOCAL_SETTINGS_FILE,
    PROJECT_DIR,
    SETTINGS_FILE,
    claude_user_dir,
    load_settings,
)
from aimon_core.config._settings import LoadedSettings, SettingsError
from aimon_core.config._trust import TrustStore, user_dir

log = logging.getLogger(__name__)

SettingsCallback = Callable[[LoadedSettings | SettingsError], None]

# The watcher thread wakes this often so that cancelling the task takes effect promptly.
_RUST_TIMEOUT_MS = 500


@dataclass(frozen=True, slots=True)
class _Target:
    """A folder that may hold settings files, and their names."""

    folder: Path
    names: frozenset[str]


@dataclass(frozen=True, slots=True)
class WatchPlan:
    """The folders to watch and the paths whose changes matter."""

    folders: tuple[Path, ...]
    files: frozenset[Path]
    # Folders on the way to a settings folder: their creation or removal changes the plan.
    chain: frozenset[Path]

    def accepts(self, _change: object, path: str) -> bool:
        """Tell whether a change of `path` concerns the settings (watchfiles' filter)."""
        changed = Path(path)
        return changed in self.files or changed in self.chain


def _targets(project_root: Path) -> tuple[_Target, ...]:
    return (
        _Target(user_dir().absolute(), frozenset({SETTINGS_FILE})),
        _Target(project_root / PROJECT_DIR, frozenset({SETTINGS_FILE, LOCAL_SETTINGS_FILE})),
        _Target(claude_user_dir().absolute(), frozenset({SETTINGS_FILE})),
        _Target(project_root / CLAUDE_DIR, frozenset({SETTINGS_FILE, LOCAL_SETTINGS_FILE})),
    )


def watch_plan(project_root: Path | str) -> WatchPlan:
    """Plan the watch: each settings folder that exists and its nearest existing ancestor.

    Watching the ancestor (non-recursively) notices a settings folder being created, removed
    or renamed; the watch is then planned again.
    """
    folders: dict[Path, None] = {}
    files: set[Path] = set()
    chain: set[Path] = set()
    for target in _targets(_real(Path(project_root).absolute())):
        folder = _real(target.folder)
        files.update(folder / name for name in target.names)
        ancestor = folder.parent
        chain.add(folder)
        while not ancestor.is_dir() and ancestor != ancestor.parent:
            chain.add(ancestor)
            ancestor = ancestor.parent
        folders[ancestor] = None
        if folder.is_dir():
            folders[folder] = None
    return WatchPlan(tuple(folders), frozenset(files), frozenset(chain))


def _real(path: Path) -> Path:
    # Resolve symlinks of the part that exists, so paths compare equal to the watcher's.
    return path.resolve()


class _StopFlag:
    """The stop event handed to watchfiles: set by the caller's event, or by us on restart."""

    def __init__(self, outer: asyncio.Event | None) -> None:
        self._outer = outer
        self._stopped = False

    def is_set(self) -> bool:
        return self._stopped or (self._outer is not None and self._outer.is_set())

    def set(self) -> None:
        self._stopped = True


async def watch_settings(
    project_root: Path | str,
    on_change: SettingsCallback,
    *,
    trust_store: TrustStore,
    flags: Mapping[str, Any] | None = None,
    trust_all: bool = False,
    stop_event: asyncio.Event | None = None,
    debounce_ms: int = 200,
    ready: asyncio.Event | None = None,
) -> None:
    """Reload the settings whenever a settings file changes, until `stop_event` is set.

    `on_change` gets the new LoadedSettings, or the SettingsError of a broken edit (keep the
    previous settings then); a reload equal to the previous one is not reported. `flags` and
    `trust_all` are passed to every reload. `ready` is set once the files are watched.
    """
    from watchfiles import awatch

    root = project_root
    last: LoadedSettings | SettingsError | None = None
    replanned = False
    while stop_event is None or not stop_event.is_set():
        plan = await asyncio.to_thread(watch_plan, root)
        if replanned:
            last = await _reload(root, on_change, last, trust_store, flags, trust_all)
        stop = _StopFlag(stop_event)
        changes = awatch(
            *plan.folders, watch_filter=plan.accepts, recursive=False, stop_event=stop,
            step=debounce_ms, debounce=max(10 * debounce_ms, 1000), rust_timeout=_RUST_TIMEOUT_MS,
            yield_on_timeout=True,
        )
        async with contextlib.aclosing(changes):
            if ready is not None:
                # awatch starts watching before its first await, so the folders are watched
                # by the time anyone waiting on `ready` runs.
                ready.set()
            replanned = False
            async for batch in changes:
                if not batch:
                    # A quiet spell: a settings folder created while the watch was starting
                    # sent no event, so compare the plan instead.
                    if await asyncio.to_thread(watch_plan, root) != plan:
                        replanned = True
                        break
                    continue
                if any(Path(path) in plan.chain for _, path in batch):
                    replanned = True
                    break
                last = await _reload(root, on_change, last, trust_store, flags, trust_all)


async def _reload(
    root: Path | str,
    on_change: SettingsCallback,
    last: LoadedSettings | SettingsError | None,
    trust_store: TrustStore,
    flags: Mapping[str, Any] | None,
    trust_all: bool,
) -> LoadedSettings | SettingsError | None:
    try:
        result: LoadedSettings | SettingsError = await asyncio.to_thread(
            load_settings, root, flags=flags, trust_store=trust_store, trust_all=trust_all
        )
    except SettingsError as error:
        result = error
    if isinstance(result, LoadedSettings) and result == last:
        return last
    try:
        on_change(result)
    except Exception:
        # The watch outlives a faulty callback: log it and keep watching.
        log.exception("the settings reload callback failed")
    return result
