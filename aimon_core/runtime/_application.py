"""Application: the scope that lives from start to shutdown (the seeds' application scope).

One print-mode run is an application, the REPL is one, and the service will be one. It owns
what outlives every runtime and every session: the session store, the workflow run store and
task slots, and the runtime registries (one per project and flags; next, the scheduling engine
and the session router). It is
created at start and closed at shutdown, by whoever created it, never by a runtime or a
session:

    async with Application() as app:
        assembly = await app.runtimes(project).get()
        async with await assembly.open_session(app.store) as live:
            await live.submit("...")
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from aimon_core.runtime._assembly import default_store
from aimon_core.runtime._parts import NO_FLAGS, NO_PARTS, RuntimeFlags, RuntimeParts
from aimon_core.runtime._registry import AgentRuntimeRegistry, TrustAsker
from aimon_core.runtime._workflows import WorkflowScope

if TYPE_CHECKING:
    from collections.abc import Callable

    from aimon_core.session import SessionStore
    from aimon_core.workflow import RunStore


class Application:
    """The application scope: the session and run stores, and the runtimes of every project.

    Args:
        store: where sessions are kept (None: the file store under aimon's data folder,
            made on first use).
        run_store: where workflow runs are kept (None: the file store beside the sessions).
        max_workflow_tasks: how many workflow tasks may run at once, across all runs.
    """

    def __init__(self, store: SessionStore | None = None, *, run_store: RunStore | None = None,
                 max_workflow_tasks: int = 4) -> None:
        self._store = store
        self._registries: dict[tuple[Path, RuntimeFlags], AgentRuntimeRegistry] = {}
        self._closed = False
        # Every runtime of the application keeps its runs here and shares the task slots.
        self.workflows = WorkflowScope(run_store, max_tasks=max_workflow_tasks)

    @property
    def run_store(self) -> RunStore:
        """Return the workflow run store (the default one is made on first use)."""
        return self.workflows.store

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
        if parts.workflows is None:
            parts = replace(parts, workflows=self.workflows)
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
