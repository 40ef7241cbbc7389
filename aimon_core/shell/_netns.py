"""The session's network namespace: only a loopback, where aimon's proxy listens.

Every sandboxed command of a session runs in one network namespace of its own, with nothing
but a loopback interface: it cannot reach the machine's network, nor servers listening on the
machine's loopback. aimon's HTTP proxy listens *inside* that namespace, at
`127.0.0.1:PROXY_PORT`, yet runs in aimon's own event loop: a socket stays in the namespace it
was created in, whoever accepts on it. So a short-lived helper creates the namespace (with
bubblewrap, which also brings its loopback up), binds the listening socket there, hands it to
aimon over a socketpair, and exits; aimon keeps the listening socket and open handles on the
namespace (and on the user namespace that owns it), and each command enters them with
`nsenter` before bubblewrap builds its own sandbox. Nothing is bridged, nothing runs per
command besides the command, and servers the commands start reach each other (a test suite
against a dev server started in the background).

Claude Code's sandbox runtime gives each command a fresh network namespace and bridges it to
a proxy on the machine with two `socat` relays per command; this is the same boundary, the
relays replaced by the namespace's own listening socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

PROXY_PORT = 3128
_HELLO = 64
_START_SECONDS = 10.0

# Run by the helper (`python -I -S -c`): bind the proxy's port in the new namespace, send the
# socket and the helper's pid to aimon, wait for aimon to open the namespaces, exit.
_HELPER = """\
import os, socket, sys
channel = socket.socket(fileno=int(sys.argv[1]))
listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
listener.bind(("127.0.0.1", int(sys.argv[2])))
listener.listen(128)
socket.send_fds(channel, [str(os.getpid()).encode()], [listener.fileno()])
channel.recv(1)
"""


async def readable(fd: int) -> None:
    """Wait until `fd` can be read, or has ended (a pipe, a socket, a pidfd)."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await ready
    finally:
        loop.remove_reader(fd)


class NetworkNamespaceError(RuntimeError):
    """The session's network namespace could not be made; the message says why."""


@dataclass(slots=True, kw_only=True)
class SessionNetwork:
    """Handles on a session's network namespace: its proxy listener and namespace files.

    `enter_argv` is what a command's argv starts with to run inside; pass `fds` to it.
    """

    listener: socket.socket
    user_fd: int
    net_fd: int
    nsenter: str

    @property
    def fds(self) -> tuple[int, int]:
        """Return the descriptors a command's process must inherit."""
        return (self.user_fd, self.net_fd)

    def enter_argv(self) -> tuple[str, ...]:
        """Return the `nsenter` prefix that runs the rest of an argv inside the namespace."""
        return (self.nsenter, "--preserve-credentials", f"--user=/proc/self/fd/{self.user_fd}",
                f"--net=/proc/self/fd/{self.net_fd}", "--")

    def close(self) -> None:
        """Let go of the namespace (it ends when no command is left in it)."""
        self.listener.close()
        for fd in (self.user_fd, self.net_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


async def open_network(bwrap: str, nsenter: str, port: int = PROXY_PORT) -> SessionNetwork:
    """Make a session's network namespace and return its handles.

    Raises NetworkNamespaceError if the helper fails or does not answer in time.
    """
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    # No --dev: unprivileged, bubblewrap would then run the helper in a second, nested user
    # namespace, and a process that enters that one has no say over the network namespace
    # (owned by the first): nsenter fails with EPERM.
    argv = (bwrap, "--unshare-user", "--unshare-net", "--die-with-parent", "--ro-bind", "/",
            "/", "--", sys.executable, "-I", "-S", "-c", _HELPER, str(theirs.fileno()),
            str(port))
    try:
        helper = await asyncio.create_subprocess_exec(
            *argv, pass_fds=(theirs.fileno(),), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    except OSError as exc:
        ours.close()
        theirs.close()
        raise NetworkNamespaceError(f"cannot start {bwrap}: {exc.strerror or exc}") from None
    theirs.close()
    try:
        network = await asyncio.wait_for(_receive(ours, helper, nsenter), _START_SECONDS)
    except TimeoutError:
        raise NetworkNamespaceError("the network namespace helper did not answer") from None
    finally:
        ours.close()
        if helper.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                helper.kill()
        await helper.wait()
    await _check_entry(network)
    return network


async def _check_entry(network: SessionNetwork) -> None:
    """Enter the namespace once, as each command will; raise NetworkNamespaceError if not."""
    try:
        trial = await asyncio.create_subprocess_exec(
            *network.enter_argv(), "true", pass_fds=network.fds,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE)
        _, stderr = await asyncio.wait_for(trial.communicate(), _START_SECONDS)
    except (OSError, TimeoutError) as exc:
        network.close()
        raise NetworkNamespaceError(f"cannot enter the network namespace: {exc}") from None
    if trial.returncode != 0:
        network.close()
        raise NetworkNamespaceError("cannot enter the network namespace: "
                                    + (stderr.decode(errors="replace").strip() or "no reason"))


async def _receive(ours: socket.socket, helper: asyncio.subprocess.Process,
                   nsenter: str) -> SessionNetwork:
    """Take the listener from the helper, open its namespaces, then let it exit."""
    ours.setblocking(False)
    await readable(ours.fileno())
    try:
        message, fds, _, _ = socket.recv_fds(ours, _HELLO, 1)
    except OSError as exc:
        raise NetworkNamespaceError(f"the helper sent nothing: {exc}") from None
    if not fds:
        stderr = await helper.stderr.read() if helper.stderr is not None else b""
        raise NetworkNamespaceError(
            "the network namespace helper failed: "
            + (stderr.decode(errors="replace").strip() or "no listener received"))
    listener = socket.socket(fileno=fds[0])
    try:
        pid = int(message.decode())
        proc = Path("/proc") / str(pid) / "ns"
        user_fd = os.open(proc / "user", os.O_RDONLY | os.O_CLOEXEC)
        try:
            net_fd = os.open(proc / "net", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            os.close(user_fd)
            raise
    except (OSError, ValueError) as exc:
        listener.close()
        raise NetworkNamespaceError(f"cannot open the helper's namespaces: {exc}") from None
    with contextlib.suppress(OSError):
        ours.send(b".")  # the helper may exit now
    listener.setblocking(False)
    return SessionNetwork(listener=listener, user_fd=user_fd, net_fd=net_fd, nsenter=nsenter)
