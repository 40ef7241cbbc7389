"""Session files stay open for appending, and a replaced or deleted file is never written stale."""

from __future__ import annotations

from pathlib import Path

import pytest

from aimon_core._atomic import write_atomic
from aimon_core.session._files import AppendFiles


def open_descriptors(path: Path) -> int:
    """Count this process's descriptors open on `path`."""
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            if fd.readlink() == path:
                count += 1
        except OSError:
            continue
    return count


def test_one_descriptor_serves_every_append(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"{}\n")
    files = AppendFiles()
    for n in range(5):
        files.append(path, b'{"n":%d}\n' % n, sync=n == 4)
        assert open_descriptors(path) == 1
    assert path.read_bytes().count(b"\n") == 6
    files.close()
    assert open_descriptors(path) == 0


def test_a_replaced_file_is_reopened(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"old\n")
    files = AppendFiles()
    files.append(path, b"a\n", sync=False)
    write_atomic(path, b"new\n", mode=0o600)  # a rewrite: a new file renamed over the old
    files.append(path, b"b\n", sync=False)
    assert path.read_bytes() == b"new\nb\n"
    files.close()


def test_a_deleted_file_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"x\n")
    files = AppendFiles()
    files.append(path, b"a\n", sync=False)
    path.unlink()
    with pytest.raises(FileNotFoundError):
        files.append(path, b"b\n", sync=False)
    assert open_descriptors(path) == 0


def test_a_torn_tail_is_cut_before_an_append_to_a_held_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"one\n")
    files = AppendFiles()
    files.append(path, b"two\n", sync=False)
    with path.open("ab") as other:
        other.write(b"tor")
    files.append(path, b"three\n", sync=False)
    assert path.read_bytes() == b"one\ntwo\nthree\n"
    files.close()


def test_the_oldest_file_is_closed_past_the_limit(tmp_path: Path) -> None:
    files = AppendFiles(limit=2)
    paths = [tmp_path / f"{n}.jsonl" for n in range(3)]
    for path in paths:
        path.write_bytes(b"h\n")
        files.append(path, b"l\n", sync=False)
    assert [open_descriptors(p) for p in paths] == [0, 1, 1]
    files.close()
