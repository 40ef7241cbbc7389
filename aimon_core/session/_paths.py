"""Where aimon keeps user-level files, and how a project maps to a folder name."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import platformdirs

_KEY_LENGTH = 80


def aimon_home() -> Path | None:
    """Return `$AIMON_HOME` if it is set (it overrides every user-level path), else None."""
    home = os.environ.get("AIMON_HOME", "")
    return Path(home).expanduser() if home else None


def user_data_dir() -> Path:
    """Return the folder for sessions and other data: `$AIMON_HOME/data` or the platform's."""
    home = aimon_home()
    return home / "data" if home else Path(platformdirs.user_data_dir("aimon"))


def user_config_dir() -> Path:
    """Return the folder for settings, skills, agents: `$AIMON_HOME/config` or the platform's."""
    home = aimon_home()
    return home / "config" if home else Path(platformdirs.user_config_dir("aimon"))


def project_key(project_root: str) -> str:
    """Return the folder name of a project's sessions, e.g. `-home-me-repo-1a2b3c4d`.

    The readable part is the path with every other character made a dash (cut to 80
    characters); the hash of the exact path keeps two projects whose names sanitize alike apart.
    """
    readable = re.sub(r"[^A-Za-z0-9_-]", "-", project_root)[-_KEY_LENGTH:]
    digest = hashlib.sha256(project_root.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{readable}-{digest}"
