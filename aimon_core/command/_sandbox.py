"""/sandbox: whether the OS sandbox can run here (what is missing, how to install it), its mode,
and the boundary it gives the model's commands, resolved to paths as a command started now
would get it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from aimon_core.command._registry import CommandError, CommandHost, CommandOutcome, SlashCommand

if TYPE_CHECKING:
    from aimon_core.config import LoadedSettings, SandboxSettings
    from aimon_core.permission import PermissionPolicy
    from aimon_core.shell import Boundary, SandboxProbe

_TURN_ON = 'turn it on with "sandbox": {"enabled": true} in a settings file, or aimon --sandbox'


def _home(path: Path) -> str:
    try:
        home = Path.home()
    except RuntimeError:
        return str(path)
    return f"~/{path.relative_to(home)}" if path.is_relative_to(home) and path != home else \
        str(path)


def _paths(paths: tuple[Path, ...]) -> str:
    return ", ".join(_home(p) for p in paths) or "(none)"


def mode_line(settings: SandboxSettings, probe: SandboxProbe | None, active: bool) -> str:
    """Say in one line whether the sandbox is on and how commands are approved."""
    if not settings.enabled:
        return f"Sandbox: off. Bash commands run without an OS sandbox; {_TURN_ON}."
    if not active:
        problem = (probe.describe() if probe is not None else "") or "not set up here"
        return (f"Sandbox: on, but it cannot run here: {problem}. Bash commands run without "
                "it; the permission rules apply as they are.")
    if settings.auto_allow:
        return ("Sandbox: on, auto-allow (autoAllowBashIfSandboxed): Bash commands run in the "
                "sandbox without asking; deny and ask rules still apply.")
    return ("Sandbox: on, regular permissions: Bash commands run in the sandbox and are asked "
            "about as without it.")


def boundary_lines(boundary: Boundary, settings: SandboxSettings) -> list[str]:
    """Return the resolved boundary, one aspect a line."""
    held = (*boundary.held_dirs, *boundary.held_files)
    lines = [
        "Boundary (resolved now):",
        f"  writable:        {_paths(boundary.writable)}, and a temporary folder per session "
        "($TMPDIR)",
        f"  read-only there: {_paths(boundary.read_only)}",
    ]
    if held:
        lines.append(f"  kept from being made: {_paths(held)}")
    lines += [
        "  everything else: read-only",
        f"  unreadable:      {_paths(boundary.unreadable)}",
    ]
    if boundary.readable:
        lines.append(f"  readable again:  {_paths(boundary.readable)}")
    allowed = ", ".join(settings.allowed_domains) or "none"
    denied = f"; denied: {', '.join(settings.denied_domains)}" if settings.denied_domains else ""
    lines += [
        f"  network:         only through aimon's proxy; allowed: {allowed}{denied}; "
        "WebFetch(domain:...) allow rules count too; any other domain is asked the first time "
        "(print mode: refused)",
        "  unix sockets:    " + ("allowed (allowAllUnixSockets)" if settings.allow_all_unix_sockets
                                 else "new ones refused (seccomp)"),
        "  processes:       their own pid namespace: aimon's are invisible, nothing outlives "
        "a command",
    ]
    lines += [f"  not applied: {note}" for note in boundary.skipped]
    if settings.allow_unix_sockets:
        lines.append("  not applied: network.allowUnixSockets names paths, which Linux cannot "
                     "filter; use network.allowAllUnixSockets")
    return lines


def sandbox_text(settings: LoadedSettings | None, policy: PermissionPolicy | None,
                 probe: SandboxProbe) -> str:
    """Return what /sandbox shows (CommandError without settings)."""
    from aimon_core.permission import sandbox_paths
    from aimon_core.shell import resolve_boundary

    if settings is None:
        raise CommandError("the settings are not loaded here.")
    merged = settings.settings.sandbox
    active = policy is not None and policy.sandbox is not None
    lines = [mode_line(merged, probe, active)]
    where = _origin(settings)
    if where:
        lines.append(f"  (sandbox.enabled from {where})")
    lines.append("Available here: yes (bubblewrap at " + f"{probe.bwrap})" if probe.available
                 else f"Available here: no: {probe.describe()}")
    fallback = ("allowed: a command that failed because of the sandbox may ask to run outside "
                "it (always a question)" if merged.allow_unsandboxed
                else "off (allowUnsandboxedCommands: false): every command runs inside")
    lines.append(f"Unsandboxed fallback: {fallback}")
    lines.append(f"Excluded commands (normal rules, outside the sandbox): "
                 f"{', '.join(merged.excluded_commands) or '(none)'}")
    if policy is not None:
        paths = (policy.sandbox.config.paths if policy.sandbox is not None
                 else sandbox_paths(merged, policy.project_root, policy.extra_dirs))
        temp = Path("$TMPDIR")
        lines += ["", *boundary_lines(resolve_boundary(paths, temp), merged)]
    return "\n".join(lines)


def _origin(settings: LoadedSettings | None) -> str:
    if settings is None or "sandbox.enabled" not in settings.origin:
        return ""
    layer = settings.origin["sandbox.enabled"]
    path = next((s.path for s in settings.sources if s.layer is layer), None)
    return _home(path) if path is not None else "the command line (--sandbox)"


async def _sandbox(args: str, host: CommandHost) -> CommandOutcome:
    import asyncio

    from aimon_core.shell import probe_sandbox

    if args:
        raise CommandError("/sandbox takes no arguments.")
    if host.policy is None:
        await host.live_session()
    probe = await asyncio.to_thread(probe_sandbox)
    text = await asyncio.to_thread(sandbox_text, host.settings, host.policy, probe)
    return CommandOutcome.message(text)


def sandbox_commands() -> tuple[SlashCommand, ...]:
    """Return /sandbox."""
    return (SlashCommand(name="sandbox", run=_sandbox,
                         description="Show the OS sandbox: available here, its mode, its "
                         "boundary"),)
