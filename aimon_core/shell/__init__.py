"""The shell seam: VirtualShell and LocalShell, which runs bash (or a program) in its own group.

The OS sandbox (`Sandbox`, bubblewrap) loads on first use: a run without it never imports it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from aimon_core._lazy import lazy_getattr
from aimon_core.shell._local import (
    BackgroundOutput,
    BackgroundStatus,
    LocalShell,
    OutputSink,
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

if TYPE_CHECKING:
    from aimon_core.shell._boundary import (
        CREDENTIAL_PATHS,
        Boundary,
        SandboxPaths,
        resolve_boundary,
    )
    from aimon_core.shell._credentials import HOME_CREDENTIALS
    from aimon_core.shell._proxy import DomainGate, NetworkVerdict, domain_matches
    from aimon_core.shell._sandbox import (
        NetworkGate,
        Sandbox,
        SandboxConfig,
        SandboxProbe,
        probe_sandbox,
    )

__getattr__ = lazy_getattr(__name__, {
    "HOME_CREDENTIALS": "_credentials",
    "CREDENTIAL_PATHS": "_boundary", "Boundary": "_boundary", "SandboxPaths": "_boundary",
    "resolve_boundary": "_boundary",
    "DomainGate": "_proxy", "NetworkVerdict": "_proxy", "domain_matches": "_proxy",
    "NetworkGate": "_sandbox", "Sandbox": "_sandbox", "SandboxConfig": "_sandbox",
    "SandboxProbe": "_sandbox", "probe_sandbox": "_sandbox",
})


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
        sandbox: bool = True,
        on_output: OutputSink | None = None,
    ) -> ShellResult:
        """Run `command` to completion or `timeout` seconds; cancelling kills it.

        `sandbox=False` asks to run it outside the OS sandbox, if the shell has one.
        `on_output` is told the command's output as it comes (decoded, stdout and stderr).
        """
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

    async def start_background(self, command: str, *, cwd: Path, sandbox: bool = True) -> str:
        """Start `command` in the background and return its shell id (`sandbox` as in `run`)."""
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
    "CREDENTIAL_PATHS",
    "HOME_CREDENTIALS",
    "MIN_SECRET_LENGTH",
    "PROVIDER_KEYS",
    "BackgroundOutput",
    "BackgroundStatus",
    "Boundary",
    "DomainGate",
    "LocalShell",
    "NetworkGate",
    "NetworkVerdict",
    "OutputSink",
    "Sandbox",
    "SandboxConfig",
    "SandboxPaths",
    "SandboxProbe",
    "SecretPairs",
    "ShellResult",
    "UnknownShellError",
    "VirtualShell",
    "cap_text",
    "cut_notice",
    "domain_matches",
    "has_terminal",
    "is_secret",
    "is_secret_name",
    "is_secret_value",
    "kill_process_group",
    "merge_secrets",
    "model_env",
    "probe_sandbox",
    "redact",
    "resolve_boundary",
    "secret_values",
    "spawn_process",
    "wait_exit",
]
