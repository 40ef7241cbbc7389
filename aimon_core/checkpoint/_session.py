"""SessionCheckpoints: the checkpoints of one session, and the restores the commands offer."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from aimon_core.checkpoint._journal import Checkpoint, CheckpointJournal, JournalEntry, Restored
from aimon_core.checkpoint._restore import (
    FileChange,
    RestoreReport,
    changed_paths,
    compare,
    restore,
    unified_diff,
)
from aimon_core.checkpoint._tree import CheckpointError, CheckpointStore, TreeRules


@dataclass(frozen=True, slots=True, kw_only=True)
class RestorePlan:
    """What restoring a checkpoint would do, for the user to confirm.

    `changes` turn the project as it is now into the checkpoint; `outside` names the files
    among them that changed outside aimon's turns since the checkpoint (the user's edits).
    """

    checkpoint: Checkpoint
    current: str
    changes: tuple[FileChange, ...]
    outside: tuple[str, ...]
    diff: str

    @property
    def summary(self) -> str:
        """Return the changes, one a line, and the outside edits a restore would overwrite."""
        lines = [f"  {change.describe()}" for change in self.changes]
        if self.outside:
            lines.append("Changed outside aimon since that checkpoint (a restore overwrites "
                         "them): " + ", ".join(self.outside))
        return "\n".join(lines)


class SessionCheckpoints:
    """Snapshots the project before each prompt and restores them; one per LiveSession.

    Blocking work runs in a thread, one operation at a time.
    """

    def __init__(self, *, store: CheckpointStore, journal: CheckpointJournal,
                 project_root: Path, prune: Callable[[], object] | None = None) -> None:
        self.store = store
        self.journal = journal
        self.project_root = Path(project_root)
        # Pruning old checkpoints, run once, after the first turn (not before: no wait).
        self._prune = prune
        self._lock = asyncio.Lock()
        self._entries: tuple[JournalEntry, ...] | None = None

    def entries(self) -> tuple[JournalEntry, ...]:
        """Return the journal: checkpoints and restores, oldest first."""
        if self._entries is None:
            self._entries = self.journal.read()
        return self._entries

    def history(self) -> tuple[Checkpoint, ...]:
        """Return the session's checkpoints, one per prompt, oldest first."""
        return tuple(e for e in self.entries() if isinstance(e, Checkpoint))

    async def begin(self, prompt: str, messages: int) -> Checkpoint:
        """Snapshot the project before a prompt; `messages` is the transcript length now."""
        async with self._lock:
            snap = await asyncio.to_thread(self.store.snapshot, self.project_root)
            turn = max((c.turn for c in self.history()), default=0) + 1
            checkpoint = Checkpoint(turn=turn, prompt=prompt, before=snap.tree,
                                    messages=messages, at=datetime.now(UTC),
                                    skipped=snap.skipped)
            await asyncio.to_thread(self.journal.begin, checkpoint)
            self._entries = (*self.entries(), checkpoint)
            return checkpoint

    async def end(self, checkpoint: Checkpoint) -> None:
        """Snapshot the project as the turn left it."""
        async with self._lock:
            snap = await asyncio.to_thread(self.store.snapshot, self.project_root)
            await asyncio.to_thread(self.journal.end, checkpoint.turn, snap.tree)
            self._entries = None
            prune, self._prune = self._prune, None
            if prune is not None:
                with contextlib.suppress(OSError, CheckpointError, ValueError):
                    await asyncio.to_thread(prune)

    @contextlib.asynccontextmanager
    async def around_turn(self, prompt: str, messages: int, warn: Callable[[str], None]
                          ) -> AsyncIterator[asyncio.Task[Checkpoint | None]]:
        """Checkpoint before and after the body; a failing checkpoint warns, never stops it.

        The snapshot before the turn runs while the turn starts: the body gets its task and
        must await it before anything may change the project (the first tool call). The first
        snapshot of a large project hashes every file, so the model's first answer hides it.
        """
        async def before() -> Checkpoint | None:
            try:
                return await self.begin(prompt, messages)
            except (CheckpointError, OSError) as exc:
                warn(f"No checkpoint for this prompt (/undo cannot take it back): {exc}")
                return None

        ready = asyncio.get_running_loop().create_task(before())
        try:
            yield ready
        finally:
            checkpoint = await asyncio.shield(ready)
            if checkpoint is not None:
                with contextlib.suppress(CheckpointError, OSError):
                    await asyncio.shield(self.end(checkpoint))

    def undo_target(self) -> Checkpoint | None:
        """Return the checkpoint /undo restores: before the last prompt not yet taken back."""
        limit: int | None = None
        for entry in reversed(self.entries()):
            match entry:
                case Restored():
                    limit = entry.turn if limit is None else min(limit, entry.turn)
                case Checkpoint() if limit is None or entry.turn < limit:
                    return entry
        return None

    def find(self, turn: int) -> Checkpoint | None:
        """Return the checkpoint of prompt number `turn`."""
        return next((c for c in self.history() if c.turn == turn), None)

    async def now(self) -> str:
        """Snapshot the project as it is now; return the tree id."""
        async with self._lock:
            return (await asyncio.to_thread(self.store.snapshot, self.project_root)).tree

    async def changes_since(self, checkpoint: Checkpoint, current: str | None = None
                            ) -> tuple[FileChange, ...]:
        """Return what changed in the project since `checkpoint` (before its prompt)."""
        current = current or await self.now()
        return await asyncio.to_thread(compare, self.store, checkpoint.before, current)

    async def session_diff(self) -> tuple[tuple[FileChange, ...], str]:
        """Return the changes since the session's first checkpoint, and their unified diff."""
        history = self.history()
        if not history:
            return (), ""
        first, current = history[0].before, await self.now()

        def work() -> tuple[tuple[FileChange, ...], str]:
            changes = compare(self.store, first, current)
            return changes, unified_diff(self.store, first, current, changes)

        return await asyncio.to_thread(work)

    async def plan(self, checkpoint: Checkpoint) -> RestorePlan:
        """Return what restoring `checkpoint` would change, and whose edits it would lose."""
        current = await self.now()
        later = [c for c in self.history() if c.turn >= checkpoint.turn]

        def work() -> RestorePlan:
            changes = compare(self.store, current, checkpoint.before)
            touched = {c.path for c in changes}
            return RestorePlan(
                checkpoint=checkpoint, current=current, changes=changes,
                outside=tuple(sorted(touched & self._outside(later, current))),
                diff=unified_diff(self.store, current, checkpoint.before, changes))

        return await asyncio.to_thread(work)

    def _outside(self, later: list[Checkpoint], current: str) -> set[str]:
        """Return the paths changed between aimon's turns (after one ended, before the next)."""
        found: set[str] = set()
        for done, following in zip(later, [*later[1:], None], strict=True):
            if done.after is None:
                continue
            nxt = following.before if following is not None else current
            if nxt != done.after:
                found |= changed_paths(self.store.entries(done.after), self.store.entries(nxt))
        return found

    async def apply(self, plan: RestorePlan) -> RestoreReport:
        """Restore the plan's checkpoint and record that on the journal.

        Raises CheckpointError when the project changed since the plan was made.
        """
        async with self._lock:
            snap = await asyncio.to_thread(self.store.snapshot, self.project_root)
            if snap.tree != plan.current:
                raise CheckpointError("the project changed since the changes were shown: "
                                      "run the command again to see them")
            report = await asyncio.to_thread(restore, self.store, self.project_root,
                                             plan.current, plan.checkpoint.before)
            entry = Restored(turn=plan.checkpoint.turn, previous=plan.current,
                             at=datetime.now(UTC))
            await asyncio.to_thread(self.journal.restored, entry)
            self._entries = (*self.entries(), entry)
            return report


SnapshotTask = asyncio.Task[Checkpoint | None]


def checkpointed(checkpoints: SessionCheckpoints | None, prompt: str, messages: int,
                 warn: Callable[[str], None]
                 ) -> contextlib.AbstractAsyncContextManager[SnapshotTask | None]:
    """Return `checkpoints.around_turn(...)`, or a context that does nothing when None."""
    if checkpoints is None:
        return contextlib.nullcontext()
    return checkpoints.around_turn(prompt, messages, warn)


def checkpoint_rules(excludes: tuple[str, ...] = (), max_file_bytes: int | None = None
                     ) -> TreeRules:
    """Return the default rules with extra excludes (and another size cap)."""
    base = TreeRules()
    return TreeRules(excludes=(*base.excludes, *excludes),
                     max_file_bytes=max_file_bytes or base.max_file_bytes,
                     max_files=base.max_files)
