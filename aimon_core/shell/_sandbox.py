"""The OS sandbox of the model's commands: bubblewrap, a private network, a proxy that asks.

Every command a `LocalShell` with a `Sandbox` runs (foreground and background) starts as

    nsenter (the session's network namespace) -- bwrap (mounts, namespaces, seccomp) -- bash -c

- the file system is read-only but for the boundary `_boundary` resolves for each command;
- its own pid namespace: aimon and every other process of the machine are invisible (no
  `/proc/<aimon>/environ`), and when the command's shell exits, the namespace's init exits and
  the kernel kills whatever the command left behind, double forks and `setsid` included;
- its own user, IPC and UTS namespaces, no capabilities, no new user namespaces, its own `/dev`
  (no terminal of aimon's to reach), and the seccomp filter of `_seccomp`;
- the session's network namespace (`_netns`): no network but aimon's proxy (`_proxy`), which
  asks the `NetworkGate` before each connection;
- the environment the shell computed (provider keys already removed), plus `TMPDIR` (the
  session's temporary folder) and the proxy variables.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import logging
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from aimon_core.shell._boundary import (
    Boundary,
    Placeholders,
    SandboxPaths,
    mount_args,
    resolve_boundary,
)
from aimon_core.shell._netns import (
    NetworkNamespaceError,
    SessionNetwork,
    open_network,
    readable,
)
from aimon_core.shell._proxy import NetworkProxy, NetworkVerdict
from aimon_core.shell._seccomp import SeccompUnsupportedError, filter_program

if TYPE_CHECKING:
    from aimon_core.shell._local import ShellResult

log = logging.getLogger(__name__)

NetworkGate = Callable[[str, int, str], Awaitable[NetworkVerdict]]
"""Decide whether a sandboxed command (its text) may reach host:port through the proxy."""

# Words in a failed command's output that mean the sandbox may have been in the way.
_SIGNS = ("Read-only file system", "Operation not permitted", "Network is unreachable",
          "Temporary failure in name resolution", "Could not resolve host",
          "Name or service not known", "Connection refused", "CONNECT tunnel failed")
_NO_PROXY = "localhost,127.0.0.1,::1"
# How long a finished command may take to empty its pid namespace before the shell goes on.
_SETTLE_SECONDS = 5.0
# How long placeholders stay after the last command that used them (the next one reuses them).
_LINGER_SECONDS = 1.0
# No --new-session: it costs a scheduler autogroup per command (5-10 ms on a busy machine),
# and the command has no terminal to reach anyway (its /dev is its own; stdin is /dev/null;
# with a terminal, spawn_process already starts it in a session of its own).
_NAMESPACES = ("--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
               "--unshare-cgroup-try", "--disable-userns", "--die-with-parent",
               "--cap-drop", "ALL")
_INSTALL = {"debian": "sudo apt-get install {}", "ubuntu": "sudo apt-get install {}",
            "fedora": "sudo dnf install {}", "rhel": "sudo dnf install {}",
            "arch": "sudo pacman -S {}", "suse": "sudo zypper install {}",
            "alpine": "sudo apk add {}"}


def _pipe_with(data: bytes) -> int:
    """Return the read end of a pipe that holds `data` and then ends (at most 64 KiB)."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, data)
    finally:
        os.close(write_end)
    return read_end


async def _child_pid(info: int) -> int | None:
    """Read bubblewrap's `--info-fd` report (non-blocking `info`); its child's pid, if any."""
    data = b""
    while True:
        await readable(info)
        try:
            chunk = os.read(info, 4096)
        except BlockingIOError:
            continue
        if not chunk:
            break
        data += chunk
    try:
        pid = json.loads(data).get("child-pid")
    except (ValueError, AttributeError):
        return None
    return pid if isinstance(pid, int) else None


