"""The contracts of the service's stores: the tests every backend passes (inbox, keys, signals).

Subclass one in a pytest module (its name starting with `Test`) and return a store from
`make_store`; every call must return a store on the same data (a new connection to the same
database), since the tests check what a second store sees:

    class TestMyInbox(SessionInboxContract):
        def make_store(self) -> SessionInbox:
            return MyInbox(self.database_url)

The checks are plain asserts; nothing here needs pytest.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from aimon_core.service import IdempotencyStore, SessionInbox, Signal, SignalBus


class SessionInboxContract:
    """What every SessionInbox does."""

    def make_store(self) -> SessionInbox:
        """Return an inbox on this test's data."""
        raise NotImplementedError

    def test_delivered_items_wait_in_order_per_session(self) -> None:
        inbox = self.make_store()
        first = inbox.deliver("s1", "one", sender="a")
        inbox.deliver("s2", "other")
        second = inbox.deliver("s1", "two")
        pending = self.make_store().pending("s1")
        assert [item.text for item in pending] == ["one", "two"]
        assert [item.id for item in pending] == [first.id, second.id]
        assert pending[0].sender == "a" and pending[0].session_id == "s1"
        assert set(self.make_store().sessions()) == {"s1", "s2"}

    def test_an_item_is_taken_once(self) -> None:
        inbox = self.make_store()
        item = inbox.deliver("s1", "one")
        assert self.make_store().take(item.id)
        assert not inbox.take(item.id)
        assert not self.make_store().take(item.id)
        assert inbox.pending("s1") == ()
        assert "s1" not in inbox.sessions()

    def test_racing_takers_take_an_item_once(self) -> None:
        inbox = self.make_store()
        item = inbox.deliver("s1", "one")
        won: list[bool] = []
        takers = [threading.Thread(target=lambda: won.append(self.make_store().take(item.id)))
                  for _ in range(8)]
        for taker in takers:
            taker.start()
        for taker in takers:
            taker.join()
        assert sorted(won) == [False] * 7 + [True]

    def test_an_unknown_item_is_not_taken(self) -> None:
        assert not self.make_store().take(987654)
        assert self.make_store().pending("nobody") == ()


class IdempotencyStoreContract:
    """What every IdempotencyStore does.

    `make_store` gives its store `clock=self.clock` and `hold_seconds=self.hold_seconds`:
    the tests move `self.now` to play the time a claimer takes or a crash leaves.
    """

    now = 1_000_000.0
    hold_seconds = 30.0

    def clock(self) -> float:
        """Return this test's time (seconds)."""
        return self.now

    def make_store(self) -> IdempotencyStore:
        """Return a store on this test's data."""
        raise NotImplementedError

    def test_a_finished_key_returns_its_finish_outcome_for_good(self) -> None:
        store = self.make_store()
        assert store.claim("s1", "k", {"state": "delivering"}) is None
        self.make_store().finish("s1", "k", {"state": "started"})
        assert store.claim("s1", "k", {}) == {"state": "started"}
        self.now += self.hold_seconds * 10
        assert self.make_store().claim("s1", "k", {}) == {"state": "started"}

    def test_a_claim_never_finished_is_lost_after_the_hold_time(self) -> None:
        store = self.make_store()
        assert store.claim("s1", "k", {"by": "A"}) is None  # A claims, then dies
        self.now += self.hold_seconds - 1
        assert self.make_store().claim("s1", "k", {"by": "B"}) == {"by": "A"}  # in flight
        self.now += 2
        assert self.make_store().claim("s1", "k", {"by": "B"}) is None  # A is gone: B's now
        assert store.claim("s1", "k", {"by": "C"}) == {"by": "B"}

    def test_the_first_claim_wins_and_later_ones_see_its_outcome(self) -> None:
        store = self.make_store()
        assert store.claim("s1", "k", {"n": 1}) is None
        assert self.make_store().claim("s1", "k", {"n": 2}) == {"n": 1}
        assert store.claim("s1", "k", {"n": 3}) == {"n": 1}

    def test_keys_are_per_scope(self) -> None:
        store = self.make_store()
        assert store.claim("s1", "k", {}) is None
        assert store.claim("s2", "k", {}) is None

    def test_racing_claims_let_one_through(self) -> None:
        firsts: list[bool] = []

        def claim(n: int) -> None:
            firsts.append(self.make_store().claim("s", "race", {"n": n}) is None)

        claimers = [threading.Thread(target=claim, args=(n,)) for n in range(8)]
        for claimer in claimers:
            claimer.start()
        for claimer in claimers:
            claimer.join()
        assert sorted(firsts) == [False] * 7 + [True]

    def test_forgotten_keys_can_be_claimed_again(self) -> None:
        store = self.make_store()
        assert store.claim("s1", "old", {}) is None
        assert store.forget_before(4102444800.0) >= 1  # 2100: every key so far
        assert self.make_store().claim("s1", "old", {"again": True}) is None


