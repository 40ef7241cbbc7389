"""PathValidator: turn a path the model gave into a real path inside the project, or refuse."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

# Reserved device names on Windows ("CON", "nul.txt", "COM1.log", ...).
_WINDOWS_DEVICE = re.compile(r"^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$", re.IGNORECASE)


class PathError(ValueError):
    """A path was refused; `reason` says why and what to do instead."""

    def __init__(self, *, path: str, reason: str) -> None:
        super().__init__(f"Path {path!r} refused: {reason}")
        self.path = path
        self.reason = reason


class PathValidator:
    """Resolve paths against a working directory and keep them inside the allowed roots."""

    def __init__(self, roots: Iterable[Path], *, windows_names: bool = os.name == "nt") -> None:
        self.roots = tuple(Path(os.path.realpath(r)) for r in roots)
        if not self.roots:
            raise ValueError("PathValidator needs at least one root")
        self._windows_names = windows_names

    def check(self, path: str | os.PathLike[str], *, cwd: Path) -> Path:
        """Return the real absolute path of `path` (relative to `cwd`) or raise PathError.

        Symbolic links are resolved first, so `..` and links cannot leave the roots. A path
        that does not exist yet is resolved through its nearest existing parent.
        """
        text = os.fspath(path)
        self._check_text(text)
        joined = os.path.normpath(Path(cwd) / Path(text).expanduser())
        real = Path(os.path.realpath(joined))
        if self._inside(real):
            return real
        if self._inside(Path(joined)):
            raise PathError(
                path=text,
                reason=f"it is a symbolic link (or under one) that points to {str(real)!r}, "
                f"outside the project; {self._where()}",
            )
        raise PathError(path=text, reason=f"it is outside the project; {self._where()}")

    def _check_text(self, text: str) -> None:
        if not text.strip():
            raise PathError(path=text, reason="the path is empty; give a file path")
        if "\x00" in text:
            raise PathError(path=text, reason="it contains a NUL byte; remove it")
        if any(ord(c) < 32 or ord(c) == 127 for c in text):
            raise PathError(
                path=text, reason="it contains control characters (newline, tab, ...); remove them"
            )
        if self._windows_names:
            for part in re.split(r"[\\/]", text):
                if _WINDOWS_DEVICE.match(part.rstrip(" .")):
                    raise PathError(path=text, reason=f"{part!r} is a reserved Windows device name")

    def _inside(self, path: Path) -> bool:
        return any(path == root or path.is_relative_to(root) for root in self.roots)

    def _where(self) -> str:
        listed = ", ".join(repr(str(r)) for r in self.roots)
        return f"use an absolute path inside {listed} or a path relative to it"
