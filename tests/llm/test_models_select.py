"""The model registry, prices, provider selection and client construction."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

from aimon_core.llm import (
    DEFAULT_MODELS,
    AnthropicClient,
    LLMRequest,
    Message,
    ModelConfigError,
    OpenAIClient,
    ProviderChoice,
    RetryingClient,
    Usage,
    choose_provider,
    collect,
    cost_usd,
    make_client,
    model_info,
    ollama_models,
)
from aimon_core.testing import LoopbackModelServer, Reply

ROOT = Path(__file__).resolve().parents[2]

# --- registry ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("claude-opus-4-20250514", "claude-opus-4"),
        ("claude-3-7-sonnet-latest", "claude-3-7-sonnet"),
        ("claude-3-5-haiku-20241022", "claude-3-5-haiku"),
        ("anthropic/claude-sonnet-4.6", "claude-sonnet-4-6"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4o-2024-11-20", "gpt-4o"),
        ("gpt-4.1-nano-2025-04-14", "gpt-4.1-nano"),
        ("gpt-5-mini-2025-08-07", "gpt-5-mini"),
        ("o4-mini-2025-04-16", "o4-mini"),
        ("o3-2025-04-16", "o3"),
    ],
)
def test_dated_ids_and_aliases_match_their_family(name: str, expected: str) -> None:
    assert model_info(name) == dataclasses.replace(model_info(expected), name=name)


def test_known_models_carry_their_rules() -> None:
    haiku = model_info("claude-haiku-4-5")
    assert (haiku.provider, haiku.context_window, haiku.max_output_tokens) == (
        "anthropic", 200_000, 64_000
    )  # fmt: skip
    assert haiku.supports_thinking and not haiku.adaptive_thinking
    assert model_info("claude-opus-4-7").adaptive_thinking
    assert not model_info("claude-opus-4-7").accepts_temperature
    assert not model_info("claude-3-5-haiku").supports_thinking
    o3 = model_info("o3")
    assert o3.uses_max_completion_tokens and not o3.accepts_temperature
    gpt41 = model_info("gpt-4.1")
    assert not gpt41.uses_max_completion_tokens and gpt41.accepts_temperature


def test_unknown_models_get_conservative_limits_and_no_price() -> None:
    info = model_info("qwen2.5-coder:7b", "openai")
    assert info.name == "qwen2.5-coder:7b"
    assert (info.context_window, info.max_output_tokens) == (32_768, 4096)
    assert not info.uses_max_completion_tokens
    assert cost_usd(Usage(input_tokens=10**6, output_tokens=10**6), info) == 0.0


def test_default_models_are_known() -> None:
    for provider, name in DEFAULT_MODELS.items():
        info = model_info(name, provider)
        assert info.provider == provider
        assert info.input_price > 0


def test_cost_adds_every_kind_of_token() -> None:
    info = model_info("claude-opus-4-5")
    usage = Usage(
        input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=2_000_000,
        cache_write_tokens=400_000,
    )  # fmt: skip
    assert cost_usd(usage, info) == pytest.approx(5.0 + 2.5 + 1.0 + 2.5)


def test_importing_the_package_loads_no_sdk() -> None:
    code = (
        "import sys, aimon_core.llm; "
        "print(sorted(m for m in ('anthropic', 'openai', 'httpx2', 'httpx') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


# --- choose_provider -----------------------------------------------------------------------


def no_local() -> str | None:
    return None


def choose(env: dict[str, str] | None = None, **flags: Any) -> ProviderChoice:
    args: dict[str, Any] = {"provider": None, "model": None, "base_url": None}
    args.update(flags)
    args.setdefault("probe_local", no_local)
    return choose_provider(env=env or {}, **args)


def test_nothing_configured_explains_every_way_out() -> None:
    with pytest.raises(ModelConfigError) as caught:
        choose()
    message = str(caught.value)
    for hint in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "--provider", "--base-url", "--model"):
        assert hint in message
    assert "Ollama" in message
    assert not message.startswith("API error")


def test_a_local_ollama_is_the_fallback() -> None:
    choice = choose(
        probe_local=lambda: "http://127.0.0.1:11434", local_models=lambda url: ["qwen3:8b", "x"]
    )
    assert choice == ProviderChoice(
        provider="openai",
        model="qwen3:8b",
        base_url="http://127.0.0.1:11434/v1",
        api_key="ollama",
        detected_local=True,
    )
    named = choose(
        model="llama3.2", probe_local=lambda: "http://127.0.0.1:11434", local_models=lambda u: []
    )
    assert named.model == "llama3.2"


def test_a_local_ollama_without_models_says_so() -> None:
    with pytest.raises(ModelConfigError, match="ollama pull"):
        choose(probe_local=lambda: "http://127.0.0.1:11434", local_models=lambda url: [])


def test_keys_in_the_environment_pick_the_provider() -> None:
    anthropic = choose({"ANTHROPIC_API_KEY": "sk-ant"})
    assert anthropic == ProviderChoice(
        provider="anthropic", model=DEFAULT_MODELS["anthropic"], base_url=None, api_key="sk-ant"
    )
    openai = choose({"OPENAI_API_KEY": "sk-oai"})
    assert (openai.provider, openai.model, openai.api_key) == (
        "openai", DEFAULT_MODELS["openai"], "sk-oai"
    )  # fmt: skip


def test_flags_beat_the_environment() -> None:
    env = {
        "ANTHROPIC_API_KEY": "sk-ant",
        "OPENAI_API_KEY": "sk-oai",
        "AIMON_PROVIDER": "anthropic",
        "AIMON_MODEL": "claude-opus-4-7",
    }
    assert choose(env).model == "claude-opus-4-7"
    assert choose(env, model="gpt-4.1").provider == "openai"
    assert choose(env, provider="openai", model="o3").model == "o3"
    assert (
        choose({**env, "AIMON_PROVIDER": "openai", "AIMON_MODEL": "gpt-4.1"}).provider == "openai"
    )


def test_the_model_name_implies_the_provider() -> None:
    env = {"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "o"}
    assert choose(env, model="claude-haiku-4-5").provider == "anthropic"
    for name in ("gpt-5.4", "o3", "o4-mini"):
        assert choose(env, model=name).provider == "openai"
    assert choose({"OPENAI_API_KEY": "o", "AIMON_MODEL": "gpt-4o"}).provider == "openai"


def test_a_custom_base_url_needs_no_key_but_a_model() -> None:
    choice = choose(base_url="http://gpu-box:8000/v1", model="Qwen/Qwen3-32B")
    assert choice == ProviderChoice(
        provider="openai", model="Qwen/Qwen3-32B", base_url="http://gpu-box:8000/v1",
        api_key="not-needed",
    )  # fmt: skip
    with pytest.raises(ModelConfigError, match="--model"):
        choose(base_url="http://gpu-box:8000/v1")
    env_only = choose({"OPENAI_BASE_URL": "http://vllm:8000/v1", "AIMON_MODEL": "m"})
    assert (env_only.provider, env_only.base_url, env_only.api_key) == (
        "openai", "http://vllm:8000/v1", "not-needed"
    )  # fmt: skip


def test_a_named_provider_without_its_key_is_an_error() -> None:
    with pytest.raises(ModelConfigError, match="OPENAI_API_KEY"):
        choose({"ANTHROPIC_API_KEY": "a"}, provider="openai")
    with pytest.raises(ModelConfigError, match="unknown provider 'gemini'"):
        choose({"ANTHROPIC_API_KEY": "a"}, provider="gemini")


# --- local model listing and make_client ----------------------------------------------------


@contextmanager
def ollama_like(models: list[str]) -> Iterator[str]:
    payload = json.dumps({"models": [{"name": name} for name in models]}).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/api/tags" else 404)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_ollama_models_lists_the_servers_models() -> None:
    with ollama_like(["qwen3:8b", "llama3.2:latest"]) as url:
        assert ollama_models(url) == ["qwen3:8b", "llama3.2:latest"]
        choice = choose(probe_local=lambda: url)
    assert choice.model == "qwen3:8b"
    assert choice.base_url == f"{url}/v1"
    assert ollama_models("http://127.0.0.1:9") == []


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_make_client_wraps_the_provider_client_in_retries(provider: str) -> None:
    with LoopbackModelServer([Reply(text="hi from loopback")], provider=provider) as server:
        base_url = server.base_url if provider == "anthropic" else server.openai_base_url
        choice = ProviderChoice(
            provider=provider, model=DEFAULT_MODELS[provider], base_url=base_url, api_key="k"
        )
        client = make_client(choice, idle_timeout=5.0)
        assert isinstance(client, RetryingClient)
        expected = AnthropicClient if provider == "anthropic" else OpenAIClient
        assert isinstance(client.inner, expected)
        assert client.provider == provider

        async def run() -> str:
            try:
                req = LLMRequest(model=choice.model, system="", messages=(Message.user("hello"),))
                return (await collect(client.stream(req))).text
            finally:
                await client.aclose()

        assert asyncio.run(run()) == "hi from loopback"
