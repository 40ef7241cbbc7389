"""Copy the built-in bundle's skills to `.aimon/bundled-skills/` so Read and Bash reach them.

The copy is emptied and made again at every start (it is not the user's to edit): the new copy
is built beside the old one and swapped in with renames, so a second aimon starting in the same
project never sees a half-written folder.

A cloned repository may hold `.aimon` or `.aimon/bundled-skills` as a link to anywhere, so
every folder is opened without following links and every file is created new under it
(`aimon_core.filesystem.open_own_dir`): a link there raises RefusedFileError and nothing is
written. Nor is anything written when the project is the home folder (or above it): aimon
writes there only under its own data folder. The caller then reads the built-ins from the
package.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path, PurePosixPath

from aimon_core.filesystem import RefusedFileError, open_own_dir, remove_own, write_own
from aimon_core.skill._registry import bundle_index, bundle_root

BUNDLED_DIR = Path(".aimon") / "bundled-skills"
_TARGET = BUNDLED_DIR.name


def materialize_bundle(project_root: Path, bundle: str = "default") -> Path:
    """Recopy the bundle's skills under `<project>/.aimon/bundled-skills/`; return that folder.

    Raises OSError (RefusedFileError for a link in the way, or a project that is the home
    folder) when the copy cannot be made safely.
    """
    if _holds_home(project_root):
        raise RefusedFileError(project_root / BUNDLED_DIR,
                               "the project is the home folder: aimon writes only its data there")
    project_root.mkdir(parents=True, exist_ok=True)
    aimon = open_own_dir(project_root, BUNDLED_DIR.parent.name, create=True)
    try:
        staging = f".bundled-skills.{os.getpid()}.new"
        old = f".bundled-skills.{os.getpid()}.old"
        remove_own(aimon, staging)
        remove_own(aimon, old)
        os.mkdir(staging, 0o755, dir_fd=aimon)
        folder = open_own_dir(project_root, BUNDLED_DIR.parent.name, staging)
        try:
            _copy(bundle, folder)
            write_own(folder, (".gitignore",), b"# Recopied by aimon at every start.\n*\n")
        finally:
            os.close(folder)
        _swap(aimon, staging, old)
    finally:
        os.close(aimon)
    return project_root / BUNDLED_DIR


def _copy(bundle: str, folder: int) -> None:
    skills = bundle_root(bundle) / "skills"
    for name, files in bundle_index(bundle):
        for relative in files:
            parts = PurePosixPath(relative).parts
            if PurePosixPath(relative).is_absolute() or ".." in parts:
                raise ValueError(f"bundle index: {relative!r} leaves the skill folder")
            source = skills / name
            for part in parts:
                source = source / part
            write_own(folder, (name, *parts), source.read_bytes(),
                      mode=0o755 if parts[0] == "scripts" else 0o644)


def _swap(aimon: int, staging: str, old: str) -> None:
    """Put the fresh copy in place of the old one (which may be a link: it is removed)."""
    mode = _mode(aimon, _TARGET)
    if mode is not None and not stat.S_ISDIR(mode):
        remove_own(aimon, _TARGET)
    elif mode is not None:
        # Another aimon may have moved it away a moment ago.
        with contextlib.suppress(FileNotFoundError):
            os.rename(_TARGET, old, src_dir_fd=aimon, dst_dir_fd=aimon)
    try:
        os.rename(staging, _TARGET, src_dir_fd=aimon, dst_dir_fd=aimon)
    except OSError:
        # Another aimon in this project swapped its fresh copy in first; it is the same.
        mode = _mode(aimon, _TARGET)
        if mode is None or not stat.S_ISDIR(mode):
            raise
        remove_own(aimon, staging)
    remove_own(aimon, old)


def _mode(folder: int, name: str) -> int | None:
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
    except FileNotFoundError:
        return None


def _holds_home(project_root: Path) -> bool:
    """Tell whether the project is the user's home folder or one of its parents."""
    try:
        home = Path.home().resolve()
    except (RuntimeError, OSError):
        return False
    return home.is_relative_to(project_root.resolve())
