"""A child's exit is noticed when it happens (asyncio's child watcher), not by polling.

Each command prints the time it ends as its last act; the call must return within 50 ms of
it (the middle of three run at once: the machine running the tests is shared). That a wait
does not poll is checked directly: no `asyncio.sleep` runs while a 1 s command is awaited
(the polling it replaced slept 1, 2, 4 ... 50 ms, ~25 times a second).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

from aimon_core.hook import (
    CommandHookSpec,
    HookEvent,
    HookInput,
    UserPromptSubmitInput,
    run_command_hook,
)
from aimon_core.shell import LocalShell

# The command's last act: print the time it ends, in seconds since the epoch.
_ENDS = 'sleep 1; date +%s.%N'


def _lateness(printed: str, returned: float) -> float:
    return returned - float(printed.strip().splitlines()[-1])


def _check(latenesses: list[float]) -> None:
    assert statistics.median(latenesses) < 0.05, latenesses


def _count_sleeps(run: Callable[[], Any]) -> int:
    """Run `run()` and count the `asyncio.sleep` calls made on this thread (a profiler)."""
    calls = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call" and frame.f_code is asyncio.sleep.__code__:
            calls += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return calls


def test_waiting_for_a_command_does_not_poll(tmp_path: Path) -> None:
    shell = LocalShell()
    command = shell.run("sleep 1", cwd=tmp_path, timeout=20)
    assert _count_sleeps(lambda: asyncio.run(command)) == 0


def test_waiting_for_a_hook_does_not_poll(tmp_path: Path) -> None:
    spec = CommandHookSpec(event=HookEvent.ON_START, matcher=None, command="sleep 1")
    hook_input = HookInput(data=UserPromptSubmitInput(prompt="p"), session_id="s", cwd=tmp_path)
    run = run_command_hook(spec, hook_input, project_dir=tmp_path)
    assert _count_sleeps(lambda: asyncio.run(run)) == 0


def test_a_command_returns_when_it_ends(tmp_path: Path) -> None:
    shell = LocalShell()

    async def once() -> float:
        result = await shell.run(_ENDS, cwd=tmp_path, timeout=20)
        returned = time.time()
        assert result.exit_code == 0, result
        return _lateness(result.stdout, returned)

    async def scenario() -> list[float]:
        return list(await asyncio.gather(once(), once(), once()))

    _check(asyncio.run(scenario()))


def test_a_hook_returns_when_it_ends(tmp_path: Path) -> None:
    spec = CommandHookSpec(event=HookEvent.ON_START, matcher=None, command=_ENDS)
    hook_input = HookInput(data=UserPromptSubmitInput(prompt="p"), session_id="s", cwd=tmp_path)

    async def once() -> float:
        result = await run_command_hook(spec, hook_input, project_dir=tmp_path)
        returned = time.time()
        assert not result.errors, result
        return _lateness(result.additional_context or "0", returned)

    async def scenario() -> list[float]:
        return list(await asyncio.gather(once(), once(), once()))

    latenesses = asyncio.run(scenario())
    _check(latenesses)


def test_a_background_job_is_done_when_it_ends(tmp_path: Path) -> None:
    async def scenario() -> tuple[str, float]:
        shell = LocalShell()
        job = await shell.start_background(_ENDS, cwd=tmp_path)
        started = time.monotonic()
        output = ""
        while (read := await shell.read_background(job)).status == "running":
            output += read.stdout
            assert time.monotonic() - started < 20
            await asyncio.sleep(0.001)
        returned = time.time()
        return output + read.stdout, returned

    printed, returned = asyncio.run(scenario())
    assert _lateness(printed, returned) < 0.05
