"""LocalShell: bash commands as subprocesses in their own process group."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import errno
import itertools
import os
import signal
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from aimon_core.shell._sandbox import Sandbox

from aimon_core.shell._secrets import model_env


def cut_notice(count: int) -> str:
    """Return the marker put where output was cut."""
    return f"\n\n... {count} characters cut ...\n\n"


def cap_text(text: str, limit: int, *, already_cut: int = 0) -> str:
    """Keep at most `limit` characters of `text`: its head and tail around a notice."""
    if len(text) <= limit and not already_cut:
        return text
    if len(text) <= limit:
        half = len(text) // 2
        return text[:half] + cut_notice(already_cut) + text[half:]
    head = limit // 2
    tail = limit - head
    cut = len(text) - head - tail + already_cut
    return text[:head] + cut_notice(cut) + text[len(text) - tail :]


class HeadTailCapture:
    """Keep the first and last `limit` characters of a byte stream; count the rest."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._head: list[str] = []
        self._head_len = 0
        self._tail = ""
        self.dropped = 0

    def feed(self, chunk: bytes, *, final: bool = False) -> None:
        """Add bytes read from the stream."""
        text = self._decoder.decode(chunk, final)
        room = self.limit - self._head_len
        if room > 0:
            self._head.append(text[:room])
            self._head_len += min(room, len(text))
            text = text[room:]
        if text:
            self._tail += text
            excess = len(self._tail) - self.limit
            if excess > 0:
                self._tail = self._tail[excess:]
                self.dropped += excess

    def text(self, limit: int | None = None) -> str:
        """Return the captured text, at most `limit` characters plus a cut notice."""
        return cap_text(
            "".join(self._head) + self._tail, limit or self.limit, already_cut=self.dropped
        )


class UnreadBuffer:
    """Output of a background job not read yet; the oldest text goes first when it is full."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._text = ""
        self._dropped = 0

    def feed(self, chunk: bytes, *, final: bool = False) -> None:
        """Add bytes read from the stream."""
        self._text += self._decoder.decode(chunk, final)
        excess = len(self._text) - self.limit
        if excess > 0:
            self._text = self._text[excess:]
            self._dropped += excess

    def take(self) -> str:
        """Return the text added since the last call and forget it."""
        text = self._text
        if self._dropped:
            text = (
                f"... {self._dropped} earlier characters were dropped (not read in time) ...\n"
                + text
            )
        self._text, self._dropped = "", 0
        return text


# Told each piece of a running command's output (stdout and stderr alike), decoded.
OutputSink = Callable[[str], None]


class _Told:
    """Decodes a stream's bytes as they come and tells them to an `OutputSink`."""

    def __init__(self, sink: OutputSink) -> None:
        self._sink = sink
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, chunk: bytes, *, final: bool = False) -> None:
        if text := self._decoder.decode(chunk, final):
            self._sink(text)


async def pump(stream: asyncio.StreamReader | None, sink: HeadTailCapture | UnreadBuffer,
               told: OutputSink | None = None) -> None:
    """Copy `stream` into `sink` until end of file (and tell `told` each piece)."""
    if stream is None:
        return
    tee = _Told(told) if told is not None else None
    while chunk := await stream.read(65536):
        sink.feed(chunk)
        if tee is not None:
            tee.feed(chunk)
    sink.feed(b"", final=True)
    if tee is not None:
        tee.feed(b"", final=True)


BackgroundStatus = Literal["running", "completed", "failed", "killed"]

# After bash exits, how long its output pipes may stay open (held by a child it left running)
# before that child is stopped.
_DRAIN_SECONDS = 0.5
_UNREAD_LIMIT = 1_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellResult:
    """How a command ended and what it printed (each stream capped, head and tail kept)."""

    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool = False
    # Ended by a signal nobody in aimon sent (exit_code is then minus the signal number).
    interrupted: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class BackgroundOutput:
    """A background job's output since the previous read, and its status now."""

    shell_id: str
    command: str
    stdout: str
    stderr: str
    status: BackgroundStatus
    exit_code: int | None


class UnknownShellError(LookupError):
    """No background job has this id."""

    def __init__(self, shell_id: str) -> None:
        super().__init__(f"no background shell with id {shell_id!r}")
        self.shell_id = shell_id


