"""The REPL's prompt in a real pseudo-terminal: long pastes folded, an interrupted turn's cost.

One `aimon` run tries several things in a row (each `aimon` costs ~1.5 CPU-seconds).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from aimon_cli.render import status_line
from aimon_core.llm import Usage
from aimon_core.testing import LoopbackModelServer, Reply, StallStream

from .conftest import Spawn, leave, wait_prompt

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")


def paste(text: str) -> str:
    """Return `text` as a terminal sends a paste (bracketed, lines ending in CR)."""
    return "\x1b[200~" + text.replace("\n", "\r") + "\x1b[201~"


def test_long_pastes_fold_and_an_interrupted_turn_shows_what_it_spent(
        spawn: Spawn, server: LoopbackModelServer, home: Path) -> None:
    first = "\n".join(f"line {i}" for i in range(1, 13))
    second = "\n".join(f"row {i}" for i in range(1, 16))
    dropped = "\n".join(f"gone {i}" for i in range(1, 12))
    server.add(StallStream(reply=Reply(text="Partial answer.\n\n" + "x" * 40),
                           after_events=4, seconds=60))
    child = spawn()
    child.send("look at " + paste(first))
    child.expect_exact("look at [Pasted text +12 lines]")
    child.send(" and " + paste(second))
    child.expect_exact("[Pasted text #2 +15 lines]")
    child.send(paste(dropped))
    child.expect_exact("[Pasted text #3 +11 lines]")
    child.send("\x7f")  # Backspace right after a placeholder removes it whole
    child.send("\x01Please ")  # typed before the placeholders (Ctrl-A: start of the line)
    child.send("\x05 thanks\r")  # and after them (Ctrl-E: end of the line)
    child.expect_exact("Partial answer.")
    child.expect_exact("Esc/Ctrl-C to interrupt")
    child.send("\x1b")
    child.expect_exact("Interrupted. Partial output is kept")
    # The footer counts the cut-off call; OpenAI reports usage only at the end: estimated.
    child.expect(r"─ ~[1-9][\d.]*k? in · ~[1-9]\d* out · ~\$\d")
    wait_prompt(child)
    child.send("/status\r")
    child.expect(r"Tokens\s+[1-9][\d.]*k? in · [1-9]\d* out")  # the totals count it
    wait_prompt(child)
    (request,) = server.requests
    sent = "Please look at " + first + " and " + second + " thanks"
    assert request.conversation()[0] == ("user", sent)
    leave(child)
    history = (home / "data" / "prompt-history").read_text()
    assert "line 12" in history and "[Pasted text" not in history  # the history has it whole


def test_a_footer_with_estimated_usage_says_so() -> None:
    usage = Usage(input_tokens=1200, cache_read_tokens=300, output_tokens=100)
    assert status_line(usage, 0.0123, "s1").plain == "─ 1.5k in · 100 out · $0.0123 · session s1"
    assert status_line(usage, 0.0123, "s1", estimated=True).plain == (
        "─ ~1.5k in · ~100 out · ~$0.0123 · session s1")
