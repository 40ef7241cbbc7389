"""Permission modes: how much the policy allows before it asks, and the root check for bypass."""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping

SANDBOX_VARIABLE = "AIMON_SANDBOX"


class PermissionMode(enum.StrEnum):
    """How the policy treats calls that no rule decides."""

    DEFAULT = "default"
    ACCEPT_EDITS = "acceptEdits"
    PLAN = "plan"
    BYPASS = "bypassPermissions"

    @property
    def summary(self) -> str:
        """Say in a few words what the mode does."""
        return _SUMMARIES[self]


_SUMMARIES = {
    PermissionMode.DEFAULT: "ask before anything no rule allows",
    PermissionMode.ACCEPT_EDITS: "edit files in the project without asking; commands still ask",
    PermissionMode.PLAN: "read-only: explore and present a plan, change nothing",
    PermissionMode.BYPASS: "allow everything except deny rules",
}


class PermissionModeError(ValueError):
    """A permission mode is unknown, or may not be used here."""

    def __init__(self, mode: str, reason: str) -> None:
        super().__init__(reason)
        self.mode = mode
        self.reason = reason


def parse_mode(text: str) -> PermissionMode:
    """Return the mode named ``text`` (case-insensitive); raise PermissionModeError if unknown."""
    wanted = text.strip().lower()
    for mode in PermissionMode:
        if mode.value.lower() == wanted:
            return mode
    choices = ", ".join(mode.value for mode in PermissionMode)
    raise PermissionModeError(text, f"unknown permission mode {text!r}; choose one of: {choices}")


def check_bypass_allowed(env: Mapping[str, str] | None = None, euid: int | None = None) -> None:
    """Raise PermissionModeError if bypassPermissions may not be used (root outside a sandbox).

    Args:
        env: the environment to read ``AIMON_SANDBOX`` from (default: ``os.environ``).
        euid: the effective user id (default: ``os.geteuid()``; -1 where there is none).
    """
    env = os.environ if env is None else env
    if euid is None:
        geteuid = getattr(os, "geteuid", None)
        euid = geteuid() if geteuid is not None else -1
    if euid == 0 and env.get(SANDBOX_VARIABLE) != "1":
        raise PermissionModeError(
            PermissionMode.BYPASS.value,
            f"{PermissionMode.BYPASS.value} is refused when running as root; set "
            f"{SANDBOX_VARIABLE}=1 if this machine is a sandbox (a throwaway container or VM)",
        )
