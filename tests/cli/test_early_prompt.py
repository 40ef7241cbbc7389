"""The first prompt drawn before prompt-toolkit loads, and the keys typed at it.

Unit tests drive `EarlyPrompt` on a pseudo-terminal pair; the pty tests run `aimon` itself.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import termios
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

from aimon_cli._early import EarlyPrompt, banner_text

from .conftest import MODEL, Spawn, editor_live, leave

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")


@pytest.fixture
def pty() -> Iterator[tuple[int, int]]:
    """Return (master, slave) of a fresh pseudo-terminal in its default (cooked) mode."""
    master, slave = os.openpty()
    yield master, slave
    os.close(master)
    os.close(slave)


def drain(fd: int) -> bytes:
    """Return what is waiting on `fd`: on the master, what was written to the terminal;
    on the slave, the keys queued for the program reading it."""
    out = b""
    while select.select([fd], [], [], 0.2)[0]:
        out += os.read(fd, 4096)
    return out


screen = pending = drain


@pytest.fixture
def painted(pty: tuple[int, int]) -> tuple[int, int, list[Any], EarlyPrompt]:
    """Return (master, slave, the mode before painting, the early prompt), screen drained."""
    master, slave = pty
    cooked = termios.tcgetattr(slave)
    early = EarlyPrompt.paint("banner", stdin=slave, stdout=slave)
    assert early is not None
    screen(master)
    return master, slave, cooked, early


def type_keys(master: int, slave: int, keys: bytes) -> None:
    """Type `keys` and wait until the terminal has taken them in (it does so asynchronously)."""
    os.write(master, keys)
    assert select.select([slave], [], [], 5)[0], "the typed keys never reached the terminal"


def test_paint_draws_the_banner_and_glyph_and_stops_echo(pty: tuple[int, int]) -> None:
    master, slave = pty
    early = EarlyPrompt.paint(banner_text("1.2.3", "/some/project"), stdin=slave, stdout=slave)
    assert early is not None
    drawn = screen(master)
    assert b"aimon 1.2.3 \xc2\xb7 /some/project \xc2\xb7 /help for commands" in drawn
    assert drawn.rstrip().endswith("›\x1b[0m".encode())
    mode = termios.tcgetattr(slave)
    assert not mode[3] & (termios.ECHO | termios.ICANON)
    assert not mode[0] & termios.ICRNL
    assert mode[3] & termios.ISIG  # Ctrl-C still stops aimon while nothing reads keys
    type_keys(master, slave, b"fix the build")
    assert screen(master) == b""  # not echoed: the line editor will show it


def test_the_handover_keeps_raw_mode_and_the_typed_keys(
        painted: tuple[int, int, list[Any], EarlyPrompt]) -> None:
    master, slave, cooked, early = painted
    type_keys(master, slave, b"explain\x1b[200~a\rb\x1b[201~")
    early.clear_line()
    early.clear_line()
    assert screen(master) == b"\r\x1b[K"  # once: the editor draws its prompt on that line
    assert early.hand_over() == cooked  # for the editor to restore when its raw mode ends
    raw = termios.tcgetattr(slave)
    assert raw != cooked  # still raw: nothing typed from now on is echoed or translated
    type_keys(master, slave, b"\r")
    # Enter stays \r (prompt-toolkit's Enter; \n would be a newline in the draft), pastes
    # stay bracketed, and raw mode lets the editor read all of it at once.
    assert pending(slave) == b"explain\x1b[200~a\rb\x1b[201~\r"
    assert screen(master) == b""
    assert early.hand_over() is None
    early.give_back()  # after the handover, the editor owns the terminal: nothing changes
    assert termios.tcgetattr(slave) == raw and screen(master) == b""


def test_leaving_before_the_prompt_drops_the_typed_keys(
        painted: tuple[int, int, list[Any], EarlyPrompt]) -> None:
    master, slave, cooked, early = painted
    type_keys(master, slave, b"rm -rf build\r")
    early.give_back()
    assert termios.tcgetattr(slave) == cooked
    assert pending(slave) == b""  # the shell aimon returns to does not run what was typed
    assert screen(master) == b"\r\x1b[K\x1b[?2004l"
    early.give_back()
    assert early.hand_over() is None
    assert screen(master) == b""  # a second give_back does nothing


def test_no_early_prompt_without_a_terminal(pty: tuple[int, int],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    read, write = os.pipe()
    try:
        assert EarlyPrompt.paint("banner", stdin=read, stdout=pty[1]) is None
        assert EarlyPrompt.paint("banner", stdin=pty[1], stdout=write) is None
    finally:
        os.close(read)
        os.close(write)
    monkeypatch.setenv("TERM", "dumb")
    assert EarlyPrompt.paint("banner", stdin=pty[1], stdout=pty[1]) is None
    assert screen(pty[0]) == b""


# ── the `aimon` command ──────────────────────────────────────────────────────────────────


def ended_in_cooked_mode(child: pexpect.spawn) -> int:
    """Wait for `child` to end; check it left the terminal as a shell wants it; return its
    exit status."""
    child.expect(pexpect.EOF)
    mode = termios.tcgetattr(child.child_fd)  # the pty's mode, as the shell gets it back
    child.close()
    assert mode[3] & termios.ECHO and mode[3] & termios.ICANON and mode[3] & termios.ISIG
    assert mode[0] & termios.ICRNL
    assert child.exitstatus is not None
    return int(child.exitstatus)


# Runs aimon's command line with a start that takes 30 s after the early prompt is drawn.
SLOW_START = """
import time
from aimon_cli import _commands
_commands._root = lambda args, early: time.sleep(30)
_commands.run([])
"""


def test_ctrl_c_while_aimon_starts_stops_it_and_gives_the_terminal_back(
        spawn: Spawn, home: Path) -> None:
    started = spawn()  # only for its environment
    env = {**started.env, "AIMON_MODEL": MODEL}  # no flags here: a usable provider, by env
    # A shell without job control starts background commands with SIGINT ignored, and an
    # ignored signal stays ignored across exec: give the child the default, as a terminal would.
    child = pexpect.spawn(sys.executable, ["-c", SLOW_START], cwd=started.cwd, env=env,
                          dimensions=(40, 120), encoding="utf-8", timeout=15,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    child.expect_exact("›")
    child.send("half a prompt")
    child.sendcontrol("c")
    child.expect_exact("aimon: interrupted")
    assert ended_in_cooked_mode(child) == 130
    leave(started)


def test_ctrl_c_at_the_editor_is_a_key(spawn: Spawn) -> None:
    child = spawn()
    editor_live(child)
    child.sendcontrol("c")
    child.expect_exact("Press Ctrl-C again to exit")
    child.sendcontrol("d")
    assert ended_in_cooked_mode(child) == 0


def test_the_banner_is_drawn_once(spawn: Spawn) -> None:
    child = spawn()
    editor_live(child)
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    assert child.before is not None
    assert "/help for commands" not in child.before  # (the first one was before the glyph)


def test_an_error_after_the_early_prompt_gives_the_terminal_back(spawn: Spawn) -> None:
    child = spawn("--resume", "20260101-000000-abcdef")
    child.expect("aimon: .*20260101-000000-abcdef")
    assert ended_in_cooked_mode(child) == 1


# Reports what is imported when the early prompt is painted, then stops.
AT_PAINT = """
import sys
from aimon_cli import _commands, _early

def paint(cls, banner, **kwargs):
    heavy = ("asyncio", "prompt_toolkit", "rich", "typer", "anthropic", "openai", "httpx",
             "aimon_core.llm", "aimon_core.agent", "aimon_core.tools", "aimon_core.session._store")
    print(sorted(m for m in heavy if m in sys.modules), banner)
    raise SystemExit(0)

_early.EarlyPrompt.paint = classmethod(paint)
_commands.run([])
"""


def test_the_early_prompt_is_painted_before_the_slow_imports(tmp_path: Path) -> None:
    env = {**os.environ, "ANTHROPIC_API_KEY": "k"}  # a provider, or aimon stops before painting
    primary, terminal = os.openpty()  # stdin a terminal: piped stdin would mean print mode
    try:
        done = subprocess.run([sys.executable, "-c", AT_PAINT], cwd=tmp_path, stdin=terminal,
                              capture_output=True, text=True, timeout=60, check=True, env=env)
    finally:
        os.close(primary)
        os.close(terminal)
    assert done.stdout.startswith("[] aimon "), done.stdout
    assert f"· {tmp_path.resolve()} · /help for commands" in done.stdout
