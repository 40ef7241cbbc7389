"""The OS sandbox in a runtime: set up once from the settings, one per shell, bound to a session.

`sandbox_setup` reads the merged `sandbox` settings (the `--sandbox` flag is their flags layer)
when the runtime is built: if the sandbox is on but cannot run here, it says so once, with the
install command, and the permission rules stay as they are (`failIfUnavailable: true` makes
that an error). When it can run, the permission policy learns of it (auto-allow, excluded
commands, calls that ask to leave it), and every shell the runtime makes gets a `Sandbox`
whose network questions go to the session that shell belongs to. Sandbox settings are read
at start only: a reload that changes them says they apply when aimon starts again, so the
policy and the shells never disagree about whether a command is contained.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aimon_core.config import SandboxSettings
    from aimon_core.live import LiveSession
    from aimon_core.permission import PermissionPolicy
    from aimon_core.shell import Sandbox, SandboxConfig, SandboxProbe


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxSetup:
    """The sandbox settings of a runtime, whether it can run here, and how it is built.

    `probe` is None when the sandbox is off (nothing was checked); `config` is None unless it
    is on and can run.
    """

    settings: SandboxSettings
    probe: SandboxProbe | None = None
    config: SandboxConfig | None = None


def sandbox_setup(settings: SandboxSettings, policy: PermissionPolicy, notices: list[str],
                  probe: SandboxProbe | None = None) -> SandboxSetup:
    """Set the sandbox up for a runtime; add a notice if it is on but cannot run.

    `probe` says whether it can run (default: `probe_sandbox()`, once per process). Raises
    RuntimeSetupError when it cannot run and `failIfUnavailable` is set.
    """
    if not settings.enabled:
        return SandboxSetup(settings=settings)
    from aimon_core.permission import SandboxedBash, excluded_matcher, sandbox_paths
    from aimon_core.runtime._parts import RuntimeSetupError
    from aimon_core.shell import SandboxConfig, probe_sandbox

    probe = probe or probe_sandbox()
    if not probe.available:
        problem = probe.describe()
        if settings.fail_if_unavailable:
            raise RuntimeSetupError(f"the sandbox is on with failIfUnavailable, but it cannot "
                                    f"run here: {problem}")
        notices.append(f"The sandbox is on but cannot run here: {problem}. Commands run "
                       "without it; the permission rules apply as they are.")
        return SandboxSetup(settings=settings, probe=probe)
    paths = sandbox_paths(settings, policy.project_root, policy.extra_dirs)
    config = SandboxConfig(paths=paths, excluded=excluded_matcher(settings.excluded_commands),
                           allow_unsandboxed=settings.allow_unsandboxed,
                           unix_sockets=settings.allow_all_unix_sockets)
    policy.sandbox = SandboxedBash(config=config, auto_allow=settings.auto_allow)
    return SandboxSetup(settings=settings, probe=probe, config=config)


def shell_sandbox(setup: SandboxSetup | None, policy: PermissionPolicy) -> Sandbox | None:
    """Return a new shell's sandbox (None when the sandbox is off or cannot run)."""
    if setup is None or setup.config is None or setup.probe is None:
        return None
    from aimon_core.permission import NetworkQuestions
    from aimon_core.shell import Sandbox

    gate = NetworkQuestions(policy, allowed=setup.settings.allowed_domains,
                            denied=setup.settings.denied_domains)
    return Sandbox(setup.config, setup.probe, gate=gate)


def bind_session(live: LiveSession) -> None:
    """Send the network questions of `live`'s sandbox to `live` (no sandbox: nothing)."""
    from aimon_core.permission import NetworkQuestions

    sandbox = getattr(live.tool_context.shell, "sandbox", None)
    gate = getattr(sandbox, "gate", None)
    if isinstance(gate, NetworkQuestions):
        gate.turn = live.command_turn()
