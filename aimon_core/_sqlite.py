"""One SQLite file of the embedded stores (the service's inbox and keys, routines and runs).

It is opened per call: the calls are few, and no connection crosses threads (stores are
called through `asyncio.to_thread`). The schema is made on the first call.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path


class SQLiteFile:
    """A SQLite file and the schema its tables need, opened per call."""

    def __init__(self, path: Path, schema: str) -> None:
        self.path = Path(path)
        self._schema = schema
        self._ready = False

    @contextlib.contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """Yield a connection in autocommit mode (the schema made if need be); close it."""
        connection = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        try:
            if not self._ready:
                connection.executescript(self._schema)
                self._ready = True
            yield connection
        finally:
            connection.close()
