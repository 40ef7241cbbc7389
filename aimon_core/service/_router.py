"""SessionRouter: a request for a session goes to the service that holds its lease.

With a shared store (PostgreSQL, Redis) several services, on several machines, reach the
same sessions. A request for a session this service does not host:

- is served here when the session is free (no live lease: never held, released, or its
  holder died and the lease expired): this service claims it and hosts it;
- is routed to the holder when another service holds it, over the signal bus (no new
  network protocol): `send` puts the text in the shared inbox and signals WAKE, `stop`
  signals INTERRUPT. When no holder hears the signal (it died, its lease has not expired
  yet), the router takes the session over as soon as the lease expires, and the inbox item
  waiting there becomes its next turn: nothing sent is lost.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aimon_core.service._stores import Signal

if TYPE_CHECKING:
    from aimon_core.runtime import RuntimeFlags
    from aimon_core.service._hosted import HostedSession
    from aimon_core.service._server import Service

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True, kw_only=True)
class HeldElsewhere:
    """A session another service holds: who, as its lease names it."""

    session_id: str
    holder: str


class SessionRouter:
    """Finds where a session lives: hosted here, free to claim, or held by another service."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self._takeovers: dict[str, asyncio.Task[None]] = {}

    async def open(self, session_id: str, *, project_root: str, flags: RuntimeFlags,
                   unattended: bool = False) -> HostedSession | HeldElsewhere:
        """Return the hosted session (claiming it if it is free), or who holds it."""
        from aimon_core.session import SessionLockedError

        hosted = self.service.sessions.get(session_id)
        if hosted is not None:
            return hosted
        try:
            return await self.service.host(project_root=project_root, flags=flags,
                                           session_id=session_id, unattended=unattended)
        except SessionLockedError as exc:
            return HeldElsewhere(session_id=session_id, holder=exc.holder)

    async def send(self, held: HeldElsewhere, text: str, *, sender: str, project_root: str,
                   flags: RuntimeFlags) -> int:
        """Deliver `text` to the holder's inbox and wake it; return how many heard it.

        Heard by none: the holder is gone; the session is taken over here once its lease
        expires, and the text runs then.
        """
        stores = self.service.stores
        await asyncio.to_thread(stores.inbox.deliver, held.session_id, text, sender=sender)
        heard = await asyncio.to_thread(stores.signals.publish, held.session_id, Signal.WAKE)
        if heard == 0:
            self.take_over_later(held.session_id, project_root=project_root, flags=flags)
        return heard

    async def stop(self, held: HeldElsewhere) -> int:
        """Ask the holder to interrupt the session's turn; return how many heard it."""
        return await asyncio.to_thread(self.service.stores.signals.publish, held.session_id,
                                       Signal.INTERRUPT)

    def take_over_later(self, session_id: str, *, project_root: str, flags: RuntimeFlags,
                        unattended: bool = False) -> None:
        """Claim the session as soon as its holder's lease expires (in the background)."""
        if session_id in self._takeovers:
            return
        task = asyncio.get_running_loop().create_task(
            self._take_over(session_id, project_root, flags, unattended),
            name=f"take over {session_id}")
        self._takeovers[session_id] = task
        task.add_done_callback(lambda _: self._took_over(session_id))
        self.service._changed()  # not idle while it waits

    def _took_over(self, session_id: str) -> None:
        self._takeovers.pop(session_id, None)
        self.service._changed()  # idle again, perhaps

    async def _take_over(self, session_id: str, project_root: str, flags: RuntimeFlags,
                         unattended: bool) -> None:
        # The lease store says how long a lease lives; a dead holder's is gone by then.
        ttl = float(getattr(self.service.app.store.leases, "ttl", 15.0))
        deadline = time.monotonic() + ttl * 2 + 5
        while time.monotonic() < deadline:
            try:
                found = await self.open(session_id, project_root=project_root, flags=flags,
                                        unattended=unattended)
            except Exception as exc:
                log.warning("taking over %s failed: %s", session_id, exc)
                return
            if not isinstance(found, HeldElsewhere):
                log.info("took over %s from a holder that is gone", session_id)
                return
            # The holder's lease expires on the store's clock: look again a few times a ttl.
            await asyncio.sleep(max(ttl / 4, 0.05))
        log.warning("%s is still held by another service: not taken over", session_id)

    def waiting(self) -> bool:
        """Tell whether a session is waiting to be taken over (the service stays for it)."""
        return bool(self._takeovers)

    async def aclose(self) -> None:
        """Stop waiting to take sessions over."""
        tasks = list(self._takeovers.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
