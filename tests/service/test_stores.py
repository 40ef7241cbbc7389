"""The service's store contracts (`aimon_core.testing`), run on the embedded backends."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from aimon_core.service import (
    IdempotencyStore,
    LocalSignalBus,
    MemoryIdempotencyStore,
    MemoryInbox,
    SessionInbox,
    SignalBus,
    SQLiteIdempotencyStore,
    SQLiteInbox,
)
from aimon_core.testing import IdempotencyStoreContract, SessionInboxContract, SignalBusContract


class _Folder:
    def setup_method(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="aimon-service-"))

    def teardown_method(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


class TestMemoryInbox(SessionInboxContract):
    def setup_method(self) -> None:
        self.inbox = MemoryInbox()

    def make_store(self) -> SessionInbox:
        return self.inbox


class TestSQLiteInbox(_Folder, SessionInboxContract):
    def make_store(self) -> SessionInbox:
        return SQLiteInbox(self.folder / "service.sqlite3")


class TestMemoryIdempotencyStore(IdempotencyStoreContract):
    def setup_method(self) -> None:
        self.store = MemoryIdempotencyStore(self.clock, hold_seconds=self.hold_seconds)

    def make_store(self) -> IdempotencyStore:
        return self.store


class TestSQLiteIdempotencyStore(_Folder, IdempotencyStoreContract):
    def make_store(self) -> IdempotencyStore:
        return SQLiteIdempotencyStore(self.folder / "service.sqlite3", self.clock,
                                      hold_seconds=self.hold_seconds)


def test_a_key_claimed_before_done_existed_counts_as_done(tmp_path: Path) -> None:
    import sqlite3

    database = tmp_path / "service.sqlite3"
    old = sqlite3.connect(database)
    old.execute("CREATE TABLE idempotency (scope TEXT NOT NULL, key TEXT NOT NULL, "
                "claimed_at REAL NOT NULL, outcome TEXT NOT NULL, PRIMARY KEY (scope, key))")
    old.execute("INSERT INTO idempotency VALUES ('s', 'k', 1.0, '{\"n\": 1}')")
    old.commit()
    old.close()
    assert SQLiteIdempotencyStore(database).claim("s", "k", {}) == {"n": 1}


class TestLocalSignalBus(SignalBusContract):
    def setup_method(self) -> None:
        self.bus = LocalSignalBus()

    def make_store(self) -> SignalBus:
        return self.bus


def test_the_inbox_and_the_keys_share_one_database(tmp_path: Path) -> None:
    database = tmp_path / "service.sqlite3"
    item = SQLiteInbox(database).deliver("s", "hello")
    assert SQLiteIdempotencyStore(database).claim("s", "k", {}) is None
    assert SQLiteInbox(database).pending("s") == (item,)
