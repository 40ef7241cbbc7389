"""The editor's file system: reads and writes of the file tools go through the ACP client.

An editor that offers `fs/read_text_file` sees aimon read its buffers (unsaved edits
included); one that offers `fs/write_text_file` applies aimon's edits itself (its undo, its
open buffers). Paths are still checked on this side first (the project and its allowed
folders), as the local file system checks them; bytes that are not UTF-8 text, and what the
client does not offer, go to the disk directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aimon_core.filesystem import FileStat, VirtualFileSystem


class EditorFileSystem:
    """A VirtualFileSystem that reads and writes text through the editor (ACP `fs/*`)."""

    def __init__(self, local: VirtualFileSystem, connection: Any, session_id: str, *,
                 read: bool, write: bool) -> None:
        self._local = local
        self._connection = connection
        self._session_id = session_id
        self._read = read
        self._write = write

    @property
    def roots(self) -> tuple[Path, ...]:
        """Return the directories the model may touch (the local checks apply)."""
        return self._local.roots

    async def resolve(self, path: str, *, cwd: Path) -> Path:
        """Return the real absolute path of `path` if it is allowed (checked here)."""
        return await self._local.resolve(path, cwd=cwd)

    async def stat(self, path: Path) -> FileStat | None:
        """Return facts about `path` from the disk."""
        return await self._local.stat(path)

    async def read_bytes(self, path: Path) -> bytes:
        """Return a file's content: the editor's buffer when it offers reads."""
        data = await self._local.read_bytes(path)  # the checks, and the binary case
        if not self._read:
            return data
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return data
        response = await self._connection.read_text_file(session_id=self._session_id,
                                                         path=str(path))
        return str(response.content).encode("utf-8")

    async def write_atomic(self, path: Path, data: bytes) -> None:
        """Write a file: through the editor when it offers writes and `data` is text."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        if not self._write or text is None:
            await self._local.write_atomic(path, data)
            return
        await self._local.resolve(str(path), cwd=path.parent)  # refused paths stay refused
        await self._connection.write_text_file(session_id=self._session_id, path=str(path),
                                               content=text)
