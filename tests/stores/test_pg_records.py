"""The SessionRecordStore contract on PostgreSQL, and what only a database store does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from aimon_core.session import SessionRecordStore
from aimon_core.stores._pg import PostgresDatabase
from aimon_core.stores._pg_records import PostgresSessionRecordStore
from aimon_core.testing import SessionRecordStoreContract


@pytest.fixture(scope="module")
def database(postgres_url: str) -> Iterator[PostgresDatabase]:
    database = PostgresDatabase(postgres_url)
    yield database
    database.close()


def empty(database: PostgresDatabase) -> None:
    """Remove every row aimon keeps (each test starts on an empty database)."""
    with database.connection() as db:
        db.execute("TRUNCATE aimon_sessions, aimon_messages, aimon_snapshots, aimon_leases, "
                   "aimon_inbox, aimon_idempotency, aimon_listeners, aimon_signals")


class TestPostgresSessionRecordStore(SessionRecordStoreContract):
    @pytest.fixture(autouse=True)
    def _database(self, database: PostgresDatabase) -> None:
        empty(database)
        self.database = database

    def make_store(self) -> SessionRecordStore:
        return PostgresSessionRecordStore(self.database, clock=self.clock)
