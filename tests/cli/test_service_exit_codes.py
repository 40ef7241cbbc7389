"""A service command that fails exits non-zero (Typer hands back the code, not an exception)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

AIMON = str(Path(sys.executable).with_name("aimon"))


@pytest.mark.parametrize(("args", "code", "says"), [
    (("stop", "nosuch"), 1, "no service runs"),
    (("serve", "--status"), 1, "no service runs"),
    (("schedule", "add", "x", "--every", "0s", "p"), 2, "a duration is"),
    (("schedule", "add", "x", "p"), 2, "give one of"),
])
def test_a_failing_service_command_exits_non_zero(args: tuple[str, ...], code: int,
                                                   says: str, tmp_path: Path) -> None:
    done = subprocess.run([AIMON, *args], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, check=False)
    assert done.returncode == code, done.stderr
    assert says in done.stderr
