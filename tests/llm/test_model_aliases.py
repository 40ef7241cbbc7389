"""Claude Code's model aliases (`haiku`, `sonnet`, `opus`, `inherit`): one place reads them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from aimon_core.llm import (
    ScriptedLLMClient,
    agent_model,
    known_models,
    reply,
    resolve_model_alias,
)
from aimon_core.runtime import RuntimeParts, build_runtime
from aimon_core.session import MemorySessionLeaseStore, MemorySessionRecordStore, SessionStore

# (alias, provider) -> the model it means; every alias is a model the registry knows.
ALIASES = {
    ("haiku", "anthropic"): "claude-haiku-5-5",
    ("sonnet", "anthropic"): "claude-sonnet-5-5",
    ("opus", "anthropic"): "claude-opus-5-5",
    ("Sonnet", "anthropic"): "claude-sonnet-5-5",
    ("sonnet[1m]", "anthropic"): "claude-sonnet-5-5",
    ("fable", "anthropic"): "claude-fable-5-1",
    ("haiku", "openai"): "gpt-5.4-mini",
    ("sonnet", "openai"): "gpt-5.4",
    ("opus", "openai"): "gpt-5.5",
}


@pytest.mark.parametrize(("alias", "provider"), sorted(ALIASES))
def test_an_alias_means_the_providers_current_model(alias: str, provider: str) -> None:
    model = resolve_model_alias(alias, provider)
    assert model == ALIASES[alias, provider]
    assert model in known_models(provider)


@pytest.mark.parametrize("name", ["claude-sonnet-4-5", "gpt-4o", "llama3", "", "son net",
                                  "fable", "haiku-ish"])
def test_names_that_are_no_alias_for_openai(name: str) -> None:
    assert resolve_model_alias(name, "openai") is None


CASES = [
    # (wanted, provider, session's model) -> model the agent runs on
    (None, "anthropic", "claude-sonnet-5-5", "claude-sonnet-5-5"),
    ("inherit", "anthropic", "claude-opus-5-5", "claude-opus-5-5"),
    ("haiku", "anthropic", "claude-sonnet-5-5", "claude-haiku-5-5"),
    ("opus", "openai", "gpt-5.4", "gpt-5.5"),
    ("claude-opus-4-5", "anthropic", "claude-sonnet-5-5", "claude-opus-4-5"),
    # Another provider's model cannot be reached from this session: the session's is kept.
    ("claude-opus-4-5", "openai", "gpt-5.4", "gpt-5.4"),
    ("gpt-4o", "anthropic", "claude-sonnet-5-5", "claude-sonnet-5-5"),
    # A local model server: an alias keeps the model it serves; its own names pass.
    ("haiku", "openai", "llama3.1:8b", "llama3.1:8b"),
    ("qwen2.5-coder", "openai", "llama3.1:8b", "qwen2.5-coder"),
]


@pytest.mark.parametrize(("wanted", "provider", "current", "expected"), CASES)
def test_agent_model(wanted: str | None, provider: str, current: str, expected: str) -> None:
    assert agent_model(wanted, provider, current) == expected


# A subagent's `model: haiku` in use: tests/subagent/test_agent_fields.py.


# `--model NAME` (and AIMON_MODEL): (flags, env) -> the model chosen. An alias means the
# provider's model of that rank, except on an OpenAI-compatible server, which serves any name.
FLAG_CASES = [
    ({"model": "haiku"}, {"ANTHROPIC_API_KEY": "a"}, "claude-haiku-5-5"),
    ({"model": "opus"}, {"OPENAI_API_KEY": "o"}, "gpt-5.5"),
    ({}, {"ANTHROPIC_API_KEY": "a", "AIMON_MODEL": "sonnet"}, "claude-sonnet-5-5"),
    ({"model": "sonnet", "provider": "anthropic", "base_url": "http://127.0.0.1:9"},
     {"ANTHROPIC_API_KEY": "a"}, "claude-sonnet-5-5"),
    ({"model": "haiku", "base_url": "http://127.0.0.1:9"}, {}, "haiku"),
    ({"model": "claude-opus-4-5"}, {"ANTHROPIC_API_KEY": "a"}, "claude-opus-4-5"),
]


@pytest.mark.parametrize(("flags", "env", "expected"), FLAG_CASES)
def test_the_model_flag_reads_aliases(flags: dict[str, str], env: dict[str, str],
                                      expected: str) -> None:
    from aimon_core.llm import choose_provider

    args = {"provider": None, "model": None, "base_url": None, **flags}
    choice = choose_provider(env=env, probe_local=lambda: None, local_models=lambda _: (),
                             **args)
    assert choice.model == expected


@pytest.mark.parametrize(("alias", "provider"), [("haiku", "anthropic"), ("Opus", "anthropic"),
                                                 ("sonnet", "openai")])
def test_slash_model_reads_aliases(tmp_path: Path, alias: str, provider: str,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    current = "claude-sonnet-4-5" if provider == "anthropic" else "gpt-4o"
    client = ScriptedLLMClient(steps=[reply("ok")], provider=provider)
    expected = resolve_model_alias(alias, provider)

    async def main() -> None:
        assembly = build_runtime(tmp_path, parts=RuntimeParts(client=client, model=current))
        store = SessionStore(MemorySessionRecordStore(), MemorySessionLeaseStore())
        live = await assembly.open_session(store)
        switched = await live.submit(f"/model {alias}")
        assert switched.text.startswith(f"Model: {expected} (was {current})")
        await live.submit("hello")
        await live.close()
        await assembly.aclose()

    asyncio.run(main())
    assert [r.model for r in client.requests] == [expected]
