"""The record, lease, inbox, idempotency and signal contracts on Redis."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from aimon_core.llm import Message
from aimon_core.service import IdempotencyStore, SessionInbox, SignalBus
from aimon_core.session import (
    SessionLease,
    SessionLeaseStore,
    SessionLockedError,
    SessionRecordStore,
)
from aimon_core.testing import (
    ExpiringLeaseStoreContract,
    IdempotencyStoreContract,
    SessionInboxContract,
    SessionLeaseStoreContract,
    SessionRecordStoreContract,
    SignalBusContract,
)

from ._signals import check_catch_up


class _OnRedis:
    @pytest.fixture(autouse=True)
    def _redis(self, redis_url: str) -> Iterator[None]:
        from aimon_core.stores._redis import connect

        self.client = connect(redis_url)
        self.client.flushdb()
        self.closers: list[object] = []
        yield
        for store in self.closers:
            store.close()  # type: ignore[attr-defined]
        self.client.close()


class TestRedisLeases(_OnRedis, SessionLeaseStoreContract, ExpiringLeaseStoreContract):
    def make_store(self) -> SessionLeaseStore:
        from aimon_core.stores._redis import RedisSessionLeaseStore

        store = RedisSessionLeaseStore(self.client, ttl=self.ttl)
        self.closers.append(store)
        return store

    def make_dead(self) -> SessionLeaseStore:
        from aimon_core.stores._redis import RedisSessionLeaseStore

        return RedisSessionLeaseStore(self.client, ttl=self.ttl, renew_every=0)


class TestRedisInbox(_OnRedis, SessionInboxContract):
    def make_store(self) -> SessionInbox:
        from aimon_core.stores._redis import RedisInbox

        return RedisInbox(self.client)


class TestRedisIdempotencyStore(_OnRedis, IdempotencyStoreContract):
    def make_store(self) -> IdempotencyStore:
        from aimon_core.stores._redis import RedisIdempotencyStore

        return RedisIdempotencyStore(self.client, self.clock, hold_seconds=self.hold_seconds)


class TestRedisSignalBus(_OnRedis, SignalBusContract):
    def make_store(self) -> SignalBus:
        from aimon_core.stores._redis import RedisSignalBus

        bus = RedisSignalBus(self.client)
        self.closers.append(bus)
        return bus


class TestRedisSessionRecordStore(_OnRedis, SessionRecordStoreContract):
    def make_store(self) -> SessionRecordStore:
        from aimon_core.stores._redis_records import RedisSessionRecordStore

        return RedisSessionRecordStore(self.client, clock=self.clock)


def test_a_redis_lease_fences_out_the_previous_holder_in_redis_records(redis_url: str) -> None:
    from aimon_core.session import SessionRecord, StaleLeaseError
    from aimon_core.stores._redis import RedisSessionLeaseStore, connect
    from aimon_core.stores._redis_records import RedisSessionRecordStore

    client = connect(redis_url)
    client.flushdb()
    records = RedisSessionRecordStore(client)
    record = SessionRecord.new(project_root="/p", agent_ref="default")
    records.create(record)
    old = RedisSessionLeaseStore(client, ttl=0.3, renew_every=0).acquire(record.id, "A")
    records.append(record.id, [Message.user("from A")], lease=old)
    leases = RedisSessionLeaseStore(client, ttl=5)
    deadline = time.monotonic() + 10
    while True:  # A's lease (0.3 s, never renewed: A died) expires on Redis's clock
        try:
            newer = leases.acquire(record.id, "B")
            break
        except SessionLockedError:
            assert time.monotonic() < deadline, "A's lease never expired"
            time.sleep(0.02)
    # A never learns that it lost the lease (its lease object says nothing): Redis refuses.
    stale = SessionLease(session_id=record.id, holder="A", token=old.token,
                         release=lambda: None, newest_token=lambda: None)
    with pytest.raises(StaleLeaseError):
        records.append(record.id, [Message.user("late from A")], lease=stale)
    records.append(record.id, [Message.user("from B")], lease=newer)
    assert [m.text for m in records.load(record.id).transcript] == ["from A", "from B"]
    newer.release()
    leases.close()
    client.close()


def test_a_bus_whose_connection_drops_reconnects_and_delivers_what_it_missed(
        redis_url: str) -> None:
    from aimon_core.stores._redis import RedisSignalBus, connect

    client = connect(redis_url)
    bus, publisher = RedisSignalBus(client), RedisSignalBus(client)

    def missed_then_cut() -> None:
        # The stream keeps it; the PUBLISH went to nobody.
        client.xadd("aimon:signals", {"session": "s-drop", "signal": "interrupt"})
        client.client_kill_filter(_type="pubsub")

    try:
        check_catch_up(bus, publisher, missed_then_cut=missed_then_cut)
    finally:
        bus.close()
        publisher.close()
        client.close()
