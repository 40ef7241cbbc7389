"""Fixtures of the settings tests: a project folder, the user's folder, a trust store."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from aimon_core.config import TrustStore
from aimon_core.session import user_config_dir

Writer = Callable[[str, Any], Path]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    return root


@pytest.fixture
def trust_store() -> TrustStore:
    return TrustStore()


@pytest.fixture
def write(project: Path) -> Writer:
    """Write a settings file: "user", "project" or "local"; a str is written as is."""

    def write(layer: str, content: Any) -> Path:
        path = {
            "user": user_config_dir() / "settings.json",
            "project": project / ".aimon" / "settings.json",
            "local": project / ".aimon" / "settings.local.json",
        }[layer]
        path.parent.mkdir(parents=True, exist_ok=True)
        text = content if isinstance(content, str) else json.dumps(content, indent=2)
        path.write_text(text, encoding="utf-8")
        return path

    return write
