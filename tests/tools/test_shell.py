"""LocalShell and the Bash, BashOutput and KillShell tools, with real subprocesses."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from aimon_core.shell import LocalShell, UnknownShellError, VirtualShell, cap_text
from aimon_core.tools import ToolContext, ToolResult, builtin_tools, execute_tool

RunTool = Callable[..., ToolResult]
TOOLS = {tool.name: tool for tool in builtin_tools()}


def alive(pid: int) -> bool:
    """Return whether `pid` runs (a zombie waiting for its reaper counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def wait_dead(pids: list[int], seconds: float = 5.0) -> list[int]:
    """Return the pids still alive after up to `seconds`."""
    deadline = time.monotonic() + seconds
    while (left := [p for p in pids if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def read_pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()]


def count_lines(path: Path) -> int:
    return len(path.read_text().split()) if path.exists() else 0


async def wait_for_lines(path: Path, count: int) -> None:
    for _ in range(200):
        if count_lines(path) >= count:
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"{path} never got {count} lines")


def test_cap_text_keeps_head_and_tail() -> None:
    assert cap_text("short", 10) == "short"
    capped = cap_text("a" * 50 + "b" * 50, 20)
    assert capped.startswith("a" * 10)
    assert capped.endswith("b" * 10)
    assert "... 80 characters cut ..." in capped


# ---------------------------------------------------------------------------- LocalShell


def test_run_reports_output_exit_code_and_env(project: Path) -> None:
    shell = LocalShell()
    assert isinstance(shell, VirtualShell)
    result = asyncio.run(
        shell.run(
            "echo out; echo err >&2; echo $FOO; exit 3", cwd=project, timeout=10, env={"FOO": "bar"}
        )
    )
    assert result.stdout == "out\nbar\n"
    assert result.stderr == "err\n"
    assert result.exit_code == 3
    assert not result.timed_out
    assert not result.interrupted


def test_run_caps_huge_output_without_holding_it(project: Path) -> None:
    shell = LocalShell(output_limit=1000)
    command = "head -c 20000000 /dev/zero | tr '\\0' a; echo; echo END"
    result = asyncio.run(shell.run(command, cwd=project, timeout=60))
    assert len(result.stdout) < 1100
    assert result.stdout.startswith("a" * 500)
    assert result.stdout.endswith("END\n")
    assert "characters cut" in result.stdout


def test_timeout_kills_the_process_group(project: Path) -> None:
    pids = project / "pids"
    command = f"echo $$ > {pids}; sleep 30 & echo $! >> {pids}; sleep 30 & echo $! >> {pids}; wait"
    started = time.monotonic()
    result = asyncio.run(LocalShell(kill_grace=0.5).run(command, cwd=project, timeout=1))
    assert time.monotonic() - started < 10
    assert result.timed_out
    assert len(read_pids(pids)) == 3
    assert wait_dead(read_pids(pids)) == []


def test_timeout_kills_children_that_ignore_sigterm(project: Path) -> None:
    pids = project / "pids"
    command = f"trap '' TERM; sleep 30 & echo $! >> {pids}; echo $$ >> {pids}; wait"
    result = asyncio.run(LocalShell(kill_grace=0.2).run(command, cwd=project, timeout=0.5))
    assert result.timed_out
    assert wait_dead(read_pids(pids)) == []


def test_cancel_kills_the_process_group(project: Path) -> None:
    pids = project / "pids"

    async def scenario() -> None:
        shell = LocalShell(kill_grace=0.5)
        command = f"echo $$ > {pids}; sleep 30 & echo $! >> {pids}; sleep 30"
        task = asyncio.create_task(shell.run(command, cwd=project, timeout=60))
        await wait_for_lines(pids, 2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert wait_dead(read_pids(pids)) == []


def test_children_left_on_the_pipes_are_stopped(project: Path) -> None:
    pids = project / "pids"
    started = time.monotonic()
    result = asyncio.run(
        LocalShell().run(f"sleep 30 & echo $! > {pids}; echo done", cwd=project, timeout=20)
    )
    assert time.monotonic() - started < 5
    assert result.stdout == "done\n"
    assert result.exit_code == 0
    assert "run_in_background" in result.stderr
    assert wait_dead(read_pids(pids)) == []


def test_redirected_background_child_is_left_alone(project: Path) -> None:
    pids = project / "pids"
    result = asyncio.run(
        LocalShell().run(f"sleep 30 >/dev/null 2>&1 & echo $! > {pids}", cwd=project, timeout=20)
    )
    assert result.exit_code == 0
    (pid,) = read_pids(pids)
    try:
        assert alive(pid)
    finally:
        os.kill(pid, signal.SIGKILL)


def test_process_escaping_the_group_does_not_hang_run(project: Path) -> None:
    pids = project / "pids"
    started = time.monotonic()
    result = asyncio.run(
        LocalShell(kill_grace=0.2).run(
            f"setsid sleep 30 & echo $! > {pids}; echo hi", cwd=project, timeout=20
        )
    )
    try:
        assert time.monotonic() - started < 5
        assert result.stdout == "hi\n"
    finally:
        for pid in read_pids(pids):
            os.kill(pid, signal.SIGKILL)


def test_signal_death_is_reported_as_interrupted(project: Path) -> None:
    result = asyncio.run(LocalShell().run("kill -9 $$", cwd=project, timeout=10))
    assert result.exit_code == -9
    assert result.interrupted


def test_background_jobs(project: Path) -> None:
    async def scenario() -> None:
        shell = LocalShell(kill_grace=0.2)
        job = await shell.start_background("echo one; sleep 0.3; echo two >&2; exit 4", cwd=project)
        seen_out, seen_err = "", ""
        for _ in range(200):
            out = await shell.read_background(job)
            seen_out, seen_err = seen_out + out.stdout, seen_err + out.stderr
            if out.status != "running":
                break
            await asyncio.sleep(0.02)
        assert (seen_out, seen_err) == ("one\n", "two\n")
        assert out.status == "failed"
        assert out.exit_code == 4
        again = await shell.read_background(job)
        assert (again.stdout, again.stderr) == ("", "")
        with pytest.raises(UnknownShellError):
            await shell.read_background("bash_99")
        await shell.close()

    asyncio.run(scenario())


def test_close_kills_running_background_jobs(project: Path) -> None:
    pids = project / "pids"

    async def scenario() -> None:
        shell = LocalShell(kill_grace=0.2)
        job = await shell.start_background(f"sleep 30 & echo $! > {pids}; wait", cwd=project)
        await wait_for_lines(pids, 1)
        await shell.close()
        assert (await shell.read_background(job)).status == "killed"

    asyncio.run(scenario())
    assert wait_dead(read_pids(pids)) == []


# ---------------------------------------------------------------------------- Bash tools


def test_bash_runs_in_the_working_directory(project: Path, run_tool: RunTool) -> None:
    result = run_tool("Bash", command="pwd", description="Show the directory")
    assert not result.is_error
    assert result.text == str(project)
    assert result.data["exit_code"] == 0
    assert result.data["description"] == "Show the directory"


def test_bash_reports_stderr_and_exit_code(run_tool: RunTool) -> None:
    result = run_tool("Bash", command="echo visible; echo oops >&2; exit 2")
    assert result.is_error
    assert result.text == "visible\noops\n\nExit code 2"
    assert run_tool("Bash", command="true").text == "(no output)"


def test_bash_caps_output(run_tool: RunTool) -> None:
    result = run_tool("Bash", command="seq 1 100000")
    assert len(result.text) < 30_100
    assert result.text.startswith("1\n2\n3\n")
    assert result.text.endswith("99999\n100000")
    assert "characters cut" in result.text


def test_bash_timeout_says_it_was_killed(project: Path, run_tool: RunTool) -> None:
    pids = project / "pids"
    result = run_tool("Bash", command=f"sleep 30 & echo $! > {pids}; wait", timeout=500)
    assert result.is_error
    assert "timed out after 0.5 s and was killed" in result.text
    assert result.data["timed_out"] is True
    assert wait_dead(read_pids(pids)) == []


def test_bash_cancellation_propagates_and_kills(project: Path, ctx: ToolContext) -> None:
    pids = project / "pids"

    async def scenario() -> None:
        args = {"command": f"sleep 30 & echo $! > {pids}; wait"}
        task = asyncio.create_task(execute_tool(TOOLS["Bash"], args, ctx))
        await wait_for_lines(pids, 1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(scenario())
    assert wait_dead(read_pids(pids)) == []


def test_bash_background_output_and_kill(project: Path, ctx: ToolContext) -> None:
    pids = project / "pids"

    async def call(name: str, **args: object) -> ToolResult:
        return await execute_tool(TOOLS[name], args, ctx)

    async def scenario() -> None:
        started = await call(
            "Bash",
            command=f"echo $$ > {pids}; echo ready; echo noise; sleep 30",
            run_in_background=True,
        )
        shell_id = started.data["shell_id"]
        assert f"bash_id={shell_id!r}" in started.text
        await wait_for_lines(pids, 1)
        text = ""
        for _ in range(100):
            text = (await call("BashOutput", bash_id=shell_id, filter="^rea")).text
            if "ready" in text:
                break
            await asyncio.sleep(0.02)
        assert "running" in text
        assert "ready" in text
        assert "noise" not in text
        assert "(no new output)" in (await call("BashOutput", bash_id=shell_id)).text
        killed = await call("KillShell", shell_id=shell_id)
        assert "killed" in killed.text
        assert killed.data["status"] == "killed"
        unknown = await call("KillShell", shell_id="bash_42")
        assert unknown.is_error
        assert "no background shell 'bash_42'" in unknown.text
        bad_filter = await call("BashOutput", bash_id=shell_id, filter="(")
        assert bad_filter.is_error
        await ctx.shell.close()

    asyncio.run(scenario())
    assert wait_dead(read_pids(pids)) == []
