"""The checkpoints of one session: an append-only JSONL journal, read tolerantly.

Lines (one JSON object each; unknown types and bad lines are skipped, never fatal):

    {"type":"checkpoint","turn":3,"prompt":"…","tree":"<id>","messages":12,"at":"…"}
    {"type":"turn_end","turn":3,"tree":"<id>"}
    {"type":"restored","turn":3,"from":"<id>","at":"…"}
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aimon_core._atomic import private_dir, write_atomic


@dataclass(frozen=True, slots=True, kw_only=True)
class Checkpoint:
    """The project as it was before prompt number `turn` (and after it, once it ended).

    `messages` is the transcript length when the prompt was sent: the conversation forks
    there. `skipped` names files left out for their size.
    """

    turn: int
    prompt: str
    before: str
    at: datetime
    messages: int = 0
    after: str | None = None
    skipped: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Restored:
    """Files were restored to checkpoint `turn`; `previous` is the tree just before."""

    turn: int
    previous: str
    at: datetime


JournalEntry = Checkpoint | Restored


class CheckpointJournal:
    """Appends to and reads one session's journal file."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def read(self) -> tuple[JournalEntry, ...]:
        """Return the checkpoints (ends merged in) and restores, in order."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return ()
        entries: list[JournalEntry] = []
        at_turn: dict[int, int] = {}
        for raw in data.split(b"\n"):
            try:
                obj = json.loads(raw)
                parsed = _parse(obj)
            except (ValueError, KeyError, TypeError):
                continue  # a torn or foreign line: skip it, keep reading
            match parsed:
                case Checkpoint():
                    at_turn[parsed.turn] = len(entries)
                    entries.append(parsed)
                case Restored():
                    entries.append(parsed)
                case (int() as turn, str() as tree) if turn in at_turn:
                    found = entries[at_turn[turn]]
                    assert isinstance(found, Checkpoint)
                    entries[at_turn[turn]] = replace(found, after=tree)
        return tuple(entries)

    def begin(self, checkpoint: Checkpoint) -> None:
        """Record a checkpoint taken before a prompt."""
        self._append(_checkpoint_json(checkpoint))

    def end(self, turn: int, tree: str) -> None:
        """Record the tree as a turn left it."""
        self._append({"type": "turn_end", "turn": turn, "tree": tree})

    def restored(self, entry: Restored) -> None:
        """Record a restore."""
        self._append({"type": "restored", "turn": entry.turn, "from": entry.previous,
                      "at": entry.at.isoformat()})

    def write(self, entries: Iterable[JournalEntry]) -> None:
        """Write a whole journal (a forked session's copy), atomically."""
        private_dir(self.path.parent)
        lines = []
        for entry in entries:
            match entry:
                case Checkpoint():
                    lines.append(_checkpoint_json(entry))
                    if entry.after is not None:
                        lines.append({"type": "turn_end", "turn": entry.turn,
                                      "tree": entry.after})
                case Restored():
                    lines.append({"type": "restored", "turn": entry.turn,
                                  "from": entry.previous, "at": entry.at.isoformat()})
        data = "".join(json.dumps(line, ensure_ascii=True) + "\n" for line in lines)
        write_atomic(self.path, data.encode("ascii"))

    def delete(self) -> bool:
        """Remove the journal; return whether there was one."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

    def _append(self, obj: dict[str, Any]) -> None:
        private_dir(self.path.parent)
        data = (json.dumps(obj, ensure_ascii=True) + "\n").encode("ascii")
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        try:
            _repair_tail(fd)
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)


def _repair_tail(fd: int) -> None:
    """Start a fresh line when a crash left the last one torn."""
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        os.write(fd, b"\n")


def _checkpoint_json(entry: Checkpoint) -> dict[str, Any]:
    return {"type": "checkpoint", "turn": entry.turn, "prompt": entry.prompt,
            "tree": entry.before, "messages": entry.messages, "at": entry.at.isoformat(),
            "skipped": list(entry.skipped[:50])}


def _parse(obj: Any) -> Checkpoint | Restored | tuple[int, str]:
    kind = obj["type"]
    if kind == "checkpoint":
        return Checkpoint(turn=_int(obj["turn"]), prompt=str(obj["prompt"]),
                          before=_id(obj["tree"]), messages=_int(obj.get("messages", 0)),
                          at=_time(obj["at"]),
                          skipped=tuple(str(s) for s in obj.get("skipped", ())))
    if kind == "turn_end":
        return _int(obj["turn"]), _id(obj["tree"])
    if kind == "restored":
        return Restored(turn=_int(obj["turn"]), previous=_id(obj["from"]), at=_time(obj["at"]))
    raise ValueError(f"unknown line type {kind!r}")


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError("not a count")
    return value


def _id(value: Any) -> str:
    if not isinstance(value, str) or len(value) != 64:
        raise ValueError("not an object id")
    int(value, 16)
    return value


def _time(value: Any) -> datetime:
    moment = datetime.fromisoformat(str(value))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)