async def _pid_gone(pid: int) -> None:
    """Wait until process `pid` (not necessarily a child of aimon) has exited."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # gone already (or a kernel before 5.3: the pid namespace ends anyway)
        return
    try:
        await readable(pidfd)
    finally:
        os.close(pidfd)


async def _refuse_all(host: str, port: int, command: str) -> NetworkVerdict:
    return NetworkVerdict(allowed=False, reason="no network access was configured")


def _never(command: str) -> bool:
    return False


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxConfig:
    """How a shell's sandbox is built, from the `sandbox` settings.

    Args:
        excluded: tells whether a command is one of `excludedCommands` (runs outside).
        allow_unsandboxed: `allowUnsandboxedCommands`: a command may ask to run outside.
        unix_sockets: `network.allowAllUnixSockets`: new Unix sockets are not refused.
    """

    paths: SandboxPaths
    excluded: Callable[[str], bool] = _never
    allow_unsandboxed: bool = True
    unix_sockets: bool = False

    def runs_inside(self, command: str, *, leave: bool = False) -> bool:
        """Tell whether `command` runs in the sandbox (`leave`: the call asked to run outside)."""
        return not (leave and self.allow_unsandboxed) and not self.excluded(command)


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxProbe:
    """Whether the sandbox can run here; if not, what is missing and how to install it."""

    bwrap: str | None
    nsenter: str | None
    missing: tuple[str, ...] = ()
    problem: str = ""
    install: str = ""

    @property
    def available(self) -> bool:
        """Tell whether sandboxed commands can run."""
        return not self.missing and not self.problem

    def describe(self) -> str:
        """Say in one line why the sandbox cannot run ("" when it can)."""
        if self.missing:
            text = f"missing {', '.join(self.missing)}"
            return f"{text}; install with: {self.install}" if self.install else text
        return self.problem


def _install_command(packages: Sequence[str]) -> str:
    try:
        release = Path("/etc/os-release").read_text(errors="replace")
    except OSError:
        release = ""
    fields = dict(line.split("=", 1) for line in release.splitlines() if "=" in line)
    ids = f"{fields.get('ID', '')} {fields.get('ID_LIKE', '')}".replace('"', "").split()
    template = next((_INSTALL[i] for i in ids if i in _INSTALL), _INSTALL["debian"])
    return template.format(" ".join(packages))


@functools.cache
def probe_sandbox() -> SandboxProbe:
    """Find out once whether bubblewrap can build the sandbox here (a trial run, ~5 ms)."""
    if platform.system() != "Linux":
        return SandboxProbe(bwrap=None, nsenter=None,
                            problem=f"the sandbox runs on Linux only, not {platform.system()}")
    bwrap, nsenter = shutil.which("bwrap"), shutil.which("nsenter")
    missing = [name for name, found in (("bubblewrap (bwrap)", bwrap),
                                        ("nsenter (util-linux)", nsenter)) if found is None]
    if missing:
        packages = [p for p, found in (("bubblewrap", bwrap), ("util-linux", nsenter))
                    if found is None]
        return SandboxProbe(bwrap=bwrap, nsenter=nsenter, missing=tuple(missing),
                            install=_install_command(packages))
    assert bwrap is not None
    try:
        filter_program()
    except SeccompUnsupportedError as exc:
        return SandboxProbe(bwrap=bwrap, nsenter=nsenter, problem=str(exc))
    try:
        done = subprocess.run([bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                               "--unshare-net", *_NAMESPACES, "true"],
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxProbe(bwrap=bwrap, nsenter=nsenter, problem=f"bwrap cannot run: {exc}")
    if done.returncode != 0:
        detail = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "no message"
        return SandboxProbe(
            bwrap=bwrap, nsenter=nsenter,
            problem=f"bwrap cannot build a sandbox here ({detail}); unprivileged user "
            "namespaces may be switched off (kernel.unprivileged_userns_clone, or AppArmor's "
            "kernel.apparmor_restrict_unprivileged_userns)")
    return SandboxProbe(bwrap=bwrap, nsenter=nsenter)


@dataclass(slots=True, kw_only=True)
class _Run:
    """One sandboxed process: its command, placeholders, the refusals it met, and a future
    set once it and everything in its pid namespace are gone."""

    tag: str
    command: str
    held: tuple[Path, ...]
    gone: asyncio.Future[None]
    refused: list[str] = field(default_factory=list)
    # The call asked to run outside, which the settings do not allow: it ran inside.
    kept_in: bool = False


class Sandbox:
    """Run a shell's commands under bubblewrap (see the module docs); one per shell.

    `gate` decides the proxy's connections; the runtime sets it to one that reads the
    allowed domains and asks the user. The network namespace, the proxy and the temporary
    folder are made on the first command and ended by `close`.
    """

    def __init__(self, config: SandboxConfig, probe: SandboxProbe, *,
                 gate: NetworkGate = _refuse_all, temp_root: Path | None = None) -> None:
        if not probe.available or probe.bwrap is None:
            raise ValueError(f"the sandbox cannot run: {probe.describe()}")
        self.config = config
        self.probe = probe
        self.gate = gate
        self._bwrap = probe.bwrap
        self._temp_root = temp_root
        self._temp: Path | None = None
        self._network: SessionNetwork | None = None
        self._network_problem = ""
        self._proxy: NetworkProxy | None = None
        self._start_lock = asyncio.Lock()
        self._placeholders = Placeholders()
        self._sweeper: asyncio.TimerHandle | None = None
        self._runs: dict[int, _Run] = {}
        self._tags = itertools.count(1)
        self._reapers: set[asyncio.Task[None]] = set()
        self._seccomp = filter_program(unix_sockets=config.unix_sockets)

    @property
    def temp(self) -> Path | None:
        """Return the session's temporary folder (None until the first command)."""
        return self._temp

    @property
    def network_problem(self) -> str:
        """Return why commands have no network at all ("" when the proxy runs)."""
        return self._network_problem

    def boundary(self) -> Boundary:
        """Return the boundary a command started now would get."""
        temp = self._temp or Path(self._temp_root or tempfile.gettempdir()) / "aimon-sandbox-…"
        return resolve_boundary(self.config.paths, temp, self._placeholders.ours())

    async def _start(self) -> None:
        async with self._start_lock:
            if self._temp is not None:
                return
            root = self._temp_root or Path(tempfile.gettempdir())
            self._temp = Path(await asyncio.to_thread(
                tempfile.mkdtemp, prefix="aimon-sandbox-", dir=root))
            assert self.probe.nsenter is not None
            try:
                network = await open_network(self._bwrap, self.probe.nsenter)
            except NetworkNamespaceError as exc:
                self._network_problem = str(exc)
                log.warning("sandboxed commands get no network: %s", exc)
                return
            proxy = NetworkProxy(self._decide, on_refused=self._refused)
            await proxy.serve(network.listener)
            self._network, self._proxy = network, proxy

    async def spawn(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
                    label: str = "", kept_in: bool = False) -> asyncio.subprocess.Process:
        """Start `argv` in the sandbox as `spawn_process` would start it (OSError if not).

        `kept_in`: the call asked to run outside, and the settings said no (its result says so).
        """
        from aimon_core.shell._local import spawn_process

        await self._start()
        assert self._temp is not None
        boundary = resolve_boundary(self.config.paths, self._temp, self._placeholders.ours())
        held = self._placeholders.hold(boundary)
        tag = f"cmd{next(self._tags)}"
        info_read, info_write = os.pipe()
        os.set_blocking(info_read, False)
        passed = [_pipe_with(self._seccomp), info_write]

        def empty() -> int:
            passed.append(_pipe_with(b""))
            return passed[-1]

        try:
            prefix, fds = self._network_prefix()
            full = (*prefix, self._bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc",
                    "/proc", *mount_args(boundary, empty), *_NAMESPACES,
                    *(() if self._network is not None else ("--unshare-net",)),
                    "--seccomp", str(passed[0]), "--info-fd", str(info_write), "--chdir",
                    str(cwd), "--", *argv)
            proc = await spawn_process(*full, cwd=cwd, env=self._env(env, tag),
                                       pass_fds=(*fds, *passed))
        except BaseException:
            self._placeholders.release(held)
            os.close(info_read)
            raise
        finally:
            for fd in passed:
                os.close(fd)
        loop = asyncio.get_running_loop()
        run = _Run(tag=tag, command=label or " ".join(argv), held=held,
                   gone=loop.create_future(), kept_in=kept_in)
        self._runs[proc.pid] = run
        reaper = loop.create_task(self._reap(proc, run, info_read))
        self._reapers.add(reaper)
        reaper.add_done_callback(self._reapers.discard)
        return proc

    def _network_prefix(self) -> tuple[tuple[str, ...], tuple[int, ...]]:
        if self._network is None:
            return (), ()
        return self._network.enter_argv(), self._network.fds

    def _env(self, env: Mapping[str, str], tag: str) -> dict[str, str]:
        assert self._temp is not None
        temp = str(self._temp)
        out = {**env, "TMPDIR": temp, "TMP": temp, "TEMP": temp}
        if self._network is not None:
            from aimon_core.shell._netns import PROXY_PORT

            url = f"http://{tag}:aimon@127.0.0.1:{PROXY_PORT}"
            for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
                out[name] = out[name.lower()] = url
            out["NO_PROXY"] = out["no_proxy"] = _NO_PROXY
        return out

    async def _reap(self, proc: asyncio.subprocess.Process, run: _Run, info: int) -> None:
        """Wait until the command and its pid namespace are gone, then let go of its mounts.

        bubblewrap's first process exits as soon as it is killed; the namespace's init (its
        child, `--info-fd` names it) exits only after every process in the namespace has.
        """
        from aimon_core.shell._local import wait_exit

        try:
            init = await _child_pid(info)
            await wait_exit(proc)
            if init is not None:
                await _pid_gone(init)
        finally:
            os.close(info)
            if self._proxy is not None:
                self._proxy.drop(run.tag)
            if self._placeholders.release(run.held):
                self._sweeper = asyncio.get_running_loop().call_later(
                    _LINGER_SECONDS, self._placeholders.sweep)
            if not run.gone.done():
                run.gone.set_result(None)

    async def settled(self, proc: asyncio.subprocess.Process) -> None:
        """Wait until a sandboxed process and all it started are gone (others: at once)."""
        run = self._runs.get(proc.pid)
        if run is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(run.gone), _SETTLE_SECONDS)

    async def _decide(self, host: str, port: int, tag: str | None) -> NetworkVerdict:
        run = next((r for r in self._runs.values() if r.tag == tag), None)
        return await self.gate(host, port, run.command if run is not None else "")

    def _refused(self, tag: str | None, host: str, port: int, reason: str) -> None:
        runs = [r for r in self._runs.values() if r.tag == tag] or list(self._runs.values())
        for run in runs:
            note = f"{host}:{port} ({reason})"
            if note not in run.refused:
                run.refused.append(note)

    def explain(self, proc: asyncio.subprocess.Process, result: ShellResult) -> ShellResult:
        """Add to a finished command's result what the sandbox refused or may have caused."""
        run = self._runs.pop(proc.pid, None)
        if run is None:  # not a sandboxed command
            return result
        notes: list[str] = []
        if run.kept_in:
            notes.append("[aimon sandbox: dangerouslyDisableSandbox was not honoured: "
                         "sandbox.allowUnsandboxedCommands is false, so it ran in the sandbox]")
        if run.refused:
            notes.append("[aimon sandbox: network access refused: " + "; ".join(run.refused)
                         + "]")
        failed = result.timed_out or bool(result.exit_code)
        text = result.stdout + result.stderr
        if failed and (notes or any(sign in text for sign in _SIGNS)):
            notes.append(self._hint())
        if not notes:
            return result
        return replace(result, stderr=result.stderr.rstrip("\n") + "\n" + "\n".join(notes))

    def _hint(self) -> str:
        paths = self.config.paths
        where = ", ".join(str(p) for p in (paths.project, *paths.extra_dirs, *paths.allow_write,
                                           self._temp) if p)
        network = (f"no network at all ({self._network_problem})" if self._network_problem
                   else "the network only through aimon's proxy, for allowed domains")
        text = (f"[aimon sandbox: this command ran in the sandbox: it may write only in {where} "
                f"($TMPDIR), not in .git/config, .git/hooks, .aimon, .claude or .mcp.json there, "
                f"and reach {network}. ")
        if self.config.allow_unsandboxed:
            return text + ("If the sandbox caused this failure, run the command again with "
                           "dangerouslyDisableSandbox: true; the user will be asked.]")
        return text + ("Running outside the sandbox is switched off "
                       "(sandbox.allowUnsandboxedCommands): tell the user which path "
                       "(sandbox.filesystem.allowWrite) or domain "
                       "(sandbox.network.allowedDomains) the command needs.]")

    async def close(self) -> None:
        """Stop the proxy, leave the network namespace and remove the temporary folder."""
        if self._proxy is not None:
            await self._proxy.close()
        if self._network is not None:
            self._network.close()
        if self._reapers:
            await asyncio.wait(self._reapers, timeout=1.0)
        if self._sweeper is not None:
            self._sweeper.cancel()
        self._placeholders.sweep()
        if self._temp is not None:
            await asyncio.to_thread(shutil.rmtree, self._temp, True)
        self._proxy = self._network = self._temp = None
