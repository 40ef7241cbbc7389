"""Spans: what a trace is made of, kept as plain values, and the session's local trace store.

A span is a frozen value (ids as hex, times in seconds since the epoch, attributes of plain
types), so the local store, `aimon trace` and the OpenTelemetry export read the same thing.
Each session's spans are kept in aimon's data folder, whichever store keeps the session:
`traces/<project>/<session>/trace.jsonl`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Protocol

Attribute = str | int | float | bool


def _no_attributes() -> Mapping[str, Attribute]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class SpanRecord:
    """One finished span: its ids (hex), parent ("" for a root), name, times and facts."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start: float
    end: float
    attributes: Mapping[str, Attribute] = field(default_factory=_no_attributes)
    error: str = ""

    @property
    def duration_s(self) -> float:
        """Return how long the span lasted, in seconds."""
        return max(0.0, self.end - self.start)

    def to_json(self) -> dict[str, object]:
        """Return the span as one JSON object (the store's line, `aimon trace --json`)."""
        return {"trace_id": self.trace_id, "span_id": self.span_id,
                "parent_id": self.parent_id, "name": self.name, "start": self.start,
                "end": self.end, "attributes": dict(self.attributes), "error": self.error}

    @classmethod
    def from_json(cls, value: Mapping[str, object]) -> SpanRecord:
        """Read a span written by `to_json`; raise ValueError on anything else."""
        try:
            attributes = value["attributes"]
            if not isinstance(attributes, dict):
                raise TypeError("attributes")
            return cls(trace_id=str(value["trace_id"]), span_id=str(value["span_id"]),
                       parent_id=str(value["parent_id"]), name=str(value["name"]),
                       start=float(value["start"]), end=float(value["end"]),  # type: ignore[arg-type]
                       attributes=MappingProxyType(attributes), error=str(value["error"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a span: {exc}") from None


class SpanExporter(Protocol):
    """Sends finished spans somewhere (OpenTelemetry over OTLP); never blocks the caller."""

    def export(self, spans: Sequence[SpanRecord]) -> None:
        """Send `spans` (one execution's, parents before children)."""
        ...

    async def aclose(self) -> None:
        """Send what is still waiting, then release the connection."""
        ...


class TraceSpanStore(Protocol):
    """Keeps each session's spans, and reads them back."""

    def append(self, session_id: str, spans: Sequence[SpanRecord]) -> None:
        """Keep `spans` of `session_id` after those kept before."""
        ...

    def read(self, session_id: str) -> tuple[SpanRecord, ...]:
        """Return the session's spans in the order kept (none: empty)."""
        ...


class FileTraceSpanStore:
    """Spans as JSON lines, a folder per session (blocking)."""

    def __init__(self, sessions_dir: Path) -> None:
        self.sessions_dir = sessions_dir

    def path(self, session_id: str) -> Path:
        """Return the file of one session's spans."""
        return self.sessions_dir / session_id / "trace.jsonl"

    def append(self, session_id: str, spans: Sequence[SpanRecord]) -> None:
        """Append the spans, one line each, in one write."""
        if not spans or not session_id or os.sep in session_id or session_id.startswith("."):
            return
        path = self.path(session_id)
        self.sessions_dir.parent.parent.mkdir(parents=True, exist_ok=True)
        for folder in (self.sessions_dir.parent, self.sessions_dir, path.parent):
            folder.mkdir(mode=0o700, exist_ok=True)  # private, as the sessions' folders
        text = "".join(json.dumps(s.to_json(), separators=(",", ":")) + "\n" for s in spans)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as file:  # the user's alone, as sessions are
            file.write(text)

    def read(self, session_id: str) -> tuple[SpanRecord, ...]:
        """Return the spans; a torn or foreign line is skipped."""
        try:
            lines = self.path(session_id).read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return ()
        spans = []
        for line in lines:
            try:
                spans.append(SpanRecord.from_json(json.loads(line)))
            except ValueError:
                continue
        return tuple(spans)


def project_trace_store(project_root: Path) -> FileTraceSpanStore:
    """Return the trace store of a project's sessions (in aimon's data folder)."""
    from aimon_core.session import project_key, user_data_dir

    return FileTraceSpanStore(user_data_dir() / "traces" / project_key(str(project_root)))


def find_trace(session_id: str) -> tuple[SpanRecord, ...]:
    """Return the spans of `session_id`, whichever project it belongs to."""
    from aimon_core.session import user_data_dir

    for folder in sorted((user_data_dir() / "traces").glob("*")):
        spans = FileTraceSpanStore(folder).read(session_id)
        if spans:
            return spans
    return ()
