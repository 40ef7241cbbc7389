"""The shell seam: VirtualShell and LocalShell, which runs bash (or a program) in its own group."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from aimon_core.shell._local import (
    BackgroundOutput,
    BackgroundStatus,
    LocalShell,
    ShellResult,
    UnknownShellError,
    cap_text,
    cut_notice,
    has_terminal,
    kill_process_group,
    spawn_process,
    wait_exit,
)
from aimon_core.shell._secrets import (
    MIN_SECRET_LENGTH,
    PROVIDER_KEYS,
    SecretPairs,
    is_secret,
    is_secret_name,
    is_secret_value,
    merge_secrets,
    model_env,
    redact,
    secret_values,
)


@runtime_checkable
class VirtualShell(Protocol):
    """Where shell commands run. Owns background jobs; `close` stops them all."""

    async def run(
        self,
        command: str,
        *,
        cwd: Path,
        timeout: float,  # noqa: ASYNC109 - the seam takes a duration, not a deadline
        env: Mapping[str, str] | None = None,
        output_limit: int | None = None,
    ) -> ShellResult:
        """Run `command` to completion or `timeout` seconds; cancelling kills it."""
        ...

    async def exec(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        timeout: float,  # noqa: ASYNC109 - the seam takes a duration, not a deadline
        env: Mapping[str, str] | None = None,
        output_limit: int | None = None,
    ) -> ShellResult:
        """Run the program `argv` without a shell, otherwise as `run` (OSError if unstartable)."""
        ...

    async def start_background(self, command: str, *, cwd: Path) -> str:
        """Start `command` in the background and return its shell id."""
        ...

    async def read_background(self, shell_id: str) -> BackgroundOutput:
        """Return a job's output since the last read and its status (UnknownShellError)."""
        ...

    async def kill_background(self, shell_id: str) -> BackgroundOutput:
        """Stop a job and return its remaining output (UnknownShellError)."""
        ...

    async def close(self) -> None:
        """Stop every background job."""
        ...


__all__ = [
    "MIN_SECRET_LENGTH",
    "PROVIDER_KEYS",
    "BackgroundOutput",
    "BackgroundStatus",
    "LocalShell",
    "SecretPairs",
    "ShellResult",
    "UnknownShellError",
    "VirtualShell",
    "cap_text",
    "cut_notice",
    "has_terminal",
    "is_secret",
    "is_secret_name",
    "is_secret_value",
    "kill_process_group",
    "merge_secrets",
    "model_env",
    "redact",
    "secret_values",
    "spawn_process",
    "wait_exit",
]
