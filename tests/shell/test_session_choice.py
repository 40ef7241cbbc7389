"""A command is detached from the terminal either way: a new session only when aimon has one.

Each case runs a small Python child (no aimon command) that starts a LocalShell command
reporting its own process group and session and trying to open /dev/tty: once without a
controlling terminal, once with a pseudo-terminal made its controlling terminal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import asyncio, fcntl, json, os, sys, termios
from pathlib import Path
from aimon_core.shell import LocalShell, has_terminal
if sys.argv[1] == "tty":
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # a session leader takes its stdin pty as terminal
command = 'read -r line < /proc/$$/stat; echo "$$ ${line##*) }"; : < /dev/tty'
result = asyncio.run(LocalShell().run(command, cwd=Path.cwd(), timeout=20))
pid, _state, _ppid, pgrp, sid = result.stdout.split()[:5]
print(json.dumps({"terminal": has_terminal(), "pid": int(pid), "pgrp": int(pgrp),
                  "sid": int(sid), "aimon_sid": os.getsid(0), "tty_error": result.stderr}))
"""


def _child(mode: str, stdin: int | None, tmp_path: Path) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", CHILD, mode], stdin=stdin, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False,
                          start_new_session=True)  # no controlling terminal to begin with
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


def test_without_a_terminal_a_process_group_is_enough(tmp_path: Path) -> None:
    report = _child("none", subprocess.DEVNULL, tmp_path)
    assert report["terminal"] is False
    assert report["pgrp"] == report["pid"]  # its own group: a timeout or cancel kills it
    assert report["sid"] == report["aimon_sid"]  # no new session: saves 1-4 ms a command
    assert "No such device" in str(report["tty_error"])


def test_with_a_terminal_a_command_gets_a_new_session(tmp_path: Path) -> None:
    leader, follower = os.openpty()
    try:
        report = _child("tty", follower, tmp_path)
    finally:
        os.close(leader)
        os.close(follower)
    assert report["terminal"] is True
    assert report["pgrp"] == report["pid"] == report["sid"]  # a new session, so ...
    assert "No such device" in str(report["tty_error"])  # ... it cannot reach the terminal
