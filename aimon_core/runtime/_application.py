"""Application: the scope that lives from start to shutdown (the seeds' application scope).

One print-mode run is an application, the REPL is one, and the service will be one. It owns
what outlives every runtime and every session: the session store and the runtime registries
(one per project and flags; next, the scheduling engine and the session router). It is
created at start and closed at shutdown, by whoever created it, never by a runtime or a
session:

    async with Application() as app:
        assembly = await app.runtimes(project).get()
        async with await assembly.open_session(app.store) as live:
            await live.submit("...")
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from aimon_core.runtime._assembly import default_store
from aimon_core.runtime._parts import NO_FLAGS, NO_PARTS, RuntimeFlags, RuntimeParts
from aimon_core.runtime._registry import AgentRuntimeRegistry, TrustAsker

if TYPE_CHECKING:
    from collections.abc import Callable

    from aimon_core.session import SessionStore


class Application:
    """The application scope: the session store and the runtimes of every project.

    Args:
        store: where sessions are kept (None: the file store under aimon's data folder,
            made on first use).
    """

    def __init__(self, store: SessionStore | None = None) -> None:
        self._store = store
        self._registries: dict[tuple[Path, RuntimeFlags], AgentRuntimeRegistry] = {}
        self._closed = False

    @property
    def store(self) -> SessionStore:
        """Return the session store (the default one is made on first use)."""
        if self._store is None:
            self._store = default_store()
        return self._store

    def runtimes(self, project_root: Path, flags: RuntimeFlags = NO_FLAGS, *,
                 trust: TrustAsker | None = None, parts: RuntimeParts = NO_PARTS,
                 on_notice: Callable[[str], None] | None = None) -> AgentRuntimeRegistry:
        """Return the runtime registry of a project (one per project and flags; the first
        call makes it, with `trust`, `parts` and `on_notice`)."""
        if self._closed:
            raise RuntimeError("the application is closed")
        key = (Path(project_root).resolve(), flags)
        registry = self._registries.get(key)
        if registry is None:
            registry = AgentRuntimeRegistry(key[0], flags, trust=trust, parts=parts,
                                            on_notice=on_notice)
            self._registries[key] = registry
        return registry

    async def aclose(self) -> None:
        """Close every runtime registry (their runtimes, model clients, MCP servers)."""
        self._closed = True
        registries, self._registries = list(self._registries.values()), {}
        for registry in registries:
            await registry.aclose()

    async def __aenter__(self) -> Application:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()
