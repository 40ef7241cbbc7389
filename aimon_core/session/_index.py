"""The session index: a cache of listing lines, so listing does not read every transcript.

Each entry remembers the size, mtime and inode its transcript had when it was summarized; an
entry whose file no longer matches is re-read. A missing or corrupt index is rebuilt from the
files, so the index can never make listing fail or lie.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from aimon_core._atomic import private_dir, write_atomic
from aimon_core.session._errors import SessionCodecError
from aimon_core.session._ids import SessionId, is_session_id
from aimon_core.session._record import SessionSummary

log = logging.getLogger(__name__)

INDEX_VERSION = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexEntry:
    """The listing line of one transcript file, and the file state it was taken from."""

    summary: SessionSummary
    size: int
    mtime_ns: int
    inode: int

    def matches(self, stat: os.stat_result) -> bool:
        """Return whether the file is unchanged since this entry was made."""
        return (self.size, self.mtime_ns, self.inode) == (
            stat.st_size,
            stat.st_mtime_ns,
            stat.st_ino,
        )


def read_index(path: Path) -> dict[str, IndexEntry] | None:
    """Return the entries by file (`<project key>/<id>.jsonl`), or None if missing or corrupt."""
    try:
        obj = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("session index %s is unreadable (%s); rebuilding it", path, exc)
        return None
    if not isinstance(obj, dict) or obj.get("version") != INDEX_VERSION:
        log.warning("session index %s has an unknown shape; rebuilding it", path)
        return None
    entries = obj.get("sessions")
    if not isinstance(entries, dict):
        return None
    result: dict[str, IndexEntry] = {}
    for file, raw in entries.items():
        try:
            result[file] = _entry_from_json(raw)
        except (SessionCodecError, KeyError, TypeError, ValueError):
            continue  # that file is summarized again
    return result


def write_index(path: Path, entries: dict[str, IndexEntry]) -> None:
    """Replace the index atomically; a failure is logged, never raised (it is only a cache)."""
    data = {
        "version": INDEX_VERSION,
        "sessions": {file: _entry_to_json(e) for file, e in sorted(entries.items())},
    }
    if not entries and not path.parent.exists():
        return  # nothing stored yet: no folder to keep an index in
    try:
        private_dir(path.parent)
        write_atomic(path, json.dumps(data, separators=(",", ":")).encode(), sync_dir=False)
    except OSError as exc:
        log.warning("could not write the session index %s: %s", path, exc)


def _entry_to_json(entry: IndexEntry) -> dict[str, Any]:
    s = entry.summary
    return {
        "id": s.id,
        "title": s.title,
        "created_at": s.created_at.isoformat(),
        "updated_at": s.updated_at.isoformat(),
        "message_count": s.message_count,
        "project_root": s.project_root,
        "agent_ref": s.agent_ref,
        "size": entry.size,
        "mtime_ns": entry.mtime_ns,
        "inode": entry.inode,
    }


def _entry_from_json(raw: Any) -> IndexEntry:
    if not is_session_id(raw["id"]):
        raise SessionCodecError("bad id")
    ints = [raw[k] for k in ("message_count", "size", "mtime_ns", "inode")]
    strings = [raw[k] for k in ("title", "project_root", "agent_ref")]
    if not all(type(v) is int for v in ints) or not all(isinstance(v, str) for v in strings):
        raise SessionCodecError("bad field")
    created_at = datetime.fromisoformat(raw["created_at"])
    updated_at = datetime.fromisoformat(raw["updated_at"])
    if created_at.tzinfo is None or updated_at.tzinfo is None:
        raise SessionCodecError("naive time")
    return IndexEntry(
        summary=SessionSummary(
            id=SessionId(raw["id"]),
            title=raw["title"],
            created_at=created_at,
            updated_at=updated_at,
            message_count=raw["message_count"],
            project_root=raw["project_root"],
            agent_ref=raw["agent_ref"],
        ),
        size=raw["size"],
        mtime_ns=raw["mtime_ns"],
        inode=raw["inode"],
    )
