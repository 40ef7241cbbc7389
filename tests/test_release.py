"""The release gate is CI's gate (the seeds' ReleaseGateMatchesCiGateTest).

`scripts/release` runs in a scratch copy whose `.ci/run` and `.venv/bin/python` only record
how they were called, so each test sees exactly what the release would run.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from aimon_core.shell import PROVIDER_KEYS

ROOT = Path(__file__).resolve().parent.parent
RELEASE = ROOT / "scripts" / "release"

_RECORDER = """#!/usr/bin/env bash
stdin=$(cat)
echo "{name} CI=${{CI:-}} stdin=${{stdin}} args=$*" >> "$RELEASE_LOG"
{tail}
"""


def _scratch(tmp_path: Path, script: str, gate_status: int = 0) -> Path:
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "release").write_text(script)
    for path, name, tail in (
            (root / ".ci" / "run", "ci-run", f"exit {gate_status}"),
            (root / ".venv" / "bin" / "python", "python", "mkdir -p dist && touch dist/a.whl")):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_RECORDER.format(name=name, tail=tail))
        path.chmod(0o755)
    return root


def _release(root: Path, **env: str) -> tuple[int, list[str], str]:
    log = root / "calls.log"
    clean = {k: v for k, v in os.environ.items() if k.upper() not in PROVIDER_KEYS}
    done = subprocess.run(["bash", str(root / "scripts" / "release")], input="typed at the release",
                          capture_output=True, text=True, timeout=60,
                          env={**clean, "RELEASE_LOG": str(log), **env})
    calls = log.read_text().splitlines() if log.exists() else []
    return done.returncode, calls, done.stderr


def test_the_release_runs_ci_as_ci_runs_it_then_builds(tmp_path: Path) -> None:
    code, calls, _ = _release(_scratch(tmp_path, RELEASE.read_text()), CI="")
    assert code == 0
    # CI runs `bash .ci/run` with CI=true and no standard input; the release, the same.
    build = "-m pip wheel -q --no-deps --no-build-isolation -w dist ."
    assert calls == ["ci-run CI=true stdin= args=", f"python CI= stdin= args={build}"]


def test_a_failing_gate_stops_the_release(tmp_path: Path) -> None:
    code, calls, _ = _release(_scratch(tmp_path, RELEASE.read_text(), gate_status=3))
    assert code == 3
    assert calls == ["ci-run CI=true stdin= args="]


@pytest.mark.parametrize("name", sorted({spelling for key in PROVIDER_KEYS
                                         for spelling in (key, key.lower(), key.title())}))
@pytest.mark.parametrize("value", ["sk-ant-api03-abcdefgh", ""])
def test_a_provider_key_in_the_environment_stops_it_before_anything_runs(
        tmp_path: Path, name: str, value: str) -> None:
    code, calls, err = _release(_scratch(tmp_path, RELEASE.read_text()), **{name: value})
    assert code == 2
    assert calls == []
    assert name in err


def test_the_release_knows_every_provider_key() -> None:
    listed = re.search(r"^PROVIDER_KEYS=\((.*)\)$", RELEASE.read_text(), re.MULTILINE)
    assert listed is not None
    assert set(listed.group(1).split()) == PROVIDER_KEYS


@pytest.mark.parametrize("gate", [
    ".venv/bin/python -m pytest -q",            # a gate of its own instead of CI's
    "bash .ci/run",                             # CI's, but not as CI runs it (CI unset, stdin)
    "CI=true bash .ci/run </dev/null || true",  # CI's, its failure ignored
])
def test_a_planted_gate_of_its_own_is_caught(tmp_path: Path, gate: str) -> None:
    script = RELEASE.read_text().replace("CI=true bash .ci/run </dev/null", gate)
    assert script != RELEASE.read_text()
    code, calls, _ = _release(_scratch(tmp_path, script, gate_status=3), CI="")
    assert (code, calls) != (3, ["ci-run CI=true stdin= args="])