class SignalBusContract:
    """What every SignalBus does (the listeners may be on another node: a bus on one).

    A networked bus delivers on its own thread, after `publish` returns: the checks wait for
    the handler (at most `DELIVERY_SECONDS`), never a fixed time.
    """

    DELIVERY_SECONDS = 10.0

    def make_store(self) -> SignalBus:
        """Return the bus (one bus: publishers and listeners share it)."""
        raise NotImplementedError

    def listen(self, bus: SignalBus, session_id: str, heard: list[tuple[str, Signal]],
               arrived: threading.Semaphore) -> Callable[[], None]:
        """Subscribe a handler that records what it hears and releases `arrived`."""
        def handler(signal: Signal) -> None:
            heard.append((session_id, signal))
            arrived.release()
        return bus.subscribe(session_id, handler)

    def test_a_signal_reaches_the_sessions_listeners_only(self) -> None:
        bus = self.make_store()
        heard: list[tuple[str, Signal]] = []
        arrived = threading.Semaphore(0)
        stop_one = self.listen(bus, "s1", heard, arrived)
        self.listen(bus, "s2", heard, arrived)
        assert bus.publish("s1", Signal.INTERRUPT) == 1
        assert arrived.acquire(timeout=self.DELIVERY_SECONDS)
        assert heard == [("s1", Signal.INTERRUPT)]
        stop_one()
        assert bus.publish("s1", Signal.CLOSE) == 0
        # A signal to s2 sent after it arrives after it: s1's, had it been delivered, too.
        assert bus.publish("s2", Signal.CLOSE) == 1
        assert arrived.acquire(timeout=self.DELIVERY_SECONDS)
        assert heard == [("s1", Signal.INTERRUPT), ("s2", Signal.CLOSE)]

    def test_a_signal_sent_twice_is_heard_twice(self) -> None:
        # At least once each: a holder is told every signal, and takes one twice calmly.
        bus = self.make_store()
        heard: list[tuple[str, Signal]] = []
        arrived = threading.Semaphore(0)
        self.listen(bus, "s1", heard, arrived)
        bus.publish("s1", Signal.WAKE)
        bus.publish("s1", Signal.WAKE)
        assert arrived.acquire(timeout=self.DELIVERY_SECONDS)
        assert arrived.acquire(timeout=self.DELIVERY_SECONDS)
        assert heard == [("s1", Signal.WAKE), ("s1", Signal.WAKE)]

    def test_unsubscribing_twice_is_harmless(self) -> None:
        bus = self.make_store()
        stop = bus.subscribe("s1", lambda signal: None)
        stop()
        stop()
        assert bus.publish("s1", Signal.INTERRUPT) == 0

    def test_a_signal_reaches_a_listener_on_another_bus(self) -> None:
        listener, publisher = self.make_store(), self.make_store()
        heard: list[tuple[str, Signal]] = []
        arrived = threading.Semaphore(0)
        self.listen(listener, "s1", heard, arrived)
        assert publisher.publish("s1", Signal.INTERRUPT) >= 1
        assert arrived.acquire(timeout=self.DELIVERY_SECONDS)
        assert heard == [("s1", Signal.INTERRUPT)]