@dataclass(slots=True, kw_only=True)
class _Job:
    shell_id: str
    command: str
    proc: asyncio.subprocess.Process
    stdout: UnreadBuffer = field(default_factory=lambda: UnreadBuffer(_UNREAD_LIMIT))
    stderr: UnreadBuffer = field(default_factory=lambda: UnreadBuffer(_UNREAD_LIMIT))
    task: asyncio.Task[None] | None = None
    killed: bool = False

    @property
    def status(self) -> BackgroundStatus:
        if self.killed:
            return "killed"
        if self.task is None or not self.task.done():
            return "running"
        return "completed" if self.proc.returncode == 0 else "failed"


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


class _ExitNotice(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's stream protocol, plus a future set when the child watcher reports the exit."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


def has_terminal() -> bool:
    """Tell whether aimon has a controlling terminal, which a child could open as /dev/tty."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        # ENXIO: no controlling terminal; ENOENT: no /dev/tty to open. Else assume one.
        return exc.errno not in (errno.ENXIO, errno.ENOENT)
    os.close(fd)
    return True


async def spawn_process(
    *argv: str,
    cwd: Path,
    env: Mapping[str, str],
    stdin: int = asyncio.subprocess.DEVNULL,
    new_session: bool | None = None,
    pass_fds: Collection[int] = (),
) -> asyncio.subprocess.Process:
    """Start `argv` as the leader of a new process group, with piped stdout and stderr.

    Same as `asyncio.create_subprocess_exec`, except that the process's exit can be awaited
    without waiting for its pipes (see `wait_exit`). `new_session=True` also starts a new
    session, detached from aimon's terminal: a command that prompts on /dev/tty (ssh, sudo)
    fails at once instead of stopping in the background until its timeout. `None` (the
    default) does so only if aimon has a terminal (`has_terminal`): without one a process
    group is as detached, and a session costs more as the machine gets busier (Linux gives
    each one a scheduler autogroup). Measured from a process that imported the SDK: `Popen`
    of /bin/true 4.1 ms against 0.13 ms at load ~12, equal at load ~3.5; `rg` 17.1 ms
    against 12.7 ms at load ~2 (docs/PERFORMANCE.md, issue 13).
    """
    if new_session is None:
        new_session = has_terminal()
    loop = asyncio.get_running_loop()
    creating = asyncio.ensure_future(loop.subprocess_exec(
        lambda: _ExitNotice(2**16, loop),
        *argv,
        cwd=cwd,
        env=env,
        stdin=stdin,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=new_session,
        process_group=None if new_session else 0,
        pass_fds=tuple(pass_fds),
    ))
    try:
        transport, protocol = await asyncio.shield(creating)
    except asyncio.CancelledError:
        # The child runs as soon as it is forked, before asyncio has connected its pipes.
        # Cancelled inside subprocess_exec, asyncio would kill only the leader and then wait
        # for the pipes to close — for as long as anything the command started lives. So let
        # the creation finish and stop the whole group.
        transport, protocol = await creating
        proc = asyncio.subprocess.Process(transport, protocol, loop)
        try:
            await kill_process_group(proc)
        finally:
            _close_transport(proc)
        raise
    return asyncio.subprocess.Process(transport, protocol, loop)


async def wait_exit(proc: asyncio.subprocess.Process) -> int:
    """Wait until `proc` has exited and return its exit code.

    Unlike `Process.wait()` on Python 3.11, this does not also wait for the output pipes
    to close, which a child left running may hold open for as long as it lives. A process
    from `spawn_process` is awaited through asyncio's child watcher (notified, no polling:
    polling with 1-50 ms sleeps cost up to 50 ms per command); any other is polled.
    """
    protocol = getattr(proc, "_protocol", None)
    if isinstance(protocol, _ExitNotice):
        # Shielded: a timeout around this wait must not cancel the shared future.
        await asyncio.shield(protocol.exited)
    delay = 0.001
    while (code := proc.returncode) is None:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.05)
    return code


async def kill_process_group(proc: asyncio.subprocess.Process, grace: float = 1.0) -> None:
    """Stop the process group led by `proc`: SIGTERM, up to `grace` seconds, then SIGKILL."""
    try:
        _signal_group(proc.pid, signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(wait_exit(proc), grace)
    finally:
        # Runs even if this task is cancelled again while waiting: nothing may survive.
        _signal_group(proc.pid, signal.SIGKILL)
    await wait_exit(proc)


def _close_transport(proc: asyncio.subprocess.Process) -> None:
    # A process that escaped the group may still hold our pipes; close our ends so the
    # transport does not leak (asyncio has no public close for a subprocess).
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


def _shell_result(
    code: int | None,
    out: HeadTailCapture,
    err: HeadTailCapture,
    *,
    timed_out: bool,
    stragglers: bool,
) -> ShellResult:
    stderr = err.text()
    if stragglers:
        stderr += (
            "\n[aimon: processes the command left running in the background were stopped; "
            "use run_in_background for long-running processes]"
        )
    return ShellResult(
        stdout=out.text(),
        stderr=stderr,
        exit_code=code,
        timed_out=timed_out,
        interrupted=not timed_out and not stragglers and code is not None and code < 0,
    )


class LocalShell:
    """Run bash commands on this machine; every command gets its own process group."""

    def __init__(
        self,
        *,
        output_limit: int = 30_000,
        kill_grace: float = 1.0,
        env: Mapping[str, str] | None = None,
        passthrough: Collection[str] = (),
        sandbox: Sandbox | None = None,
    ) -> None:
        """`env` adds variables to every command's environment (settings' `env`).

        Commands inherit aimon's environment; credentials, from either, stay out (see
        `model_env`) unless `passthrough` names them (never provider keys). With a `sandbox`,
        `run` and `start_background` run commands inside it.
        """
        self.output_limit = output_limit
        self.kill_grace = kill_grace
        self.env = dict(env or {})
        self.passthrough = frozenset(passthrough)
        self.sandbox = sandbox
        self._jobs: dict[str, _Job] = {}
        self._ids = itertools.count(1)

    def _child_env(self, env: Mapping[str, str] | None) -> dict[str, str]:
        """Return a command's environment: aimon's and the additions, without credentials."""
        child = model_env(os.environ, self.passthrough, settings_env=self.env)
        if env:
            child.update(model_env(env, self.passthrough))
        return child

    async def _spawn(
        self, command: str, cwd: Path, env: Mapping[str, str] | None, sandbox: bool = True
    ) -> asyncio.subprocess.Process:
        argv, child_env = ("/bin/bash", "-c", command), self._child_env(env)
        if self.sandbox is not None and self.sandbox.config.runs_inside(command,
                                                                         leave=not sandbox):
            return await self.sandbox.spawn(argv, cwd=cwd, env=child_env, label=command,
                                            kept_in=not sandbox)
        return await spawn_process(*argv, cwd=cwd, env=child_env)

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
        """Run `command` with bash in `cwd`; kill its process group on timeout or cancel.

        `env` adds variables to the inherited environment. Children the command leaves
        running that still hold its output pipes are stopped once bash exits. `sandbox=False`
        asks to run outside the sandbox (honoured if its settings allow that). `on_output`
        is told the output as it comes (the result still holds all of it, capped).
        """
        proc = await self._spawn(command, cwd, env, sandbox)
        return await self._finish(proc, timeout, output_limit or self.output_limit, on_output)

    async def exec(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        timeout: float,  # noqa: ASYNC109 - the seam takes a duration, not a deadline
        env: Mapping[str, str] | None = None,
        output_limit: int | None = None,
    ) -> ShellResult:
        """Run the program `argv` directly (no bash in between), otherwise as `run`.

        Same environment, timeout, cancellation (its process group is killed) and output
        limits; stdin is /dev/null. For programs aimon runs itself that never prompt, such as
        `rg`: it saves bash's start (~1.5 ms), and never pays for a new session (see
        `spawn_process`), so with a terminal a program that opened /dev/tty could reach it.
        One that cannot be started raises OSError.
        """
        if not argv:
            raise ValueError("exec needs a program to run")
        # PWD as bash would set it: some programs read it rather than calling getcwd.
        child_env = {**self._child_env(env), "PWD": str(cwd)}
        proc = await spawn_process(*argv, cwd=cwd, env=child_env, new_session=False)
        return await self._finish(proc, timeout, output_limit or self.output_limit)

    async def _finish(
        self, proc: asyncio.subprocess.Process, timeout: float, limit: int,  # noqa: ASYNC109
        on_output: OutputSink | None = None,
    ) -> ShellResult:
        """Read `proc`'s output until it exits or `timeout`; kill its group if need be."""
        out, err = HeadTailCapture(limit), HeadTailCapture(limit)
        readers = [
            asyncio.create_task(pump(proc.stdout, out, on_output)),
            asyncio.create_task(pump(proc.stderr, err, on_output)),
        ]
        timed_out = stragglers = False
        try:
            try:
                await asyncio.wait_for(wait_exit(proc), timeout)
            except TimeoutError:
                timed_out = True
                await kill_process_group(proc, self.kill_grace)
            _, pending = await asyncio.wait(readers, timeout=_DRAIN_SECONDS)
            if pending:
                stragglers = True
                await kill_process_group(proc, self.kill_grace)
                await asyncio.wait(readers, timeout=_DRAIN_SECONDS)
        except asyncio.CancelledError:
            await kill_process_group(proc, self.kill_grace)
            await self._settled(proc)
            raise
        finally:
            for reader in readers:
                reader.cancel()
            _close_transport(proc)
        await self._settled(proc)
        result = _shell_result(proc.returncode, out, err, timed_out=timed_out,
                               stragglers=stragglers)
        return result if self.sandbox is None else self.sandbox.explain(proc, result)

    async def _settled(self, proc: asyncio.subprocess.Process) -> None:
        """Wait until a sandboxed command has left nothing running (its pid namespace)."""
        if self.sandbox is not None:
            await self.sandbox.settled(proc)

    async def start_background(self, command: str, *, cwd: Path, sandbox: bool = True) -> str:
        """Start `command` in the background and return its shell id (`sandbox` as in `run`)."""
        proc = await self._spawn(command, cwd, None, sandbox)
        job = _Job(shell_id=f"bash_{next(self._ids)}", command=command, proc=proc)
        job.task = asyncio.create_task(self._follow(job), name=f"aimon {job.shell_id}")
        self._jobs[job.shell_id] = job
        return job.shell_id

    async def _follow(self, job: _Job) -> None:
        try:
            await asyncio.gather(
                pump(job.proc.stdout, job.stdout), pump(job.proc.stderr, job.stderr)
            )
            await wait_exit(job.proc)
        finally:
            _close_transport(job.proc)

    def jobs(self) -> tuple[tuple[str, str, str], ...]:
        """Return (shell id, command, status) of every background job, oldest first."""
        return tuple((job.shell_id, job.command, job.status) for job in self._jobs.values())

    def _job(self, shell_id: str) -> _Job:
        job = self._jobs.get(shell_id)
        if job is None:
            raise UnknownShellError(shell_id)
        return job

    async def read_background(self, shell_id: str) -> BackgroundOutput:
        """Return the job's output since the last read, and its status."""
        job = self._job(shell_id)
        # Let the reader tasks catch up with what the process has written so far.
        await asyncio.sleep(0)
        return BackgroundOutput(
            shell_id=job.shell_id,
            command=job.command,
            stdout=job.stdout.take(),
            stderr=job.stderr.take(),
            status=job.status,
            exit_code=job.proc.returncode,
        )

    async def wait_background(self, shell_id: str) -> BackgroundStatus:
        """Wait until a background job ends (its output read to the end); return its status.

        Raises UnknownShellError. Cancelling the wait leaves the job running.
        """
        job = self._job(shell_id)
        if job.task is not None:
            await asyncio.wait({job.task})
        return job.status

    async def kill_background(self, shell_id: str) -> BackgroundOutput:
        """Stop a background job (its whole process group) and return its last output."""
        job = self._job(shell_id)
        if job.status == "running":
            job.killed = True
            await self._stop(job)
        return await self.read_background(shell_id)

    async def _stop(self, job: _Job) -> None:
        await kill_process_group(job.proc, self.kill_grace)
        await self._settled(job.proc)
        if job.task is not None:
            done, _ = await asyncio.wait({job.task}, timeout=_DRAIN_SECONDS)
            if not done:
                job.task.cancel()
                await asyncio.wait({job.task})

    async def close(self) -> None:
        """Stop every background job that is still running (and the sandbox, if any)."""
        for job in list(self._jobs.values()):
            if job.status == "running":
                job.killed = True
                await self._stop(job)
        if self.sandbox is not None:
            await self.sandbox.close()
