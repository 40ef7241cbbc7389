"""On Python 3.11 the command learns of child exits from pidfds, not a thread per child."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator

import pytest

from aimon_cli import _children
from aimon_core.shell import LocalShell
from aimon_core.shell._local import spawn_process, wait_exit

pytestmark = pytest.mark.skipif(sys.version_info >= (3, 12) or sys.platform != "linux",
                                reason="Python 3.11 on Linux: 3.12 watches pidfds itself")


@pytest.fixture
def pidfd_watcher() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        policy = asyncio.get_event_loop_policy()
        before = policy._watcher  # type: ignore[attr-defined]
        assert _children.use_pidfd()
        try:
            yield
        finally:
            policy._watcher = before  # type: ignore[attr-defined]


def test_exit_codes_and_signals_arrive_without_a_thread(pidfd_watcher: None, tmp_path: object
                                                        ) -> None:
    async def scenario() -> list[int | None]:
        threads = threading.active_count()
        codes = []
        for script in ("exit 0", "exit 3", "kill -TERM $$", "echo out; echo err >&2"):
            proc = await asyncio.create_subprocess_exec(
                "/bin/bash", "-c", script, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            assert threading.active_count() == threads  # no waiter thread per child
            await proc.communicate()
            codes.append(proc.returncode)
        return codes

    assert asyncio.run(scenario()) == [0, 3, -signal.SIGTERM, 0]


def test_many_children_at_once_and_a_loop_in_another_thread(pidfd_watcher: None) -> None:
    async def many() -> list[int | None]:
        procs = [await asyncio.create_subprocess_exec("/bin/bash", "-c", f"exit {n}")
                 for n in range(20)]
        return [await proc.wait() for proc in procs]

    assert asyncio.run(many()) == list(range(20))
    found: list[list[int | None]] = []
    worker = threading.Thread(target=lambda: found.append(asyncio.run(many())))
    worker.start()
    worker.join(30)
    assert found == [list(range(20))]


def test_the_shell_notices_an_exit_at_once_and_kills_on_timeout(pidfd_watcher: None,
                                                                tmp_path: object) -> None:
    from pathlib import Path

    async def scenario() -> tuple[float, bool]:
        shell = LocalShell()
        started = time.monotonic()
        result = await shell.run("sleep 0.3; echo done", cwd=Path("/tmp"), timeout=10)
        took = time.monotonic() - started
        assert result.exit_code == 0 and "done" in result.stdout
        slow = await shell.run("sleep 30", cwd=Path("/tmp"), timeout=0.3)
        proc = await spawn_process("/bin/bash", "-c", "exit 7", cwd=Path("/tmp"), env={})
        assert await wait_exit(proc) == 7
        return took, slow.timed_out

    took, timed_out = asyncio.run(scenario())
    assert took < 0.3 + 0.2  # noticed when it happened, not polled for
    assert timed_out


def test_the_command_installs_it() -> None:
    code = ("import asyncio, warnings\nwarnings.simplefilter('ignore')\n"
            "from aimon_cli import _children\n"
            "print(_children.use_pidfd(), type(asyncio.get_child_watcher()).__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.split() == ["True", "_PidfdWatcher"]
