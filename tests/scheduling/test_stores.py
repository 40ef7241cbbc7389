"""The routine store contract (`aimon_core.testing`), run on the embedded backends."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from aimon_core.scheduling import (
    MemoryRoutineStore,
    MemoryRunLog,
    RoutineStore,
    RunLog,
    SQLiteRoutineStore,
    SQLiteRunLog,
)
from aimon_core.testing import RoutineStoreContract


class TestMemoryRoutineStore(RoutineStoreContract):
    def setup_method(self) -> None:
        self.stores = (MemoryRoutineStore(), MemoryRunLog())

    def make_stores(self) -> tuple[RoutineStore, RunLog]:
        return self.stores


class TestSQLiteRoutineStore(RoutineStoreContract):
    def setup_method(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="aimon-routines-"))

    def teardown_method(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def make_stores(self) -> tuple[RoutineStore, RunLog]:
        database = self.folder / "service.sqlite3"
        return SQLiteRoutineStore(database), SQLiteRunLog(database)
