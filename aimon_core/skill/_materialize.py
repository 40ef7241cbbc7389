"""Copy the built-in bundle's skills to `.aimon/bundled-skills/` so Read and Bash reach them.

The copy is emptied and made again at every start (it is not the user's to edit): the new copy
is built beside the old one and swapped in with renames, so a second aimon starting in the same
project never sees a half-written folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path, PurePosixPath

from aimon_core.skill._registry import bundle_index, bundle_root

BUNDLED_DIR = Path(".aimon") / "bundled-skills"


def materialize_bundle(project_root: Path, bundle: str = "default") -> Path:
    """Recopy the bundle's skills under `<project>/.aimon/bundled-skills/`; return that folder."""
    target = project_root / BUNDLED_DIR
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".bundled-skills.{os.getpid()}.new")
    old = target.with_name(f".bundled-skills.{os.getpid()}.old")
    _remove(staging)
    _remove(old)
    skills = bundle_root(bundle) / "skills"
    for name, files in bundle_index(bundle):
        for relative in files:
            parts = PurePosixPath(relative).parts
            if PurePosixPath(relative).is_absolute() or ".." in parts:
                raise ValueError(f"bundle index: {relative!r} leaves the skill folder")
            source = skills / name
            for part in parts:
                source = source / part
            destination = staging / name / Path(*parts)
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(source.read_bytes())
            if parts[0] == "scripts":
                destination.chmod(0o755)
    staging.mkdir(parents=True, exist_ok=True)
    (staging / ".gitignore").write_text("# Recopied by aimon at every start.\n*\n",
                                        encoding="utf-8")
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.exists():
        # Another aimon may have moved it away a moment ago.
        with contextlib.suppress(FileNotFoundError):
            target.rename(old)
    try:
        staging.rename(target)
    except OSError:
        # Another aimon in this project swapped its fresh copy in first; it is the same.
        if not target.is_dir():
            raise
        _remove(staging)
    _remove(old)
    return target


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)
