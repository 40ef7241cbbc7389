"""MemoryBook: one owner's memory, and what the model and the user do with it.

Accepted observations that fit (`PROMPT_CAP` characters) are in every prompt, as the
`memory` context block; the model finds the rest with MemorySearch (SQLite FTS5, ranked by
bm25). The model proposes with Remember; a proposal waits in the review inbox until the
user accepts it (`/memory accept ID`, `aimon memory accept ID`).
"""

from __future__ import annotations

import getpass
import os
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aimon_core.memory._store import (
    MemoryOwner,
    MemoryScope,
    MemorySource,
    MemoryStatus,
    Observation,
    ObservationStore,
)

PROMPT_CAP = 6_000
"""The most characters of accepted memory sent in every prompt; the rest is searched."""


def owner_for(project_root: Path, agent: str, principal: str | None = None) -> MemoryOwner:
    """Return the owner of a project's memory for the person running aimon."""
    from aimon_core.session import project_key

    if principal is None:
        try:
            principal = getpass.getuser()
        except (OSError, KeyError):  # no name for this uid (a container): still one person
            principal = f"uid-{os.getuid()}"
    return MemoryOwner(principal=_name(principal, "user"),
                       project=project_key(str(project_root)), agent=_name(agent, "default"))


def _name(text: str, default: str) -> str:
    """Return `text` as a safe file name: other characters and leading dots become dashes."""
    safe = re.sub(r"[^A-Za-z0-9_.@-]", "-", text)
    return re.sub(r"^\.", "-", safe) or default


def default_store() -> ObservationStore:
    """Return the file store in aimon's data folder (`memory/`)."""
    from aimon_core.memory._store import FileObservationStore
    from aimon_core.session import user_data_dir

    return FileObservationStore(user_data_dir() / "memory")


@dataclass(frozen=True, slots=True)
class MemoryBook:
    """One owner's memory in one store."""

    store: ObservationStore
    owner: MemoryOwner

    def accepted(self) -> tuple[Observation, ...]:
        """Return the observations the model may use."""
        return tuple(o for o in self.store.list(self.owner) if o.status is MemoryStatus.ACCEPTED)

    def inbox(self) -> tuple[Observation, ...]:
        """Return the proposals waiting for the user."""
        return tuple(o for o in self.store.list(self.owner) if o.status is MemoryStatus.PROPOSED)

    def propose(self, text: str, scope: MemoryScope, source: MemorySource) -> Observation:
        """Store a proposal (the model's, or one extracted): unused until accepted."""
        return self.store.add(self.owner, text, scope=scope, status=MemoryStatus.PROPOSED,
                              source=source)

    def remember(self, text: str, scope: MemoryScope = MemoryScope.PROJECT) -> Observation:
        """Store what the user said to remember: accepted at once."""
        return self.store.add(self.owner, text, scope=scope, status=MemoryStatus.ACCEPTED,
                              source=MemorySource.USER)

    def accept(self, observation_id: str) -> Observation | None:
        """Accept a proposal; None when there is no such id."""
        return self.store.update(self.owner, observation_id, status=MemoryStatus.ACCEPTED)

    def prompt_text(self, cap: int = PROMPT_CAP) -> str | None:
        """Return the accepted memory that fits in `cap` characters, newest kept first."""
        lines: list[str] = []
        used = 0
        left_out = 0
        for entry in reversed(self.accepted()):
            line = f"- ({entry.scope.value}) {entry.text}"
            if used + len(line) > cap:
                left_out += 1
                continue
            lines.insert(0, line)
            used += len(line) + 1
        if not lines and not left_out:
            return None
        more = (f"\n({left_out} more remembered; find them with MemorySearch)" if left_out
                else "")
        return "What the user asked you to remember (follow it):\n" + "\n".join(lines) + more

    def search(self, query: str, limit: int = 10) -> tuple[Observation, ...]:
        """Return the accepted observations that best match `query` (bm25)."""
        return rank(self.accepted(), query, limit)


def rank(entries: Sequence[Observation], query: str, limit: int) -> tuple[Observation, ...]:
    """Rank `entries` for `query` with an in-memory SQLite FTS5 index."""
    words = re.findall(r"\w+", query)
    if not words or not entries:
        return ()
    db = sqlite3.connect(":memory:")
    try:
        db.execute("CREATE VIRTUAL TABLE m USING fts5(text, tokenize='porter unicode61')")
        db.executemany("INSERT INTO m(rowid, text) VALUES (?, ?)",
                       [(i, e.text) for i, e in enumerate(entries)])
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = db.execute("SELECT rowid FROM m WHERE m MATCH ? ORDER BY bm25(m) LIMIT ?",
                          (match, max(1, limit))).fetchall()
    finally:
        db.close()
    return tuple(entries[row[0]] for row in rows)
