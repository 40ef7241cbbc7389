"""The lease, inbox, idempotency and signal contracts on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aimon_core.service import IdempotencyStore, SessionInbox, SignalBus
from aimon_core.session import SessionLeaseStore
from aimon_core.stores._pg import PostgresDatabase
from aimon_core.stores._pg_coordination import (
    PostgresIdempotencyStore,
    PostgresInbox,
    PostgresSessionLeaseStore,
    PostgresSignalBus,
)
from aimon_core.testing import (
    ExpiringLeaseStoreContract,
    IdempotencyStoreContract,
    SessionInboxContract,
    SessionLeaseStoreContract,
    SignalBusContract,
)

from ._signals import check_catch_up


@pytest.fixture(scope="module")
def database(postgres_url: str) -> Iterator[PostgresDatabase]:
    database = PostgresDatabase(postgres_url, max_connections=8)
    yield database
    database.close()


class _OnDatabase:
    @pytest.fixture(autouse=True)
    def _database(self, database: PostgresDatabase) -> Iterator[None]:
        with database.connection() as db:
            db.execute("TRUNCATE aimon_sessions, aimon_messages, aimon_snapshots, "
                       "aimon_leases, aimon_inbox, aimon_idempotency, aimon_listeners, "
                       "aimon_signals")
        self.database = database
        self.closers: list[PostgresSessionLeaseStore | PostgresSignalBus] = []
        yield
        for store in self.closers:
            store.close()


class TestPostgresLeases(_OnDatabase, SessionLeaseStoreContract, ExpiringLeaseStoreContract):
    def make_store(self) -> SessionLeaseStore:
        store = PostgresSessionLeaseStore(self.database, ttl=self.ttl)
        self.closers.append(store)
        return store

    def make_dead(self) -> SessionLeaseStore:
        return PostgresSessionLeaseStore(self.database, ttl=self.ttl, renew_every=0)


class TestPostgresInbox(_OnDatabase, SessionInboxContract):
    def make_store(self) -> SessionInbox:
        return PostgresInbox(self.database)


class TestPostgresIdempotencyStore(_OnDatabase, IdempotencyStoreContract):
    def make_store(self) -> IdempotencyStore:
        return PostgresIdempotencyStore(self.database, self.clock,
                                        hold_seconds=self.hold_seconds)


class TestPostgresSignalBus(_OnDatabase, SignalBusContract):
    def make_store(self) -> SignalBus:
        bus = PostgresSignalBus(self.database)
        self.closers.append(bus)
        return bus


def test_a_bus_whose_connection_drops_reconnects_and_delivers_what_it_missed(
        database: PostgresDatabase) -> None:
    bus, publisher = PostgresSignalBus(database), PostgresSignalBus(database)

    def missed_then_cut() -> None:
        with database.connection() as db:  # the row is kept; the NOTIFY went to nobody
            db.execute("INSERT INTO aimon_signals (session_id, signal) "
                       "VALUES ('s-drop', 'interrupt')")
            db.execute("SELECT pg_terminate_backend(%s)", (bus.listener_pid(),))

    try:
        check_catch_up(bus, publisher, missed_then_cut=missed_then_cut)
    finally:
        bus.close()
        publisher.close()
