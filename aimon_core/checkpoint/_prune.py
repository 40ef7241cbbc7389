"""Where checkpoints live, and their pruning by age and total size."""

from __future__ import annotations

import contextlib
import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from aimon_core._atomic import private_dir
from aimon_core.checkpoint._journal import Checkpoint, CheckpointJournal, Restored
from aimon_core.checkpoint._session import SessionCheckpoints
from aimon_core.checkpoint._tree import CheckpointStore, TreeRules
from aimon_core.session import project_key, user_data_dir

if TYPE_CHECKING:
    from aimon_core.session import SessionStore

_DAY = 86_400.0
# An object younger than this may belong to a snapshot whose journal line is not written yet.
_GRACE_SECONDS = 3600.0
PRUNED_STAMP = "pruned"
_LAST_PRUNE = "last-prune"


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointLimits:
    """How long checkpoints are kept and how much disk they may use (per project).

    A session used within `keep_days` keeps its checkpoints even over `max_bytes`; one not
    used for `max_age_days` loses them.
    """

    max_age_days: float = 30.0
    max_bytes: int = 2 * 1024**3
    keep_days: float = 7.0


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneReport:
    """What pruning removed."""

    journals: int = 0
    objects: int = 0
    bytes_freed: int = 0


def checkpoints_folder(data_dir: Path, project_root: Path) -> Path:
    """Return the folder of a project's checkpoints under aimon's data folder."""
    return Path(data_dir) / "checkpoints" / project_key(str(Path(project_root).resolve()))


def session_checkpoints(data_dir: Path, project_root: Path, session_id: str, *,
                        rules: TreeRules | None = None, limits: CheckpointLimits | None = None
                        ) -> SessionCheckpoints | None:
    """Return the checkpoints of a session; None where a snapshot would take the whole disk
    (the home folder or a file system root as the project)."""
    root = Path(project_root).resolve()
    if root == Path.home().resolve() or root == Path(root.anchor):
        return None
    folder = checkpoints_folder(data_dir, root)
    return SessionCheckpoints(
        store=CheckpointStore(folder, rules=rules, skip=(Path(data_dir),)),
        journal=CheckpointJournal(_journal_path(folder, session_id)), project_root=root,
        prune=functools.partial(prune_when_due, folder, limits or CheckpointLimits(),
                                session_id))


def checkpoints_for(store: SessionStore, project_root: Path, session_id: str
                    ) -> SessionCheckpoints | None:
    """Return a session's checkpoints, kept beside the store's files (or in aimon's data
    folder when the store keeps none)."""
    base = getattr(store.records, "base_dir", None)
    data_dir = Path(base) if isinstance(base, str | Path) else user_data_dir()
    return session_checkpoints(data_dir, project_root, session_id)


def delete_session_checkpoints(data_dir: Path, project_root: Path, session_id: str) -> bool:
    """Remove a session's checkpoints (objects no other session uses go at the next prune)."""
    folder = checkpoints_folder(data_dir, project_root)
    removed = CheckpointJournal(_journal_path(folder, session_id)).delete()
    if removed:
        prune_project(folder, CheckpointLimits())
    return removed


def _journal_path(folder: Path, session_id: str) -> Path:
    return folder / "sessions" / f"{session_id}.jsonl"


def prune_project(folder: Path, limits: CheckpointLimits, *, now: float | None = None,
                  keep: frozenset[str] = frozenset()) -> PruneReport:
    """Drop journals past the limits (never those in `keep`), then unused objects."""
    now = time.time() if now is None else now
    journals = sorted(_journals(folder), key=lambda item: item[1])
    dropped = 0
    for path, mtime in journals:
        if path.stem not in keep and now - mtime > limits.max_age_days * _DAY:
            path.unlink(missing_ok=True)
            dropped += 1
    store = CheckpointStore(folder)
    report = _sweep(store, folder, now)
    total = sum(size for _, _, size in store.object_files())
    for path, mtime in journals:  # oldest first, while over the size limit
        if total <= limits.max_bytes:
            break
        if (path.stem in keep or now - mtime <= limits.keep_days * _DAY
                or not path.exists()):
            continue
        path.unlink()
        dropped += 1
        more = _sweep(store, folder, now)
        total -= more.bytes_freed
        report = PruneReport(objects=report.objects + more.objects,
                             bytes_freed=report.bytes_freed + more.bytes_freed)
    return PruneReport(journals=dropped, objects=report.objects, bytes_freed=report.bytes_freed)


def prune_when_due(folder: Path, limits: CheckpointLimits, session_id: str) -> PruneReport:
    """Prune a project's checkpoints if that was not done for a day (never `session_id`'s)."""
    stamp = folder / _LAST_PRUNE
    with contextlib.suppress(FileNotFoundError):
        if time.time() - stamp.stat().st_mtime < _DAY:
            return PruneReport()
    private_dir(folder)
    stamp.touch(mode=0o600)
    return prune_project(folder, limits, keep=frozenset({session_id}))


def _journals(folder: Path) -> list[tuple[Path, float]]:
    found = []
    with contextlib.suppress(FileNotFoundError), os.scandir(folder / "sessions") as listing:
        for item in listing:
            if item.name.endswith(".jsonl"):
                found.append((Path(item.path), item.stat().st_mtime))
    return found


def _sweep(store: CheckpointStore, folder: Path, now: float) -> PruneReport:
    trees: set[str] = set()
    for path, _ in _journals(folder):
        for entry in CheckpointJournal(path).read():
            match entry:
                case Checkpoint():
                    trees.add(entry.before)
                    if entry.after is not None:
                        trees.add(entry.after)
                case Restored():
                    trees.add(entry.previous)
    used = store.reachable(trees)
    count = freed = 0
    for object_id, path, size in list(store.object_files()):
        if object_id in used:
            continue
        with contextlib.suppress(FileNotFoundError):
            if now - path.stat().st_mtime > _GRACE_SECONDS:
                path.unlink()
                count += 1
                freed += size
    if count:
        store.forget_cache()
        (folder / PRUNED_STAMP).touch()
    return PruneReport(objects=count, bytes_freed=freed)
