"""How a path is spelled before it is compared: the home folder expanded, `//` made `/`."""

from __future__ import annotations

import os
from pathlib import Path


def expand_user(path: str) -> str:
    """Expand ``~`` and ``~user`` as bash does; an unknown user's ``~name`` stays as it is."""
    # Path.expanduser raises for an unknown `~user`; os.path leaves such a path alone.
    return os.path.expanduser(path)  # noqa: PTH111


def clean(path: str) -> str:
    """Return ``path`` with a leading ``//`` made ``/``."""
    # POSIX keeps a leading `//`; it means the same directory as `/` on Linux and macOS.
    return "/" + path.lstrip("/") if path.startswith("//") else path


def with_parents(path: str) -> list[str]:
    """Return ``path`` and each of its parent folders, nearest first."""
    out = [path]
    while (parent := str(Path(out[-1]).parent)) != out[-1]:
        out.append(parent)
    return out
