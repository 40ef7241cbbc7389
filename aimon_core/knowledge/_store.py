"""The knowledge store: passages of documents, searched by words (SQLite FTS5 by default).

The store is a Protocol with a conformance suite (`aimon_core.testing.KnowledgeStoreContract`),
so a backend on OpenSearch or PostgreSQL full-text search can serve the same tools.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

PASSAGE_LINES = 24
"""The most lines one passage holds; a heading or a blank line after 8 lines ends one too."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Document:
    """A source's whole text: a file's path (relative to the project) or a URL."""

    source: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Passage:
    """A piece of a document: its source, the line it starts on (1-based), and its text."""

    source: str
    line: int
    text: str


class KnowledgeStore(Protocol):
    """Keeps passages of documents and finds the best ones for a query."""

    def put(self, document: Document) -> int:
        """Index `document`, replacing what its source held; return its passage count."""
        ...

    def remove(self, source: str) -> bool:
        """Forget a source's passages; False when it had none."""
        ...

    def sources(self) -> tuple[str, ...]:
        """Return every indexed source, sorted."""
        ...

    def search(self, query: str, limit: int) -> tuple[Passage, ...]:
        """Return up to `limit` passages, best first, that match words of `query`."""
        ...


def passages(document: Document) -> Iterator[Passage]:
    """Split a document into passages: at headings, at blank lines once long, at a cap."""
    lines = document.text.splitlines()
    start, chunk = 0, []  # type: int, list[str]
    for number, line in enumerate(lines):
        heading = line.startswith("#") and chunk
        long_pause = not line.strip() and len(chunk) >= 8
        if heading or long_pause or len(chunk) >= PASSAGE_LINES:
            if any(c.strip() for c in chunk):
                yield Passage(source=document.source, line=start + 1, text="\n".join(chunk))
            start, chunk = number, []
        if chunk or line.strip():
            if not chunk:
                start = number
            chunk.append(line)
    if any(c.strip() for c in chunk):
        yield Passage(source=document.source, line=start + 1, text="\n".join(chunk))


def match_expression(query: str) -> str | None:
    """Return an FTS5 query that matches any word of `query` (each quoted), or None."""
    words = re.findall(r"\w+", query)
    return " OR ".join('"' + w + '"' for w in words) if words else None


class SQLiteKnowledgeStore:
    """Passages in an SQLite FTS5 table (porter stemming), ranked by bm25."""

    def __init__(self, path: Path | str) -> None:
        if isinstance(path, Path):
            from aimon_core._atomic import private_dir

            private_dir(path.parent)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._lock = threading.Lock()
        with self._lock, self._db:
            self._db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS passages USING fts5("
                             "source UNINDEXED, line UNINDEXED, text, "
                             "tokenize='porter unicode61')")

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    def put(self, document: Document) -> int:
        """Replace the source's passages with the document's, in one transaction."""
        found = list(passages(document))
        with self._lock, self._db:
            self._db.execute("DELETE FROM passages WHERE source = ?", (document.source,))
            self._db.executemany("INSERT INTO passages(source, line, text) VALUES (?, ?, ?)",
                                 [(p.source, p.line, p.text) for p in found])
        return len(found)

    def remove(self, source: str) -> bool:
        """Delete a source's passages."""
        with self._lock, self._db:
            done = self._db.execute("DELETE FROM passages WHERE source = ?", (source,))
        return done.rowcount > 0

    def sources(self) -> tuple[str, ...]:
        """Return the indexed sources."""
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT source FROM passages").fetchall()
        return tuple(sorted(str(r[0]) for r in rows))

    def search(self, query: str, limit: int) -> tuple[Passage, ...]:
        """Return the best passages for any word of `query`."""
        expression = match_expression(query)
        if expression is None or limit < 1:
            return ()
        with self._lock:
            rows = self._db.execute(
                "SELECT source, line, text FROM passages WHERE passages MATCH ? "
                "ORDER BY bm25(passages) LIMIT ?", (expression, limit)).fetchall()
        return tuple(Passage(source=str(s), line=int(n), text=str(t)) for s, n, t in rows)


def put_all(store: KnowledgeStore, documents: Iterable[Document]) -> int:
    """Index every document; return the number of passages."""
    return sum(store.put(d) for d in documents)
