"""LocalShell.exec: a program run directly (no bash), otherwise handled as `run` handles bash.

Deaths are awaited through pidfds (the kernel says when a process ends), never with sleeps.
"""

from __future__ import annotations

import asyncio
import os
import select
import threading
import time
from pathlib import Path

import pytest

from aimon_core.shell import LocalShell, VirtualShell


def _stat_fields(text: str) -> list[str]:
    """Return /proc/PID/stat's fields after the command name: state, ppid, pgrp, session."""
    return text.rsplit(")", 1)[1].split()


def _dead_within(pid: int, seconds: float) -> bool:
    """Wait (on a pidfd, not by polling) until `pid` has ended; False if it outlives `seconds`."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], seconds)[0])
    finally:
        os.close(fd)


def test_exec_runs_the_program_itself_in_its_own_process_group(tmp_path: Path) -> None:
    shell = LocalShell()
    assert isinstance(shell, VirtualShell)
    result = asyncio.run(shell.exec(["cat", "/proc/self/stat"], cwd=tmp_path, timeout=10))
    assert result.exit_code == 0, result
    pid = int(result.stdout.split()[0])
    _, ppid, pgrp, session = _stat_fields(result.stdout)[:4]
    assert int(ppid) == os.getpid()  # started by aimon itself: no bash in between
    assert int(pgrp) == pid  # its own group, which a timeout or cancel kills
    assert int(session) == os.getsid(0)


def test_exec_gets_the_environment_run_gives_bash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(os.environ):  # a known environment: no exported bash functions etc.
        if name not in ("PATH", "HOME", "LANG"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-provider-key-123")
    monkeypatch.setenv("DEPLOY_TOKEN", "deploy-secret-456")
    monkeypatch.setenv("GITHUB_TOKEN", "passed-through-789")
    shell = LocalShell(env={"FROM_SETTINGS": "1"}, passthrough=["GITHUB_TOKEN"])

    async def both() -> tuple[str, str]:
        direct = await shell.exec(["env"], cwd=tmp_path, timeout=10, env={"EXTRA": "2"})
        bash = await shell.run("env", cwd=tmp_path, timeout=10, env={"EXTRA": "2"})
        return direct.stdout, bash.stdout

    direct, bash = asyncio.run(both())
    bash_own = ("SHLVL=", "_=", "OLDPWD=")  # what bash itself sets (it also sets PWD: so does exec)

    def variables(env: str) -> set[str]:
        return {line for line in env.splitlines() if not line.startswith(bash_own)}

    assert variables(direct) == variables(bash)
    assert f"PWD={tmp_path}" in direct.splitlines()
    assert "FROM_SETTINGS=1" in direct and "EXTRA=2" in direct
    assert "GITHUB_TOKEN=passed-through-789" in direct
    assert "sk-provider-key-123" not in direct and "deploy-secret-456" not in direct


def test_exec_caps_output_and_reports_the_exit_code(tmp_path: Path) -> None:
    shell = LocalShell()
    result = asyncio.run(shell.exec(["seq", "200000"], cwd=tmp_path, timeout=20,
                                    output_limit=1000))
    assert result.stdout.startswith("1\n2\n3\n")
    assert result.stdout.endswith("199999\n200000\n")
    assert "characters cut" in result.stdout and len(result.stdout) < 1100
    failed = asyncio.run(shell.exec(["ls", "no-such-file"], cwd=tmp_path, timeout=10))
    assert failed.exit_code == 2 and "no-such-file" in failed.stderr


def test_exec_timeout_kills_the_process_group(tmp_path: Path) -> None:
    shell = LocalShell(kill_grace=0.5)
    started = time.monotonic()
    result = asyncio.run(shell.exec(["sh", "-c", "sleep 30 & echo $!; sleep 30"],
                                    cwd=tmp_path, timeout=0.5))
    assert time.monotonic() - started < 10
    assert result.timed_out
    assert _dead_within(int(result.stdout), 5)  # the leader's child went with the group


def test_exec_cancel_kills_the_process_group(tmp_path: Path) -> None:
    fifo = tmp_path / "pids"
    os.mkfifo(fifo)
    shell = LocalShell(kill_grace=0.5)

    async def scenario() -> list[int]:
        command = f"sleep 30 & echo $$ $! > {fifo}; sleep 30"
        task = asyncio.create_task(shell.exec(["sh", "-c", command], cwd=tmp_path, timeout=60))
        pids = await asyncio.to_thread(fifo.read_text)  # returns once both are running
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return [int(pid) for pid in pids.split()]

    pids = asyncio.run(scenario())
    assert len(pids) == 2
    assert all(_dead_within(pid, 5) for pid in pids)


def test_exec_of_a_missing_program_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        asyncio.run(LocalShell().exec([str(tmp_path / "nope")], cwd=tmp_path, timeout=10))


def _running(argv: list[str]) -> list[int]:
    """Return the pids of the processes whose command line is exactly `argv`."""
    wanted = "\0".join(argv).encode() + b"\0"
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == wanted:
                pids.append(int(entry.name))
        except OSError:
            continue  # it ended meanwhile
    return pids


def _has_child() -> bool:
    """Tell whether this thread has forked a child that is still there."""
    children = Path(f"/proc/self/task/{threading.get_native_id()}/children")
    return bool(children.read_text().strip())


@pytest.mark.parametrize("how", ["exec", "run"])
def test_a_cancel_while_the_process_is_created_stops_its_whole_group(tmp_path: Path,
                                                                     how: str) -> None:
    # The child runs from the moment it is forked; asyncio connects its pipes a step later.
    # Cancelled in between, asyncio killed only the leader and waited for the pipes, which
    # the background `sleep` kept open for its whole life.
    seconds = f"{os.getpid() % 997 + 30}.{len(how)}"  # no other test sleeps this long
    command = f"sleep {seconds} & sleep {seconds}"
    shell = LocalShell(kill_grace=0.5)

    async def scenario() -> float:
        call = (shell.exec(["sh", "-c", command], cwd=tmp_path, timeout=60) if how == "exec"
                else shell.run(command, cwd=tmp_path, timeout=60))
        task = asyncio.create_task(call)
        for _ in range(10_000):  # step the loop until the child is forked, then cancel
            await asyncio.sleep(0)
            if _has_child():
                break
        else:
            raise AssertionError("the command never started")
        task.cancel()
        started = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await task
        return time.monotonic() - started

    assert asyncio.run(scenario()) < 5
    assert all(_dead_within(pid, 5) for pid in _running(["sleep", seconds]))
