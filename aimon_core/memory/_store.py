"""Observations: what the model or the user proposed to remember, and the file store.

Every store call names an owner (`MemoryOwner`: a principal and a project, an agent), never
a bare string id (the seeds' rule for multi-tenant stores). The file store keeps one Markdown
file per scope in aimon's data folder, readable and diffable: one observation a line,
`- [accepted] text <!-- id=... source=... at=... -->`.
"""

from __future__ import annotations

import datetime as dt
import enum
import fcntl
import os
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol


class MemoryScope(enum.Enum):
    """Whom an observation is for: this project, this user everywhere, this agent."""

    PROJECT = "project"
    USER = "user"
    AGENT = "agent"


class MemoryStatus(enum.Enum):
    """`proposed` waits in the review inbox; only `accepted` reaches the model."""

    PROPOSED = "proposed"
    ACCEPTED = "accepted"


class MemorySource(enum.Enum):
    """Who proposed it: the model (Remember), the user (`# text`, /memory add), extraction."""

    MODEL = "model"
    USER = "user"
    EXTRACTED = "extracted"


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryOwner:
    """Whose memory: a principal (the person), the project (its key) and the agent."""

    principal: str
    project: str
    agent: str

    def __post_init__(self) -> None:
        for name in ("principal", "project", "agent"):
            value = getattr(self, name)
            if not value or not _SAFE.fullmatch(value):
                raise ValueError(f"memory owner: bad {name} {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Observation:
    """One thing to remember."""

    id: str
    text: str
    scope: MemoryScope
    status: MemoryStatus
    source: MemorySource
    created: str


class ObservationStore(Protocol):
    """Keeps observations per owner and scope (the seeds' ObservationStore)."""

    def list(self, owner: MemoryOwner) -> tuple[Observation, ...]:
        """Return the owner's observations of every scope, oldest first."""
        ...

    def add(self, owner: MemoryOwner, text: str, *, scope: MemoryScope, status: MemoryStatus,
            source: MemorySource) -> Observation:
        """Store a new observation and return it."""
        ...

    def update(self, owner: MemoryOwner, observation_id: str, *, text: str | None = None,
               status: MemoryStatus | None = None) -> Observation | None:
        """Change an observation's text or status; None when the owner has no such id."""
        ...

    def remove(self, owner: MemoryOwner, observation_id: str) -> bool:
        """Forget an observation; False when the owner has no such id."""
        ...


# A folder or file name of its own: no separator, and no leading dot (`..`, hidden files).
_SAFE = re.compile(r"(?!\.)[A-Za-z0-9_.@-]{1,160}")
_LINE = re.compile(r"- \[(proposed|accepted)\] (.*) <!-- id=([0-9a-f]+) source=(\w+) "
                   r"at=(\S+) -->")
_HEADER = ("# aimon memory ({scope})\n\n"
           "One observation a line; edit with `aimon memory` or by hand.\n\n")


class FileObservationStore:
    """Observations as Markdown files under `base` (aimon's data folder `memory/`)."""

    def __init__(self, base: Path, *, now: type[dt.datetime] = dt.datetime) -> None:
        self.base = base
        self._now = now

    def path(self, owner: MemoryOwner, scope: MemoryScope) -> Path:
        """Return the file of one owner's scope."""
        root = self.base / owner.principal
        match scope:
            case MemoryScope.USER:
                return root / "user.md"
            case MemoryScope.PROJECT:
                return root / "projects" / owner.project / "project.md"
            case MemoryScope.AGENT:
                return root / "agents" / f"{owner.agent}.md"

    def list(self, owner: MemoryOwner) -> tuple[Observation, ...]:
        """Return the owner's observations: user, then agent, then project scope."""
        found: list[Observation] = []
        for scope in (MemoryScope.USER, MemoryScope.AGENT, MemoryScope.PROJECT):
            found.extend(self._read(self.path(owner, scope), scope))
        return tuple(found)

    def add(self, owner: MemoryOwner, text: str, *, scope: MemoryScope, status: MemoryStatus,
            source: MemorySource) -> Observation:
        """Append an observation to its scope's file."""
        clean = " ".join(text.split())
        if not clean:
            raise ValueError("nothing to remember: the text is empty")
        entry = Observation(id=secrets.token_hex(4), text=clean, scope=scope, status=status,
                            source=source, created=self._now.now(dt.UTC).strftime(
                                "%Y-%m-%dT%H:%M:%SZ"))
        path = self.path(owner, scope)
        with self._locked(path):
            self._write(path, scope, (*self._read(path, scope), entry))
        return entry

    def update(self, owner: MemoryOwner, observation_id: str, *, text: str | None = None,
               status: MemoryStatus | None = None) -> Observation | None:
        """Change one observation in place."""
        for scope in MemoryScope:
            path = self.path(owner, scope)
            with self._locked(path):
                entries = list(self._read(path, scope))
                for index, entry in enumerate(entries):
                    if entry.id == observation_id:
                        changed = replace(entry, text=" ".join((text or entry.text).split()),
                                          status=status or entry.status)
                        entries[index] = changed
                        self._write(path, scope, tuple(entries))
                        return changed
        return None

    def remove(self, owner: MemoryOwner, observation_id: str) -> bool:
        """Delete one observation from its file."""
        for scope in MemoryScope:
            path = self.path(owner, scope)
            with self._locked(path):
                entries = self._read(path, scope)
                kept = tuple(e for e in entries if e.id != observation_id)
                if len(kept) != len(entries):
                    self._write(path, scope, kept)
                    return True
        return False

    def _read(self, path: Path, scope: MemoryScope) -> tuple[Observation, ...]:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return ()
        found = []
        for line in text.splitlines():
            match = _LINE.fullmatch(line.strip())
            if match is None:
                continue
            status, body, ident, source, at = match.groups()
            try:
                origin = MemorySource(source)
            except ValueError:
                continue
            found.append(Observation(id=ident, text=body, scope=scope,
                                     status=MemoryStatus(status), source=origin, created=at))
        return tuple(found)

    def _write(self, path: Path, scope: MemoryScope, entries: tuple[Observation, ...]) -> None:
        from aimon_core._atomic import write_atomic

        lines = [f"- [{e.status.value}] {e.text.replace('-->', '- ->')} <!-- id={e.id} "
                 f"source={e.source.value} at={e.created} -->" for e in entries]
        data = _HEADER.format(scope=scope.value) + "\n".join(lines) + ("\n" if lines else "")
        write_atomic(path, data.encode("utf-8"))

    @contextmanager
    def _locked(self, path: Path) -> Iterator[None]:
        """Hold the scope's lock file: two sessions never lose each other's edits."""
        from aimon_core._atomic import private_dir

        private_dir(path.parent)
        fd = os.open(path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)
