"""Where the service lives: a private folder in aimon's data folder, its socket and its lock.

The folder is made 0700 and must belong to the user; the socket is 0600. A folder someone else
owns, or one others may enter, is refused: whoever can reach the socket can run commands as
the user.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# sockaddr_un.sun_path holds 108 bytes on Linux, the terminating NUL included.
MAX_SOCKET_PATH = 107


class ServicePathError(OSError):
    """The service's folder or socket cannot be used safely; the message says why."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{reason}: {str(path)!r}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True, slots=True, kw_only=True)
class ServicePaths:
    """The files of one user's service."""

    folder: Path

    @classmethod
    def default(cls) -> ServicePaths:
        """Return the paths under aimon's data folder (`AIMON_HOME` moves it)."""
        from aimon_core.session import user_data_dir

        return cls(folder=user_data_dir() / "service")

    @property
    def socket(self) -> Path:
        """Return the unix socket clients connect to."""
        return self.folder / "aimon.sock"

    @property
    def lock(self) -> Path:
        """Return the file the running service holds locked (one service per folder)."""
        return self.folder / "serve.lock"

    @property
    def log(self) -> Path:
        """Return where a service started in the background writes its log."""
        return self.folder / "serve.log"

    @property
    def database(self) -> Path:
        """Return the SQLite file of the inbox and the idempotency keys."""
        return self.folder / "service.sqlite3"

    def prepare(self) -> None:
        """Make the folder (0700) if needed and check that only the user can use it."""
        self.folder.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            self.folder.mkdir(mode=0o700)
        self.check()
        if len(os.fsencode(self.socket)) > MAX_SOCKET_PATH:
            raise ServicePathError(self.socket, "the socket path is longer than a unix socket "
                                   "allows (move AIMON_HOME to a shorter path)")

    def check(self) -> None:
        """Refuse a folder that is a link, is not the user's, or others may enter."""
        info = self.folder.lstat()
        if not stat.S_ISDIR(info.st_mode):
            raise ServicePathError(self.folder, "the service folder is not a folder")
        if info.st_uid != os.geteuid():
            raise ServicePathError(self.folder, "the service folder belongs to another user")
        if info.st_mode & 0o077:
            raise ServicePathError(self.folder, "others may enter the service folder "
                                   "(it must be 0700)")


# What a client's environment must share with the service's for the service to run its
# turns: which model, where, with which key, which settings and sandbox (a hash of them; the
# values are never sent). Everything else (PATH, the terminal) is the service's own.
_MODEL_PREFIXES = ("ANTHROPIC_", "OPENAI_")
_MODEL_NAMES = ("AIMON_HOME", "AIMON_PROVIDER", "AIMON_MODEL", "AIMON_CONTEXT_WINDOW",
                "AIMON_NO_LOCAL_PROBE", "AIMON_SANDBOX", "CLAUDE_CONFIG_DIR")


def environment_fingerprint(env: Mapping[str, str]) -> str:
    """Return a hash of the variables that choose the model, the settings and the sandbox."""
    import hashlib

    pairs = sorted((k, v) for k, v in env.items()
                   if k.startswith(_MODEL_PREFIXES) or k in _MODEL_NAMES)
    return hashlib.sha256(repr(pairs).encode("utf-8", "surrogatepass")).hexdigest()[:32]
