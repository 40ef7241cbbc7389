"""Compare two snapshots (files added, changed, deleted, with line counts) and restore one."""

from __future__ import annotations

import contextlib
import difflib
import enum
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from aimon_core._atomic import write_atomic
from aimon_core.checkpoint._tree import DIR, FILE, LINK, CheckpointError, CheckpointStore, Entry

_TEXT_LIMIT = 1024 * 1024  # bigger files are counted as binary: no line counts, no diff


class ChangeKind(enum.Enum):
    """How a path differs between two snapshots."""

    ADDED = "added"
    CHANGED = "changed"
    DELETED = "deleted"


@dataclass(frozen=True, slots=True, kw_only=True)
class FileChange:
    """One file or symlink that differs, with the lines added and removed (text files)."""

    path: str
    kind: ChangeKind
    added: int = 0
    removed: int = 0
    binary: bool = False
    mode_only: bool = False

    def describe(self) -> str:
        """Return e.g. `changed src/a.py (+3 -1)` or `deleted logo.png (binary)`."""
        if self.mode_only:
            detail = "mode"
        elif self.binary:
            detail = "binary"
        else:
            detail = f"+{self.added} -{self.removed}"
        return f"{self.kind.value} {self.path} ({detail})"


@dataclass(frozen=True, slots=True, kw_only=True)
class RestoreReport:
    """What a restore did: files written and removed, and paths it had to leave alone."""

    written: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()


def changed_paths(old: dict[str, Entry], new: dict[str, Entry]) -> set[str]:
    """Return the files and symlinks that differ (content, kind or mode) between two listings."""
    paths = {p for p, e in old.items() if e.kind != DIR} | {
        p for p, e in new.items() if e.kind != DIR}
    return {p for p in paths if old.get(p) != new.get(p)}


def compare(store: CheckpointStore, old_tree: str, new_tree: str) -> tuple[FileChange, ...]:
    """Return the changes that turn snapshot `old_tree` into `new_tree`, by path."""
    if old_tree == new_tree:
        return ()
    old, new = store.entries(old_tree), store.entries(new_tree)
    return tuple(_change(store, path, old.get(path), new.get(path))
                 for path in sorted(changed_paths(old, new)))


def _change(store: CheckpointStore, path: str, old: Entry | None, new: Entry | None
            ) -> FileChange:
    file_old = old if old is not None and old.kind != DIR else None
    file_new = new if new is not None and new.kind != DIR else None
    kind = (ChangeKind.ADDED if file_old is None else
            ChangeKind.DELETED if file_new is None else ChangeKind.CHANGED)
    if (file_old is not None and file_new is not None and file_old.id == file_new.id
            and file_old.kind == file_new.kind):
        return FileChange(path=path, kind=kind, mode_only=True)
    before = _text(store, file_old)
    after = _text(store, file_new)
    if before is None or after is None:
        return FileChange(path=path, kind=kind, binary=True)
    added = removed = 0
    for line in difflib.unified_diff(before, after, n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return FileChange(path=path, kind=kind, added=added, removed=removed)


def _text(store: CheckpointStore, entry: Entry | None) -> list[str] | None:
    """Return a file's lines, [] when absent, None when binary or too big to compare."""
    if entry is None:
        return []
    if entry.size > _TEXT_LIMIT:
        return None
    data = store.read(entry.id)
    if b"\0" in data:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if entry.kind == LINK:
        text = f"-> {text}\n"
    return text.splitlines(keepends=True)


def unified_diff(store: CheckpointStore, old_tree: str, new_tree: str,
                 changes: Iterable[FileChange], *, max_lines: int = 400) -> str:
    """Return a unified diff of `changes` (old -> new), cut after `max_lines` lines."""
    old, new = store.entries(old_tree), store.entries(new_tree)
    lines: list[str] = []
    for change in changes:
        before = _text(store, old.get(change.path)) if change.kind != ChangeKind.ADDED else []
        after = _text(store, new.get(change.path)) if change.kind != ChangeKind.DELETED else []
        if before is None or after is None or change.mode_only:
            lines.append(f"{change.describe()}\n")
            continue
        lines.extend(difflib.unified_diff(
            before, after, fromfile=f"a/{change.path}" if before else "/dev/null",
            tofile=f"b/{change.path}" if after else "/dev/null"))
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n\\ No newline at end of file\n"
        if len(lines) > max_lines:
            return "".join(lines[:max_lines]) + f"… (diff cut at {max_lines} lines)\n"
    return "".join(lines)


def restore(store: CheckpointStore, root: Path, current_tree: str, target_tree: str
            ) -> RestoreReport:
    """Make the covered files under `root` what they were in `target_tree`.

    `current_tree` is a snapshot of `root` taken just before: only what it covers is removed
    or overwritten (excluded folders and files over the size cap are never touched).
    """
    current, target = store.entries(current_tree), store.entries(target_tree)
    for path in (*current, *target):
        _check_name(path)
    removed: list[str] = []
    kept: list[str] = []
    for path, entry in current.items():  # files and links that go, or become something else
        wanted = target.get(path)
        if entry.kind != DIR and (wanted is None or wanted.kind != entry.kind):
            with contextlib.suppress(FileNotFoundError):
                (root / path).unlink()
            removed.append(path)
    gone_dirs = [p for p, e in current.items()
                 if e.kind == DIR and target.get(p, Entry(kind=FILE)).kind != DIR]
    for path in sorted(gone_dirs, key=lambda p: p.count("/"), reverse=True):
        try:
            (root / path).rmdir()
            removed.append(path + "/")
        except FileNotFoundError:
            pass
        except OSError:
            kept.append(path + "/")  # holds files checkpoints do not cover
    written = _write_all(store, root, current, target, kept)
    return RestoreReport(written=tuple(written), removed=tuple(removed), kept=tuple(kept))


def _write_all(store: CheckpointStore, root: Path, current: dict[str, Entry],
               target: dict[str, Entry], kept: list[str]) -> list[str]:
    written: list[str] = []
    real_root = os.path.realpath(root)
    for path, entry in target.items():  # parents come before their children
        have = current.get(path)
        full = root / path
        if entry.kind == DIR:
            if not full.is_dir() or full.is_symlink():
                try:
                    full.mkdir()
                except FileExistsError:
                    kept.append(path)
            continue
        if have == entry and os.path.lexists(full):
            continue
        parent = os.path.realpath(full.parent)
        if parent != real_root and not parent.startswith(real_root + os.sep):
            raise CheckpointError(f"refusing to write {path!r}: its folder leads out of "
                                  f"{str(root)!r}")
        if entry.kind == FILE and have is not None and have.kind == FILE and have.id == entry.id:
            full.chmod(entry.mode)
        elif full.is_dir() and not full.is_symlink():
            kept.append(path)
            continue
        else:
            _write_entry(store, full, entry)
        written.append(path)
    return written


def _write_entry(store: CheckpointStore, full: Path, entry: Entry) -> None:
    data = store.read(entry.id)
    if entry.kind == LINK:
        with contextlib.suppress(FileNotFoundError):
            full.unlink()
        full.symlink_to(os.fsdecode(data))
        return
    write_atomic(full, data, mode=entry.mode, sync_dir=False)


def _check_name(path: str) -> None:
    parts = path.split("/")
    if path.startswith("/") or any(p in ("", ".", "..") or "\0" in p for p in parts):
        raise CheckpointError(f"checkpoint holds a bad path {path!r}: not restored")
