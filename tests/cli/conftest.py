"""Shared fixtures of the CLI tests: a loopback model server, a project, and `aimon` in a pty.

Every wait is on screen text (or on a process appearing or going away), never a fixed sleep.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pytest

from aimon_core.session import FileSessionRecordStore, SessionRecord, parse_session_id
from aimon_core.testing import LoopbackModelServer

AIMON = str(Path(sys.executable).with_name("aimon"))
TIMEOUT = 15
RESUME_HINT = r"Resume this session with: aimon --resume (\d{8}-\d{6}-[0-9a-f]{6})"
# The REPL is the same on either wire; `import openai` costs ~0.8 CPU-s less per start than
# `import anthropic`, and the pty tests start aimon about a hundred times.
PROVIDER, MODEL = "openai", "gpt-5.4"


def provider_env(server: LoopbackModelServer) -> dict[str, str]:
    """Return the environment that points aimon's provider at `server`."""
    return {"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": server.base_url}


@pytest.fixture
def server() -> Iterator[LoopbackModelServer]:
    with LoopbackModelServer(provider=PROVIDER) as srv:
        yield srv


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    return root


@pytest.fixture
def home() -> Path:
    return Path(os.environ["AIMON_HOME"])


Spawn = Callable[..., pexpect.spawn]


@pytest.fixture
def spawn(server: LoopbackModelServer, project: Path, home: Path) -> Iterator[Spawn]:
    children: list[pexpect.spawn] = []

    def start(*args: str, first: str | None = "›", env: dict[str, str] | None = None,
              dimensions: tuple[int, int] = (40, 120), model: tuple[str, ...] | None = None,
              cwd: Path | None = None) -> pexpect.spawn:
        """Start aimon with `args`; wait for `first` on screen (None: do not wait).

        `env` is added to the environment; `model` replaces the provider and model flags.
        """
        environment = {k: v for k, v in os.environ.items()
                       if not k.startswith(("ANTHROPIC_", "OPENAI_", "AIMON_PROVIDER",
                                            "AIMON_MODEL"))}
        environment.update(provider_env(server), AIMON_HOME=str(home),
                           AIMON_NO_LOCAL_PROBE="1", PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm")
        environment.update(env or {})
        chosen = model if model is not None else ("--provider", PROVIDER, "--model", MODEL)
        child = pexpect.spawn(AIMON, [*chosen, *args], cwd=str(cwd or project),
                              env=environment, dimensions=dimensions, encoding="utf-8",
                              timeout=TIMEOUT)
        child.logfile_read = io.StringIO()  # all it wrote, for `screen_text`
        children.append(child)
        if first is not None:
            child.expect_exact(first)  # by default, the first prompt
        return child

    yield start
    for child in children:
        if child.isalive():
            child.terminate(force=True)


# What the terminal may put between two characters of a line it wrapped: the line break and
# the escape sequences around it (colour, cursor moves).
_WRAP = r"(?:[\s]|\x1b\[[0-9;?]*[A-Za-z])*"


def expect_text(child: pexpect.spawn, text: str, timeout: float | None = -1) -> None:
    """Wait for `text` on screen wherever the terminal wrapped it.

    A line that holds a temporary path wraps where the path's length puts it (pytest's
    folders grow with the run counter and the worker), so a fixed wrap point is never assumed.
    """
    child.expect(_WRAP.join(re.escape(char) for char in text if not char.isspace()),
                 timeout=timeout)


def expect_screen(child: pexpect.spawn, text: str, timeout: float = TIMEOUT) -> None:
    """Wait until `text` shows on the emulated screen of `child` (started 40x120).

    For the live area under the prompt: the line editor redraws only the characters that
    changed, so a line there ("⠼ running Bash · 2s") may never be written out whole.
    """
    from .test_resize_pty import Terminal

    deadline = time.monotonic() + timeout
    while True:
        terminal = Terminal(40, 120)
        terminal.feed(child.logfile_read.getvalue())
        if any(text in row for row in terminal.screen()):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} did not show: {terminal.screen()}")
        with contextlib.suppress(pexpect.TIMEOUT):  # more output lands in logfile_read,
            more = child.read_nonblocking(size=65536, timeout=0.2)
            child.buffer = child.buffer + more  # and stays for the expectations after this


def wait_prompt(child: pexpect.spawn) -> None:
    """Wait for the prompt drawn after a command's output (keys before it may be lost)."""
    child.expect_exact("›")


def editor_live(child: pexpect.spawn) -> None:
    """Wait until the line editor runs (keys before it are kept, but Ctrl-C stops aimon)."""
    child.send("zq")
    child.expect_exact("zq")
    child.sendcontrol("u")


def leave(child: pexpect.spawn) -> str:
    """Press Ctrl-D; return the session id of the resume hint, after the process ended.

    A session that never got a prompt is not stored and has no hint: "" then.
    """
    child.sendcontrol("d")
    session_id = ""
    if child.expect([RESUME_HINT, pexpect.EOF]) == 0:
        session_id = child.match.group(1)
        child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, str(child.before)[-2000:]
    return str(session_id)


def stored(home: Path, session_id: str) -> SessionRecord:
    return FileSessionRecordStore(home / "data").load(parse_session_id(session_id))


def wait_until(condition: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.05)


class Checks:
    """Expectations of one long pty story, each named by the item it shows (`m7`, `p4`).

    A check that fails is noted and the story goes on, so that one run against older code
    names every item that fails, not only the first; `done` fails the test with them all.
    """

    def __init__(self, child: pexpect.spawn, timeout: float = 8) -> None:
        self.child, self.timeout = child, timeout
        self.failed: list[str] = []

    def see(self, item: str, text: str, *, exact: bool = False, live: bool = False) -> bool:
        """Wait for `text` on screen (anywhere it wraps unless `exact`; `live`: in the live
        area under the prompt, read off the emulated screen); note a miss."""
        try:
            if live:
                expect_screen(self.child, text, timeout=self.timeout)
            elif exact:
                self.child.expect_exact(text, timeout=self.timeout)
            else:
                expect_text(self.child, text, timeout=self.timeout)
        except (pexpect.TIMEOUT, pexpect.EOF, AssertionError):
            self.failed.append(f"{item}: did not see {text!r}")
            return False
        return True

    def check(self, item: str, ok: bool, what: str) -> None:
        """Note `what` as failed for `item` unless `ok`."""
        if not ok:
            self.failed.append(f"{item}: {what}")

    def done(self) -> None:
        """Fail with every check that failed."""
        assert not self.failed, "\n".join(self.failed)


def screen_text(child: pexpect.spawn) -> str:
    """Return everything `child` wrote so far (what the last expect consumed, for a child
    started elsewhere), without escape sequences, for `in` checks."""
    log = child.logfile_read
    text = log.getvalue() if isinstance(log, io.StringIO) else str(child.before) + str(
        child.after)
    return _CODES.sub("", text)


_CODES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|[\r\x08]")
