"""The checkpoint store on real files: snapshots, comparisons, restores, pruning."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from aimon_core.checkpoint import (
    ChangeKind,
    Checkpoint,
    CheckpointJournal,
    CheckpointLimits,
    CheckpointStore,
    TreeRules,
    TreeTooLargeError,
    compare,
    prune_project,
    restore,
)
from aimon_core.session import FileSessionRecordStore
from tests.checkpoint.conftest import make_project, tree_state


def test_a_restore_brings_back_contents_modes_links_and_deletions(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    store = CheckpointStore(tmp_path / "data")
    before_state = tree_state(root)
    before = store.snapshot(root)
    shutil.rmtree(root / "src")
    (root / "run.sh").chmod(0o644)
    (root / "secret.txt").write_text("overwritten\n")
    (root / "link").unlink()
    (root / "link").symlink_to("/etc/passwd")
    (root / "new").mkdir()
    (root / "new" / "file.txt").write_text("new\n")
    (root / "node_modules" / "dep.js").write_text("changed build output\n")
    now = store.snapshot(root)
    report = restore(store, root, now.tree, before.tree)
    after = tree_state(root)
    # Build output is not covered: left as it is now, everything else as before.
    assert after.pop("node_modules/dep.js")[1] == b"changed build output\n"
    before_state.pop("node_modules/dep.js")
    assert after == before_state
    assert "new/" in report.removed and "src/a.py" in report.written
    assert store.snapshot(root).tree == before.tree


def test_compare_counts_lines_and_names_kinds(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    store = CheckpointStore(tmp_path / "data")
    first = store.snapshot(root).tree
    (root / "notes.txt").write_text("hello world\nchanged\nthird\n")
    (root / "src" / "a.py").unlink()
    (root / "added.bin").write_bytes(b"\0\1\2")
    changes = {c.path: c for c in compare(store, first, store.snapshot(root).tree)}
    assert changes["notes.txt"].kind is ChangeKind.CHANGED
    assert (changes["notes.txt"].added, changes["notes.txt"].removed) == (2, 1)
    assert changes["src/a.py"].describe() == "deleted src/a.py (+0 -2)"
    assert changes["added.bin"].describe() == "added added.bin (binary)"


def test_unchanged_files_are_not_read_again(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    old = time.time() - 3600  # older than the racy window: the stat cache may trust them
    for path in root.rglob("*"):
        os.utime(path, (old, old), follow_symlinks=False)
    store = CheckpointStore(tmp_path / "data")
    first = store.snapshot(root)
    (root / "src" / "a.py").chmod(0o000)  # unreadable, but its stat did change (ctime)
    (root / "src" / "a.py").chmod(0o644)
    os.utime(root / "src" / "a.py", (old, old))
    fresh = CheckpointStore(tmp_path / "data")  # a new process reads the stat cache from disk
    (root / "notes.txt").chmod(0o000)  # a read would fail: the cache must answer
    try:
        os.utime(root / "notes.txt", (old, old))
        assert fresh.snapshot(root).tree != ""
    finally:
        (root / "notes.txt").chmod(0o644)
    assert fresh.snapshot(root).tree == first.tree


def test_big_files_and_excluded_folders_are_left_out_and_never_touched(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    (root / "big.dat").write_bytes(b"x" * 2048)
    store = CheckpointStore(tmp_path / "data",
                            rules=TreeRules(max_file_bytes=1024, excludes=("node_modules",
                                                                           "*.log")))
    (root / "debug.log").write_text("log\n")
    snap = store.snapshot(root)
    assert snap.skipped == ("big.dat",)
    assert "debug.log" not in store.entries(snap.tree)
    (root / "big.dat").write_bytes(b"y" * 4096)
    restore(store, root, store.snapshot(root).tree, snap.tree)
    assert (root / "big.dat").read_bytes() == b"y" * 4096
    assert (root / "debug.log").exists()


def test_too_many_files_stops_the_snapshot(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    store = CheckpointStore(tmp_path / "data", rules=TreeRules(max_files=3))
    with pytest.raises(TreeTooLargeError):
        store.snapshot(root)


def test_a_folder_that_holds_uncovered_files_is_kept(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    store = CheckpointStore(tmp_path / "data")
    empty = store.snapshot(root).tree
    (root / "out" / "node_modules").mkdir(parents=True)
    (root / "out" / "node_modules" / "x.js").write_text("x")
    (root / "out" / "y.txt").write_text("y")
    report = restore(store, root, store.snapshot(root).tree, empty)
    assert report.kept == ("out/",)
    assert not (root / "out" / "y.txt").exists()
    assert (root / "out" / "node_modules" / "x.js").exists()


def test_prune_drops_old_journals_and_their_objects_only(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    folder = tmp_path / "data"
    store = CheckpointStore(folder)
    old_tree = store.snapshot(root).tree
    (root / "notes.txt").write_text("newer\n")
    new_tree = store.snapshot(root).tree
    at = Checkpoint(turn=1, prompt="p", before=old_tree, at=datetime.now(UTC))
    old_journal = CheckpointJournal(folder / "sessions" / "old.jsonl")
    old_journal.begin(at)
    new_journal = CheckpointJournal(folder / "sessions" / "new.jsonl")
    new_journal.begin(replace(at, before=new_tree))
    month_ago = time.time() - 40 * 86_400
    os.utime(old_journal.path, (month_ago, month_ago))
    for _, path, _ in store.object_files():
        os.utime(path, (month_ago, month_ago))
    report = prune_project(folder, CheckpointLimits())
    assert report.journals == 1 and report.objects >= 1
    assert not old_journal.path.exists()
    fresh = CheckpointStore(folder)
    assert fresh.entries(new_tree)  # the kept session's snapshot is whole
    assert fresh.read(fresh.entries(new_tree)["notes.txt"].id) == b"newer\n"


def test_the_journal_skips_torn_and_foreign_lines(tmp_path: Path) -> None:
    journal = CheckpointJournal(tmp_path / "s.jsonl")
    tree = "a" * 64
    journal.begin(Checkpoint(turn=1, prompt="one", before=tree, at=datetime.now(UTC)))
    with journal.path.open("ab") as file:
        file.write(b'{"type":"checkpoint","turn":2,"pro')  # torn by a crash
    journal.end(1, "b" * 64)
    with journal.path.open("ab") as file:
        file.write(b'{"type":"something-newer"}\nnot json\n')
    (entry,) = journal.read()
    assert isinstance(entry, Checkpoint)
    assert (entry.turn, entry.after) == (1, "b" * 64)


def test_pruning_runs_at_most_once_a_day(tmp_path: Path) -> None:
    from aimon_core.checkpoint._prune import prune_when_due

    folder = tmp_path / "data"
    journal = CheckpointJournal(folder / "sessions" / "old.jsonl")
    journal.begin(Checkpoint(turn=1, prompt="p", before="a" * 64, at=datetime.now(UTC)))
    month_ago = time.time() - 40 * 86_400
    os.utime(journal.path, (month_ago, month_ago))
    assert prune_when_due(folder, CheckpointLimits(), "current").journals == 1
    journal.begin(Checkpoint(turn=1, prompt="p", before="a" * 64, at=datetime.now(UTC)))
    os.utime(journal.path, (month_ago, month_ago))
    assert prune_when_due(folder, CheckpointLimits(), "current").journals == 0  # done today


def test_sessions_delete_removes_the_session_checkpoints(tmp_path: Path) -> None:
    from aimon_cli._sessions_cli import delete_session
    from aimon_core.checkpoint import checkpoints_for
    from aimon_core.session import FileSessionLeaseStore, SessionStore, user_data_dir

    root = make_project(tmp_path / "p")
    base = user_data_dir()
    store = SessionStore(FileSessionRecordStore(base), FileSessionLeaseStore(base))
    claimed = store.claim(None, project_root=root, agent_ref="agent:default")
    store.release(claimed)
    checkpoints = checkpoints_for(store, root, claimed.record.id)
    assert checkpoints is not None
    checkpoints.journal.begin(Checkpoint(turn=1, prompt="p", at=datetime.now(UTC),
                                         before=checkpoints.store.snapshot(root).tree))
    delete_session(claimed.record.id)
    assert not checkpoints.journal.path.exists()


def test_aimon_data_inside_the_project_is_never_snapshotted(tmp_path: Path) -> None:
    root = make_project(tmp_path / "p")
    data = root / "aimon-data"
    (data / "projects").mkdir(parents=True)
    (data / "projects" / "s.jsonl").write_text("{}\n")
    store = CheckpointStore(data / "checkpoints" / "key", skip=(data,))
    entries = store.entries(store.snapshot(root).tree)
    assert not any(path.startswith("aimon-data") for path in entries)
    assert "src/a.py" in entries


def test_a_file_swapped_after_the_listing_is_not_followed_nor_waited_on(tmp_path: Path
                                                                        ) -> None:
    # The walk lstats each entry and reads regular files; what it reads may have become a
    # link out of the project or a FIFO in between (another process at work).
    store = CheckpointStore(tmp_path / "data")
    (tmp_path / "secret").write_text("outside\n")
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "now-a-link").symlink_to(tmp_path / "secret")
    os.mkfifo(tmp_path / "p" / "now-a-fifo")
    (tmp_path / "p" / "plain").write_text("inside\n")
    assert store._file(str(tmp_path / "p" / "now-a-link")) is None
    assert store._file(str(tmp_path / "p" / "now-a-fifo")) is None
    assert store._file(str(tmp_path / "p" / "plain")) is not None
