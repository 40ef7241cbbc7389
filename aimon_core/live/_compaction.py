"""What a LiveSession needs around compaction: the session's folder and the context size."""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from aimon_core.agent import Compacted
from aimon_core.compact import SessionCompactor, messages_tokens
from aimon_core.filesystem import LocalFileSystem
from aimon_core.llm import Message, ToolDefinition
from aimon_core.session import SessionTotals
from aimon_core.tools import ToolContext

_TEMP_FOLDER = "aimon-sessions"


def session_folder(transcript_path: str | None, session_id: str) -> Path:
    """Return the session's folder: beside its transcript file, or a temporary one when the
    store keeps no files (large tool results are saved there)."""
    if transcript_path is not None:
        return Path(transcript_path).with_suffix("")
    return Path(tempfile.gettempdir()) / _TEMP_FOLDER / session_id


def with_extra_root(context: ToolContext, folder: Path) -> ToolContext:
    """Return `context` with `folder` readable by the file tools (saved tool results).

    Only a local file system can widen; the permission policy allows `Read` anywhere no
    rule denies, so the model reads a saved result without being asked.
    """
    fs = context.fs
    if not isinstance(fs, LocalFileSystem):
        return context
    return replace(context, fs=LocalFileSystem(fs.root, (*fs.roots[1:], folder)))


def context_size(
    compactor: SessionCompactor, messages: Sequence[Message], tools: Sequence[ToolDefinition]
) -> int:
    """Return the calibrated estimate of the next request (system prompt, tools, transcript)."""
    return compactor.calibration.apply(compactor.overhead(tools) + messages_tokens(messages))


def with_cost(totals: SessionTotals, done: Compacted) -> SessionTotals:
    """Return `totals` with what a `/compact` summary cost (it is no turn)."""
    added = totals.add_turn(iterations=0, usage=done.usage, cost_usd=done.cost_usd)
    return replace(added, turns=totals.turns)
