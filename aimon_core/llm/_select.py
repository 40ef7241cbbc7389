"""Choose a provider, model and endpoint from flags and environment, and build its client."""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aimon_core.llm._client import LLMClient
from aimon_core.llm._errors import ModelConfigError
from aimon_core.llm._models import DEFAULT_MODELS, implied_provider, resolve_model_alias
from aimon_core.llm._retry import RetryingClient, RetryPolicy

PROVIDERS = ("anthropic", "openai")
OLLAMA_HOST = "127.0.0.1"
OLLAMA_PORT = 11434
# A custom OpenAI-compatible endpoint (Ollama, vLLM) takes any key; the SDK insists on one.
PLACEHOLDER_KEY = "not-needed"

NOTHING_CONFIGURED = """\
No model provider is configured. Do one of these:
  - set ANTHROPIC_API_KEY to use Claude, or OPENAI_API_KEY to use OpenAI;
  - pass --provider openai --base-url URL --model NAME for an OpenAI-compatible server
    (vLLM, LM Studio, OpenRouter), or set AIMON_PROVIDER, OPENAI_BASE_URL and AIMON_MODEL;
  - start Ollama (https://ollama.com) and pull a model: aimon finds it on 127.0.0.1:11434."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderChoice:
    """The provider, model and endpoint a session talks to."""

    provider: str
    model: str
    base_url: str | None
    api_key: str
    detected_local: bool = False
    """True when nothing was configured and a local Ollama server was found."""


def probe_ollama() -> str | None:
    """Return Ollama's base URL if it answers on 127.0.0.1:11434 within 0.3 s, else None."""
    try:
        _get_json(OLLAMA_HOST, OLLAMA_PORT, "/api/tags", timeout=0.3)
    except (OSError, ValueError, http.client.HTTPException):
        return None
    return f"http://{OLLAMA_HOST}:{OLLAMA_PORT}"


def ollama_models(base_url: str) -> list[str]:
    """Return the names of the models an Ollama server holds (empty if it cannot tell)."""
    host, _, port = base_url.split("://", 1)[-1].split("/", 1)[0].partition(":")
    try:
        listing = _get_json(host, int(port or 80), "/api/tags", timeout=2.0)
    except (OSError, ValueError, http.client.HTTPException):
        return []
    models = listing.get("models") if isinstance(listing, dict) else None
    return [str(m["name"]) for m in models or () if isinstance(m, dict) and m.get("name")]


def _get_json(host: str, port: int, path: str, *, timeout: float) -> Any:
    # http.client, not urllib: no proxy settings apply to a loopback probe.
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        if response.status != 200:
            raise ValueError(f"HTTP {response.status} from {path!r}")
        return json.loads(response.read())
    finally:
        connection.close()


def choose_provider(
    *,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    env: Mapping[str, str],
    probe_local: Callable[[], str | None] = probe_ollama,
    local_models: Callable[[str], Sequence[str]] = ollama_models,
) -> ProviderChoice:
    """Decide what to talk to: flags beat the environment; a local Ollama is the fallback.

    Raises ModelConfigError with one message listing the ways to configure when nothing works.
    """
    env_model = env.get("AIMON_MODEL") or None
    chosen = (
        provider
        or implied_provider(model)
        or ("openai" if base_url else None)
        or env.get("AIMON_PROVIDER")
        or implied_provider(env_model)
        or _provider_from_keys(env)
    )
    model = model or env_model
    if chosen is None:
        return _local_choice(model, probe_local, local_models)
    if chosen not in PROVIDERS:
        raise ModelConfigError(
            f"unknown provider {chosen!r}: use 'anthropic' or 'openai' "
            "(any OpenAI-compatible server is 'openai' with --base-url)"
        )
    prefix = chosen.upper()
    base_url = base_url or env.get(f"{prefix}_BASE_URL") or None
    api_key = env.get(f"{prefix}_API_KEY") or (PLACEHOLDER_KEY if base_url else None)
    if api_key is None:
        raise ModelConfigError(
            f"provider {chosen!r} needs an API key: set {prefix}_API_KEY, or pass --base-url "
            "for a server that needs none"
        )
    if model is None and base_url and chosen == "openai":
        raise ModelConfigError(
            f"name the model to use on {base_url!r}: pass --model NAME or set AIMON_MODEL"
        )
    if model is not None and not (base_url and chosen == "openai"):
        # `--model haiku`, as in Claude Code; an OpenAI-compatible server serves any name.
        model = resolve_model_alias(model, chosen) or model
    return ProviderChoice(
        provider=chosen, model=model or DEFAULT_MODELS[chosen], base_url=base_url, api_key=api_key
    )


def _provider_from_keys(env: Mapping[str, str]) -> str | None:
    for name in PROVIDERS:
        prefix = name.upper()
        if env.get(f"{prefix}_API_KEY") or env.get(f"{prefix}_BASE_URL"):
            return name
    return None


def _local_choice(
    model: str | None,
    probe_local: Callable[[], str | None],
    local_models: Callable[[str], Sequence[str]],
) -> ProviderChoice:
    found = probe_local()
    if found is None:
        raise ModelConfigError(NOTHING_CONFIGURED)
    found = found.rstrip("/")
    if model is None:
        models = local_models(found)
        if not models:
            raise ModelConfigError(
                f"Ollama is running at {found} but holds no models: run `ollama pull MODEL`, "
                "or pass --model NAME"
            )
        model = models[0]
    return ProviderChoice(
        provider="openai",
        model=model,
        base_url=f"{found}/v1",
        api_key="ollama",
        detected_local=True,
    )


def make_client(
    choice: ProviderChoice, *, idle_timeout: float = 60.0, retry: RetryPolicy | None = None
) -> LLMClient:
    """Build the client for `choice`, wrapped in the one retry owner."""
    inner: LLMClient
    # Each provider's client is imported when chosen: an OpenAI run never loads the Anthropic
    # client's module (nor the reverse).
    if choice.provider == "anthropic":
        from aimon_core.llm._anthropic import AnthropicClient

        inner = AnthropicClient(
            api_key=choice.api_key, base_url=choice.base_url, idle_timeout=idle_timeout
        )
    elif choice.provider == "openai":
        from aimon_core.llm._openai import OpenAIClient

        inner = OpenAIClient(
            api_key=choice.api_key, base_url=choice.base_url, idle_timeout=idle_timeout
        )
    else:
        raise ModelConfigError(f"unknown provider {choice.provider!r}")
    return RetryingClient(inner, retry or RetryPolicy())
