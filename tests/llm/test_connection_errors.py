"""Connection failures and timeouts name the provider and the URL, and give up soon.

Real SDKs against a closed loopback port (nothing listens: connection refused) and against
the loopback model server (a stalled stream, a reset connection).
"""

from __future__ import annotations

import asyncio
import errno
import socket

import pytest

from aimon_core.llm import (
    AnthropicClient,
    LLMClient,
    LLMConnectionError,
    LLMError,
    LLMRequest,
    LLMStreamError,
    LLMTimeoutError,
    Message,
    OpenAIClient,
    RetryingClient,
    RetryPolicy,
)
from aimon_core.llm._retry import api_url, transport_error
from aimon_core.testing import LoopbackModelServer, Reply, StallStream

PROVIDERS = ("anthropic", "openai")
MODELS = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-5.4"}
MID_TEXT = {"anthropic": 4, "openai": 2}


class RecordingSleep:
    """An injectable sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def closed_port() -> int:
    """Return a loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def client(provider: str, base_url: str, idle_timeout: float = 5.0) -> LLMClient:
    if provider == "anthropic":
        return AnthropicClient(api_key="k", base_url=base_url, idle_timeout=idle_timeout)
    return OpenAIClient(api_key="k", base_url=base_url, idle_timeout=idle_timeout)


def failure(inner: LLMClient, sleep: RecordingSleep | None = None) -> LLMError:
    """Stream one request through RetryingClient (no jitter); return the error it ends with."""
    request = LLMRequest(model=MODELS[inner.provider], system="s", messages=(Message.user("hi"),))

    async def run() -> LLMError:
        retrying = RetryingClient(inner, RetryPolicy(jitter=0.0), sleep=sleep or RecordingSleep())
        try:
            async for _ in retrying.stream(request):
                pass
        except LLMError as error:
            return error
        finally:
            await retrying.aclose()
        raise AssertionError("the call succeeded")

    return asyncio.run(run())


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_refused_connection_names_provider_and_url_and_is_retried_once(provider: str) -> None:
    port = closed_port()
    base = f"http://127.0.0.1:{port}" + ("/v1" if provider == "openai" else "")
    sleep = RecordingSleep()
    error = failure(client(provider, f"http://user:secret@{base[7:]}/?key=secret"), sleep)
    assert isinstance(error, LLMConnectionError) and error.unreachable
    assert str(error) == (f"cannot reach the {provider} API at {base} "
                          "(connection refused; gave up after 2 attempts)")
    assert "secret" not in str(error)
    assert sleep.delays == [1.0]  # bounded: one retry, about a second


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stalled_stream_names_the_url(provider: str) -> None:
    step = StallStream(reply=Reply(text="Hello there"), after_events=MID_TEXT[provider],
                       seconds=2)
    with LoopbackModelServer([step] * 5, provider=provider) as server:
        base = server.base_url if provider == "anthropic" else server.openai_base_url
        error = failure(client(provider, base, idle_timeout=0.2))
    assert isinstance(error, LLMTimeoutError)
    assert str(error).startswith(f"the {provider} API at {base} timed out: no stream event")
    assert str(error).endswith("gave up after 5 attempts")


def test_other_connection_failures_keep_the_full_retry_budget() -> None:
    policy = RetryPolicy(jitter=0.0)
    reset = LLMConnectionError("connection reset", provider="anthropic")
    refused = LLMConnectionError("connection refused", provider="anthropic", unreachable=True)
    assert [policy.delay_before_retry(n, reset) for n in (1, 2, 3, 4, 5)] == [
        1.0, 2.0, 4.0, 8.0, None]
    assert [policy.delay_before_retry(n, refused) for n in (1, 2)] == [1.0, None]


def test_transport_failures_say_what_failed() -> None:
    def chained(inner: BaseException) -> Exception:
        outer = ConnectionError("Connection error.")
        outer.__cause__ = inner
        return outer

    url = "https://api.example.com/v1"
    kinds = {
        "host name not found": socket.gaierror(-2, "Name or service not known"),
        "connection reset": ConnectionResetError(errno.ECONNRESET, "reset by peer"),
        "network unreachable": OSError(errno.ENETUNREACH, "unreachable"),
    }
    for words, inner in kinds.items():
        error = transport_error(chained(inner), provider="openai", url=url, streaming=False,
                                timed_out=False)
        assert str(error) == f"cannot reach the openai API at {url} ({words})"
    broke = transport_error(chained(kinds["connection reset"]), provider="openai", url=url,
                            streaming=True, timed_out=False)
    assert isinstance(broke, LLMStreamError) and broke.retryable
    assert f"the connection to {url} broke mid-stream (connection reset)" in str(broke)


def test_api_url_leaves_out_credentials_query_and_trailing_slash() -> None:
    assert api_url("https://u:p@proxy.example:8443/v1/?token=t") == "https://proxy.example:8443/v1"
    assert api_url("http://[::1]:9/") == "http://[::1]:9"
    assert api_url("https://api.anthropic.com") == "https://api.anthropic.com"
