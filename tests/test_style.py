"""House rules that live as tests so they cannot drift (STYLE.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests._build_rules import private_imports, turn_words

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


# --- The seeds' build rules (tests/_build_rules.py); each also runs on a planted violation.


def _plant(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_no_package_imports_another_packages_private_module() -> None:
    assert private_imports(ROOT) == []


@pytest.mark.parametrize(("source", "found"), [
    ("from aimon_core.skill._layers import LayeredRegistry\n",
     "aimon_core.subagent._registry -> aimon_core.skill._layers"),
    ("import aimon_core.session._record\n",
     "aimon_core.subagent._registry -> aimon_core.session._record"),
    ("def f():\n    from aimon_core.skill import _layers\n",
     "aimon_core.subagent._registry -> aimon_core.skill._layers"),
    ("if TYPE_CHECKING:\n    from aimon_core.skill._model import Layer\n",
     "aimon_core.subagent._registry -> aimon_core.skill._model"),
    ("from aimon_core.skill import _private_helper\n",
     "aimon_core.subagent._registry -> aimon_core.skill._private_helper"),
])
def test_privacy_rule_finds_a_planted_import(tmp_path: Path, source: str, found: str) -> None:
    own = "from aimon_core.skill._model import X\nfrom aimon_core._atomic import write_atomic\n"
    root = _plant(tmp_path, {"aimon_core/__init__.py": "", "aimon_core/skill/__init__.py": "",
                             "aimon_core/skill/_layers.py": own,
                             "aimon_core/subagent/_registry.py": source})
    assert found in private_imports(root)
    # Inside its own package a private module is fair game; the top package's too.
    assert not [f for f in private_imports(root) if f.startswith("aimon_core.skill.")]


def test_turn_vocabulary_stays_where_a_session_turn_is_the_subject() -> None:
    assert turn_words(ROOT) == []


@pytest.mark.parametrize("source", [
    "class ForkTurn:\n    pass\n",
    "def run_turn(request):\n    pass\n",
    "def run(turns):\n    pass\n",
    "TURN_LIMIT = 3\n",
    "class Options:\n    max_turns: int = 3\n",
    "def run(x):\n    x.turn_id = 1\n",
    "Spec(per_turn=True)\n",
])
def test_turn_vocabulary_rule_finds_a_planted_word(tmp_path: Path, source: str) -> None:
    root = _plant(tmp_path, {"aimon_core/subagent/_run.py": source,
                             "aimon_core/live/_live.py": source})
    found = turn_words(root)
    assert found and all(f.startswith("aimon_core.subagent._run:") for f in found)


def test_turn_vocabulary_lets_any_package_carry_the_executors_turn(tmp_path: Path) -> None:
    root = _plant(tmp_path, {"aimon_core/tools/_x.py": (
        "def run(turn: Turn | None) -> int:\n    return replace(ctx, turn=turn)\n")})
    assert turn_words(root) == []
