"""House rules that live as tests so they cannot drift (STYLE.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("aimon_core", "aimon_cli")


def test_no_module_over_600_lines() -> None:
    too_long = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            lines = path.read_text(encoding="utf-8").count("\n")
            if lines > 600:
                too_long.append(f"{path.relative_to(ROOT)}: {lines} lines")
    assert not too_long, "split these modules: " + ", ".join(too_long)


def test_importing_the_core_loads_no_sdk_and_does_no_work() -> None:
    code = (
        "import sys, aimon_core.agent, aimon_core.llm, aimon_core.tools, aimon_core.session, "
        "aimon_core.permission, aimon_core.hook, aimon_core.config, aimon_core.command\n"
        "heavy = [m for m in ('anthropic', 'openai', 'httpx2', 'rich', 'prompt_toolkit', "
        "'typer') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    assert done.stdout.strip() == ""


def test_the_word_session_is_never_a_bare_type_name() -> None:
    offenders = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                stripped = line.strip()
                if stripped.startswith(("class Session(", "class Session:",
                                        "class AgentSession")):
                    offenders.append(f"{path.relative_to(ROOT)}:{number}")
    assert not offenders
