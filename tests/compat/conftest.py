"""A Claude Code project, as people bring one to aimon: `.claude/settings.json`, hook scripts."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aimon_core.config import TrustStore, load_settings

HOOK_SCRIPTS = Path(__file__).with_name("hooks")
MakeProject = Callable[[dict[str, Any]], Path]


def claude_project(root: Path, settings: dict[str, Any]) -> Path:
    """Make `root` a Claude Code project: the hook scripts and `.claude/settings.json`."""
    hooks = root / ".claude" / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    for script in HOOK_SCRIPTS.glob("*.sh"):
        shutil.copy2(script, hooks / script.name)
    (root / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))
    return root


def trust(root: Path) -> None:
    """Trust the folder as the user would at the prompt (the same rule as `.aimon/`)."""
    loaded = load_settings(root, trust_store=TrustStore())
    if loaded.pending_trust is not None:
        TrustStore().trust(root, loaded.pending_trust.items)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    return root


@pytest.fixture
def make_project(project: Path) -> MakeProject:
    """Return a function that writes `.claude/` with these settings and trusts the folder."""
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed: the hook scripts are written as Claude Code users "
                    "write them, with jq (.ci/run installs it)")

    def make(settings: dict[str, Any]) -> Path:
        claude_project(project, settings)
        trust(project)
        return project

    return make
