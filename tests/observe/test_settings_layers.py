"""What a file that comes with a project may do to the caps, the prices and trace content.

A generated table: each project file (Claude Code's two, aimon's two) against each way to
loosen what the user set (raise a cap, remove one by setting a huge value, price a model below
the user's price or below aimon's table, send content to the exporter). None takes effect; the
same files may tighten (a lower cap, a higher price), and the user's own file may do anything.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from aimon_core.llm import DEFAULT_PRICES
from aimon_core.observe import ObserveSettings, price_table
from aimon_core.runtime import load_runtime_settings

PROJECT_FILES = (".claude/settings.json", ".claude/settings.local.json", ".aimon/settings.json",
                 ".aimon/settings.local.json")
USER = {"budget": {"perTurnUsd": 1, "dailyUsd": 5, "monthlyUsd": 50},
        "prices": {"my-model": {"input": 2, "output": 8}}}
TABLE = "claude-sonnet-4-5"  # aimon's table: $3 in, $15 out
LOOSENING: dict[str, dict[str, Any]] = {
    "raise the per-turn cap": {"budget": {"perTurnUsd": 100}},
    "raise the daily cap": {"budget": {"dailyUsd": 1e9}},
    "raise the monthly cap": {"budget": {"monthlyUsd": 1e12}},
    "zero the user's price": {"prices": {"my-model": {"input": 0, "output": 0}}},
    "price a prefix of the user's model at 0": {"prices": {"my-": {"input": 0, "output": 0}}},
    "zero a table price": {"prices": {TABLE: {"input": 0, "output": 0}}},
    "lower a table price by prefix": {"prices": {"claude": {"input": 0.01, "output": 0.01}}},
    "include content in traces": {"tracing": {"includeContent": True}},
}


def observed(tmp_path: Path, project_file: str | None, project: dict[str, Any]) -> ObserveSettings:
    user = Path(os.environ["AIMON_HOME"]) / "config" / "settings.json"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(json.dumps(USER))
    if project_file is not None:
        path = tmp_path / project_file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(project))
    return load_runtime_settings(tmp_path, trust_all=True).settings.observe


def effect(settings: ObserveSettings) -> tuple[object, ...]:
    prices = price_table(settings)
    return (settings.caps, settings.tracing.include_content,
            prices.price("my-model"), prices.price("my-model-2"), prices.price(TABLE),
            prices.price(TABLE + "-20250929"))


@pytest.mark.parametrize("project_file", PROJECT_FILES)
@pytest.mark.parametrize("how", list(LOOSENING))
def test_a_project_file_cannot_loosen(tmp_path: Path, project_file: str, how: str) -> None:
    users_own = effect(observed(tmp_path, None, {}))  # before the project's file is written
    assert effect(observed(tmp_path, project_file, LOOSENING[how])) == users_own


def test_a_project_file_may_tighten(tmp_path: Path) -> None:
    settings = observed(tmp_path, ".aimon/settings.json", {
        "budget": {"dailyUsd": 1}, "prices": {"my-model": {"output": 20}, TABLE: {"input": 4}}})
    prices = price_table(settings)
    assert settings.caps.daily_usd == 1 and settings.caps.monthly_usd == 50
    assert settings.cap_sources["budget.dailyUsd"] == "project"
    assert (prices.price("my-model").input, prices.price("my-model").output) == (2, 20)
    assert prices.price(TABLE).input == 4
    assert prices.price(TABLE).output == DEFAULT_PRICES.price(TABLE).output


def test_the_users_file_may_lower_a_table_price(tmp_path: Path) -> None:
    user = Path(os.environ["AIMON_HOME"]) / "config" / "settings.json"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text(json.dumps({"prices": {TABLE: {"input": 1}},
                                "tracing": {"includeContent": True}}))
    settings = load_runtime_settings(tmp_path, trust_all=True).settings.observe
    assert price_table(settings).price(TABLE).input == 1
    assert settings.tracing.include_content
