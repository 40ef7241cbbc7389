"""The file system seam: VirtualFileSystem, the local implementation and path validation."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from aimon_core._atomic import write_atomic
from aimon_core.filesystem._gitrepo import (
    Repository,
    find_repository,
    read_branch,
    repository_is_inert,
)
from aimon_core.filesystem._local import FileKind, FileStat, LocalFileSystem
from aimon_core.filesystem._own import (
    Readable,
    RefusedFileError,
    open_own_dir,
    own_path,
    read_own,
    remove_own,
    write_own,
)
from aimon_core.filesystem._paths import PathError, PathValidator


@runtime_checkable
class VirtualFileSystem(Protocol):
    """Where file tools read and write. Every method raises PathError for a refused path."""

    @property
    def roots(self) -> tuple[Path, ...]:
        """Return the real paths of the directories the model may touch (project root first)."""
        ...

    async def resolve(self, path: str, *, cwd: Path) -> Path:
        """Return the real absolute path of `path` (relative to `cwd`) if it is allowed."""
        ...

    async def stat(self, path: Path) -> FileStat | None:
        """Return facts about `path`, or None if it does not exist."""
        ...

    async def read_bytes(self, path: Path) -> bytes:
        """Return the content of a regular file."""
        ...

    async def write_atomic(self, path: Path, data: bytes) -> None:
        """Create or replace a regular file atomically, creating parent directories."""
        ...


__all__ = [
    "FileKind",
    "FileStat",
    "LocalFileSystem",
    "PathError",
    "PathValidator",
    "Readable",
    "RefusedFileError",
    "Repository",
    "VirtualFileSystem",
    "find_repository",
    "open_own_dir",
    "own_path",
    "read_branch",
    "read_own",
    "remove_own",
    "repository_is_inert",
    "write_atomic",
    "write_own",
]
