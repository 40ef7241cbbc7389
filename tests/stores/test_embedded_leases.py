"""The SessionLeaseStore contract on the embedded lease stores (memory, flock files)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from aimon_core.session import FileSessionLeaseStore, MemorySessionLeaseStore, SessionLeaseStore
from aimon_core.testing import SessionLeaseStoreContract


class TestMemoryLeases(SessionLeaseStoreContract):
    def setup_method(self) -> None:
        self.store = MemorySessionLeaseStore()

    def make_store(self) -> SessionLeaseStore:
        return self.store


class TestFileLeases(SessionLeaseStoreContract):
    def setup_method(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="aimon-leases-"))

    def teardown_method(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def make_store(self) -> SessionLeaseStore:
        return FileSessionLeaseStore(self.folder)
