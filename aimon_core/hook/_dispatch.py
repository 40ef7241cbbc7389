"""HookDispatcher: the one place that fires hook events, bound to where they happen."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aimon_core.hook._lifecycle import HookEvent
from aimon_core.hook._registry import HookNotice, HookRegistry
from aimon_core.hook._result import HookResult

if TYPE_CHECKING:
    from aimon_core.hook._events import HookEventInput, HookInput


def _no_mode() -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class HookDispatcher:
    """Fires hook events with the facts every hook input carries.

    Bound to a session id, a working directory, a transcript path and the permission mode
    (read when each event fires, since `/mode` may change it between two events). The executor,
    the live session, the permission gate and settings reload all fire through one of these,
    so no hook input ever misses a field.
    """

    registry: HookRegistry | None
    _: KW_ONLY
    session_id: str = ""
    cwd: Path = field(default_factory=Path.cwd)
    transcript_path: str | None = None
    permission_mode: Callable[[], str | None] = _no_mode
    # Hears status messages of running hooks and failures of async ones.
    notice: HookNotice | None = None

    def active(self, event: HookEvent, subject: str | None = None) -> bool:
        """Tell whether any hook runs for `event` (and `subject`, for matchers)."""
        return self.registry is not None and self.registry.has_hooks(event, subject)

    def input(self, data: HookEventInput) -> HookInput:
        """Return the whole hook input of an event: the bound facts and its own `data`."""
        from aimon_core.hook._events import HookInput

        return HookInput(data=data, session_id=self.session_id, cwd=self.cwd,
                         transcript_path=self.transcript_path,
                         permission_mode=self.permission_mode())

    async def fire(self, data: HookEventInput, *, env: Mapping[str, str] | None = None
                   ) -> HookResult:
        """Run the hooks of `data`'s event and return their combined result (empty if none).

        `env` is added to the environment of command hooks (`CLAUDE_ENV_FILE`).
        """
        if self.registry is None:
            return HookResult()
        return await self.registry.dispatch(data.event, self.input(data), notice=self.notice,
                                            env=env)

    def bound(self, **changes: Any) -> HookDispatcher:
        """Return a copy bound to other facts (e.g. another session id)."""
        return replace(self, **changes)
