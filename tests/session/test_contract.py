"""The SessionRecordStore contract (`aimon_core.testing`), run on the file and memory stores."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from aimon_core.session import FileSessionRecordStore, MemorySessionRecordStore, SessionRecordStore
from aimon_core.testing import SessionRecordStoreContract


class TestMemorySessionRecordStore(SessionRecordStoreContract):
    def setup_method(self) -> None:
        super().setup_method()
        self.store = MemorySessionRecordStore(clock=self.clock)

    def make_store(self) -> SessionRecordStore:
        return self.store


class TestFileSessionRecordStore(SessionRecordStoreContract):
    def setup_method(self) -> None:
        super().setup_method()
        self.folder = Path(tempfile.mkdtemp(prefix="aimon-contract-"))

    def teardown_method(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def make_store(self) -> SessionRecordStore:
        return FileSessionRecordStore(self.folder / "data", clock=self.clock)
