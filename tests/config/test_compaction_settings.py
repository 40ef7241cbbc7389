"""The `compaction` settings keys: validated, merged key by key, mapped to the engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from aimon_core.compact import CompactionSettings, compaction_settings, context_window
from aimon_core.config import (
    CompactionConfig,
    SettingsError,
    SettingsLayer,
    TrustStore,
    load_settings,
)

from .conftest import Writer


def test_keys_merge_by_layer_and_reach_the_engine(
    project: Path, trust_store: TrustStore, write: Writer
) -> None:
    write("user", {"compaction": {"threshold": 0.7, "toolResultLimitTokens": 10_000}})
    write("project", {"compaction": {"contextWindow": 20_000}})
    loaded = load_settings(project, trust_store=trust_store)
    config = loaded.settings.compaction
    assert config == CompactionConfig(threshold=0.7, context_window=20_000,
                                      tool_result_limit_tokens=10_000)
    assert loaded.origin["compaction.threshold"] is SettingsLayer.USER
    assert loaded.origin["compaction.contextWindow"] is SettingsLayer.PROJECT
    assert loaded.pending_trust is None  # nothing here runs code or widens permissions
    engine = compaction_settings(threshold=config.threshold,
                                 context_window=config.context_window,
                                 result_limit_tokens=config.tool_result_limit_tokens)
    assert (engine.threshold, engine.window_override, engine.result_limit_tokens) == (
        0.7, 20_000, 10_000)
    assert context_window("claude-sonnet-4-5", "anthropic", engine) == 20_000


def test_defaults_and_the_window_of_unknown_models() -> None:
    assert compaction_settings() == CompactionSettings()
    low = compaction_settings(threshold=0.2)
    assert low.keep_recent_share < low.threshold
    from_env = compaction_settings(environ={"AIMON_CONTEXT_WINDOW": "65536"})
    assert context_window("my-local-model", "openai", from_env) == 65_536
    assert context_window("claude-sonnet-4-5", "anthropic", from_env) != 65_536
    junk = compaction_settings(environ={"AIMON_CONTEXT_WINDOW": "lots"})
    assert junk.unknown_window == CompactionSettings().unknown_window


@pytest.mark.parametrize(("value", "message"), [
    ({"threshold": 1.5}, "compaction.threshold: expected a share of the window between 0.1 and 1"),
    ({"threshold": True}, "compaction.threshold: expected a share"),
    ({"contextWindow": 500}, "compaction.contextWindow: expected a whole number of tokens, "
                             "at least 1,000, got 500"),
    ({"toolResultLimitTokens": "big"}, "compaction.toolResultLimitTokens: expected a whole"),
])
def test_bad_values_name_the_key(project: Path, trust_store: TrustStore, write: Writer,
                                 value: dict[str, object], message: str) -> None:
    write("project", {"compaction": value})
    with pytest.raises(SettingsError) as info:
        load_settings(project, trust_store=trust_store)
    assert message in str(info.value)
