"""The SessionLeaseStore contract: the tests every lease store passes, for any backend.

Subclass `SessionLeaseStoreContract` in a pytest module (its name starting with `Test`) and
return a lease store from `make_store`; every call must return a store on the same data (a
new connection to the same server), as two machines have. A store whose leases expire (a
networked one) also subclasses `ExpiringLeaseStoreContract` and returns from `make_dead` a
store whose holder has died: its leases are never renewed (`ttl` seconds at most).

The checks are plain asserts; nothing here needs pytest.
"""

from __future__ import annotations

import threading
import time

from aimon_core.session import (
    SessionId,
    SessionLease,
    SessionLeaseStore,
    SessionLockedError,
    StaleLeaseError,
    new_session_id,
)


def _session() -> SessionId:
    return new_session_id()


class SessionLeaseStoreContract:
    """What every SessionLeaseStore does."""

    def make_store(self) -> SessionLeaseStore:
        """Return a lease store on this test's data."""
        raise NotImplementedError

    def test_a_held_session_is_refused_naming_its_holder(self) -> None:
        session = _session()
        lease = self.make_store().acquire(session, "host A")
        try:
            self.make_store().acquire(session, "host B")
        except SessionLockedError as exc:
            assert exc.holder.startswith("host A"), exc.holder
        else:
            raise AssertionError("a second holder got the lease")
        lease.verify()
        lease.release()

    def test_a_released_session_is_taken_with_a_newer_token(self) -> None:
        session = _session()
        first = self.make_store().acquire(session, "host A")
        first.release()
        first.release()  # twice: harmless
        second = self.make_store().acquire(session, "host B")
        assert second.token > first.token
        second.verify()
        try:
            first.verify()
        except StaleLeaseError:
            pass
        else:
            raise AssertionError("a released lease still verifies")
        second.release()

    def test_leases_on_two_sessions_are_independent(self) -> None:
        one, two = _session(), _session()
        store = self.make_store()
        a, b = store.acquire(one, "me"), store.acquire(two, "me")
        a.verify()
        b.verify()
        a.release()
        b.release()

    def test_concurrent_claimers_one_wins(self) -> None:
        session = _session()
        won: list[int] = []
        refused: list[str] = []
        start = threading.Barrier(6)

        def claim(n: int) -> None:
            store = self.make_store()
            start.wait()
            try:
                won.append(store.acquire(session, f"claimer {n}").token)
            except SessionLockedError as exc:
                refused.append(exc.holder)

        claimers = [threading.Thread(target=claim, args=(n,)) for n in range(6)]
        for claimer in claimers:
            claimer.start()
        for claimer in claimers:
            claimer.join()
        assert len(won) == 1, won
        assert len(refused) == 5  # (a file lease may not name its winner yet at that moment)


class ExpiringLeaseStoreContract:
    """What a store whose leases expire does: a dead holder's session is taken over."""

    ttl = 0.5

    def make_store(self) -> SessionLeaseStore:
        """Return a lease store whose holder renews its leases."""
        raise NotImplementedError

    def make_dead(self) -> SessionLeaseStore:
        """Return a lease store that never renews (its holder died), with `ttl` leases."""
        raise NotImplementedError

    def take_over(self, session: SessionId, holder: str, deadline: float
                  ) -> tuple[SessionLease, float]:
        """Acquire `session` as soon as it is free (waiting for an expiry, never longer than
        `deadline` seconds); return (lease, seconds waited)."""
        store = self.make_store()
        start = time.monotonic()
        while True:
            try:
                return store.acquire(session, holder), time.monotonic() - start
            except SessionLockedError:
                if time.monotonic() - start > deadline:
                    raise
                time.sleep(self.ttl / 20)  # waiting for a server-side expiry: nothing to await

    def test_a_dead_holders_lease_expires_and_fences_it_out(self) -> None:
        session = _session()
        dead = self.make_dead().acquire(session, "host A")
        lease, waited = self.take_over(session, "host B", deadline=self.ttl * 20)
        assert waited > 0 or self.ttl == 0
        assert lease.token > dead.token
        lease.verify()
        try:
            dead.verify()
        except StaleLeaseError as exc:
            assert exc.current_token == lease.token
        else:
            raise AssertionError("the dead holder's lease still verifies")
        dead.release()  # the old holder coming back and letting go does not free B's lease
        lease.verify()
        try:
            self.make_store().acquire(session, "host C")
        except SessionLockedError:
            pass
        else:
            raise AssertionError("the old holder's release freed the new holder's lease")
        lease.release()

    def test_a_live_holder_keeps_its_lease_past_the_ttl(self) -> None:
        session = _session()
        store = self.make_store()
        lease = store.acquire(session, "host A")
        deadline = time.monotonic() + self.ttl * 2
        while time.monotonic() < deadline:
            try:
                other = self.make_store().acquire(session, "host B")
            except SessionLockedError:
                time.sleep(self.ttl / 10)
                continue
            other.release()
            raise AssertionError("a renewed lease expired")
        lease.verify()
        lease.release()
