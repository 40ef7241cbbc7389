"""The lease, inbox, idempotency and signal contracts on Redis."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aimon_core.service import IdempotencyStore, SessionInbox, SignalBus
from aimon_core.session import SessionLeaseStore
from aimon_core.testing import IdempotencyStoreContract, SessionInboxContract, SignalBusContract
from aimon_core.testing._lease_contract import (
    ExpiringLeaseStoreContract,
    SessionLeaseStoreContract,
)


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

        return RedisIdempotencyStore(self.client)


class TestRedisSignalBus(_OnRedis, SignalBusContract):
    def make_store(self) -> SignalBus:
        from aimon_core.stores._redis import RedisSignalBus

        bus = RedisSignalBus(self.client)
        self.closers.append(bus)
        return bus
