"""ContextSet: the providers of a runtime, read together at each turn."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from aimon_core.agent import CONTEXT_CAP, ContextBlock
from aimon_core.context._providers import (
    ContextProvider,
    DateProvider,
    GitProvider,
    InstructionsProvider,
    JobsProvider,
)
from aimon_core.tools import ToolContext

log = logging.getLogger(__name__)

BLOCK_CAP = 24_000
"""The most characters one provider's block may hold; the rest is cut, with a note."""


class ContextSet:
    """A runtime's context providers (the seeds' ContextProvider domain).

    `blocks` reads each provider off the event loop; a provider that fails is left out of
    this turn with a warning, never the turn itself.
    """

    def __init__(self, providers: Iterable[ContextProvider], *, block_cap: int = BLOCK_CAP
                 ) -> None:
        self.providers = tuple(providers)
        self.block_cap = min(block_cap, CONTEXT_CAP)

    async def blocks(self, ctx: ToolContext) -> tuple[ContextBlock, ...]:
        """Return each provider's block as of now, in provider order."""
        return await asyncio.to_thread(self._read, ctx)

    def _read(self, ctx: ToolContext) -> tuple[ContextBlock, ...]:
        found: list[ContextBlock] = []
        for provider in self.providers:
            try:
                text = provider.read(ctx)
            except Exception:  # one provider's fault costs its block, not the turn
                log.warning("context provider %r failed", provider.name, exc_info=True)
                continue
            if text is None or not text.strip():
                continue
            if len(text) > self.block_cap:
                text = (text[: self.block_cap] + f"\n[aimon: cut at {self.block_cap:,} "
                        "characters]")
            found.append(ContextBlock(name=provider.name, text=text.strip()))
        return tuple(found)


def default_providers(*extra: ContextProvider) -> tuple[ContextProvider, ...]:
    """Return the providers of a coding session: date, git, instructions, jobs, then `extra`."""
    return (DateProvider(), GitProvider(), InstructionsProvider(), JobsProvider(), *extra)
