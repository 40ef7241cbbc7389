"""Faults and retries: one scenario table run against both providers over loopback HTTP."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from pathlib import Path

import pytest

from aimon_core.llm import (
    AnthropicClient,
    LLMAuthError,
    LLMBadRequestError,
    LLMClient,
    LLMConnectionError,
    LLMError,
    LLMOverloadedError,
    LLMQuotaError,
    LLMRateLimitError,
    LLMRequest,
    LLMServerError,
    LLMStreamError,
    LLMTimeoutError,
    Message,
    OpenAIClient,
    ResponseCompleted,
    RetryingClient,
    RetryPolicy,
    RetryScheduled,
    StopReason,
    StreamEvent,
    StreamRestarted,
    TextDelta,
    ToolUseBlock,
    UsageReported,
    reply,
    script,
)
from aimon_core.testing import (
    CutStream,
    Fault,
    LoopbackModelServer,
    Reply,
    ResetConnection,
    ScriptedToolCall,
    StallStream,
    Step,
    StreamError,
)

PROVIDERS = ("anthropic", "openai")
MODELS = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-5.4"}
# Events before the first text delta's second half: a cut here lands mid-message.
MID_TEXT = {"anthropic": 4, "openai": 2}
NO_JITTER = RetryPolicy(jitter=0.0)


class RecordingSleep:
    """An injectable sleep that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@asynccontextmanager
async def client_for(
    provider: str, server: LoopbackModelServer, idle_timeout: float = 5.0
) -> AsyncIterator[LLMClient]:
    client: LLMClient
    if provider == "anthropic":
        client = AnthropicClient(
            api_key="test-key", base_url=server.base_url, idle_timeout=idle_timeout
        )
    else:
        client = OpenAIClient(
            api_key="test-key", base_url=server.openai_base_url, idle_timeout=idle_timeout
        )
    try:
        yield client
    finally:
        await client.aclose()


def request(provider: str) -> LLMRequest:
    return LLMRequest(model=MODELS[provider], system="sys", messages=(Message.user("hi"),))


async def stream_all(client: LLMClient, req: LLMRequest) -> list[StreamEvent]:
    return [event async for event in client.stream(req)]


def run_retrying(
    provider: str, steps: list[Step], policy: RetryPolicy = NO_JITTER
) -> tuple[list[StreamEvent] | LLMError, list[float], int]:
    """Stream through RetryingClient; return (events or the error, sleeps, requests seen)."""
    sleep = RecordingSleep()

    async def run(server: LoopbackModelServer) -> list[StreamEvent] | LLMError:
        async with client_for(provider, server) as inner:
            client = RetryingClient(inner, policy, sleep=sleep)
            try:
                return await stream_all(client, request(provider))
            except LLMError as error:
                return error

    with LoopbackModelServer(steps, provider=provider) as server:
        outcome = asyncio.run(run(server))
    return outcome, sleep.delays, len(server.requests)


def completed(outcome: list[StreamEvent] | LLMError) -> str:
    assert isinstance(outcome, list), f"expected success, got {outcome!r}"
    last = outcome[-1]
    assert isinstance(last, ResponseCompleted)
    return last.response.text


# --- retried faults ------------------------------------------------------------------------

RETRIED = [
    pytest.param(Fault(status=429, headers={"retry-after": "7"}), [7.0], id="429-retry-after"),
    pytest.param(Fault(status=429, headers={"retry-after-ms": "1500"}), [1.5], id="429-ms"),
    pytest.param(Fault(status=529, error_type="overloaded_error"), [1.0], id="529-overloaded"),
    pytest.param(Fault(status=500), [1.0], id="500"),
    pytest.param(Fault(status=503, headers={"retry-after": "2"}), [2.0], id="503-retry-after"),
    pytest.param(ResetConnection(), [1.0], id="connection-reset"),
]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("fault", "delays"), RETRIED)
def test_retryable_faults_are_retried_after_the_right_wait(
    provider: str, fault: Step, delays: list[float]
) -> None:
    outcome, slept, seen = run_retrying(provider, [fault, Reply(text="recovered")])
    assert completed(outcome) == "recovered"
    assert slept == delays
    assert seen == 2
    assert isinstance(outcome, list)
    scheduled = [e for e in outcome if isinstance(e, RetryScheduled)]
    assert [(e.attempt, e.delay) for e in scheduled] == [(1, delays[0])]
    assert not any(isinstance(e, StreamRestarted) for e in outcome)  # nothing was shown yet


@pytest.mark.parametrize("provider", PROVIDERS)
def test_backoff_grows_until_attempts_run_out(provider: str) -> None:
    policy = RetryPolicy(max_attempts=3, base_delay=0.5, jitter=0.0)
    outcome, slept, seen = run_retrying(provider, [Fault(status=500)] * 3, policy)
    assert isinstance(outcome, LLMServerError)
    assert outcome.status == 500
    assert slept == [0.5, 1.0]
    assert seen == 3


# --- faults never retried ------------------------------------------------------------------

NOT_RETRIED = [
    pytest.param(Fault(status=401), LLMAuthError, id="401"),
    pytest.param(Fault(status=403), LLMAuthError, id="403"),
    pytest.param(Fault(status=400), LLMBadRequestError, id="400"),
    pytest.param(Fault(status=404), LLMBadRequestError, id="404"),
    pytest.param(Fault(status=422), LLMBadRequestError, id="422"),
    pytest.param(Fault(status=402), LLMQuotaError, id="402"),
    pytest.param(
        Fault(status=429, error_type="insufficient_quota", message="You exceeded your quota"),
        LLMQuotaError,
        id="429-insufficient-quota",
    ),
    pytest.param(
        Fault(status=429, message="Your credit balance is too low to access the API"),
        LLMQuotaError,
        id="429-credit-balance",
    ),
    pytest.param(
        Fault(status=429, headers={"retry-after": "600"}), LLMRateLimitError, id="429-too-long"
    ),
    pytest.param(
        Fault(status=500, headers={"x-should-retry": "false"}),
        LLMServerError,
        id="500-should-not-retry",
    ),
]


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("fault", "kind"), NOT_RETRIED)
def test_faults_that_retrying_cannot_fix_fail_at_once(
    provider: str, fault: Step, kind: type[LLMError]
) -> None:
    outcome, slept, seen = run_retrying(provider, [fault, Reply(text="never")])
    assert isinstance(outcome, kind), outcome
    assert type(outcome) is kind
    assert slept == []
    assert seen == 1


def test_anthropic_spend_limit_is_a_quota_error() -> None:
    fault = Fault(status=429, error_type="rate_limit_error", message="spend limit reached")
    outcome, _, seen = run_retrying("anthropic", [fault, Reply(text="never")])
    assert isinstance(outcome, LLMQuotaError)
    assert seen == 1


def test_anthropic_overloaded_is_its_own_error() -> None:
    async def run(server: LoopbackModelServer) -> None:
        async with client_for("anthropic", server) as client:
            await stream_all(client, request("anthropic"))

    with LoopbackModelServer([Fault(status=529)]) as server, pytest.raises(LLMOverloadedError):
        asyncio.run(run(server))


# --- broken streams ------------------------------------------------------------------------


def plain_stream(
    provider: str, step: Step, idle_timeout: float = 5.0
) -> list[StreamEvent] | LLMError:
    """Stream one step without retries; return the events, or the error with events in notes."""
    seen: list[StreamEvent] = []

    async def run(server: LoopbackModelServer) -> list[StreamEvent] | LLMError:
        async with client_for(provider, server, idle_timeout) as client:
            try:
                async for event in client.stream(request(provider)):
                    seen.append(event)
            except LLMError as error:
                return error
            return seen

    with LoopbackModelServer([step], provider=provider) as server:
        outcome = asyncio.run(run(server))
    if isinstance(outcome, LLMError):
        assert not any(isinstance(e, ResponseCompleted) for e in seen)
    return outcome


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("graceful", [False, True], ids=["dropped", "short-sse"])
def test_a_cut_stream_is_a_stream_error(provider: str, graceful: bool) -> None:
    step = CutStream(reply=Reply(text="Hello there"), after_events=MID_TEXT[provider])
    if graceful:
        step = CutStream(reply=step.reply, after_events=step.after_events, graceful=True)
    outcome = plain_stream(provider, step)
    assert isinstance(outcome, LLMStreamError)
    assert outcome.retryable


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_error_event_mid_stream_fails_the_whole_response(provider: str) -> None:
    step = StreamError(reply=Reply(text="Hello there"), after_events=MID_TEXT[provider])
    outcome = plain_stream(provider, step)
    assert isinstance(outcome, LLMStreamError)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_cut_tool_call_never_completes(provider: str) -> None:
    call = ScriptedToolCall(name="Bash", input={"command": "rm -rf build"})
    step = CutStream(reply=Reply(tool_calls=(call,)), after_events=MID_TEXT[provider] + 1)
    outcome = plain_stream(provider, step)
    assert isinstance(outcome, LLMStreamError)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_stalled_stream_times_out(provider: str) -> None:
    step = StallStream(reply=Reply(text="Hello there"), after_events=MID_TEXT[provider], seconds=2)
    started = time.monotonic()
    outcome = plain_stream(provider, step, idle_timeout=0.3)
    assert isinstance(outcome, LLMTimeoutError)
    assert outcome.retryable
    assert time.monotonic() - started < 1.8


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_cut_stream_restarts_then_succeeds(provider: str) -> None:
    cut = CutStream(reply=Reply(text="Hello there"), after_events=MID_TEXT[provider])
    outcome, slept, seen = run_retrying(provider, [cut, Reply(text="Hello there")])
    assert completed(outcome) == "Hello there"
    assert isinstance(outcome, list)
    kinds = [type(e).__name__ for e in outcome if not isinstance(e, UsageReported)]
    assert kinds == [
        "TextDelta",
        "RetryScheduled",
        "StreamRestarted",
        "TextDelta",
        "TextDelta",
        "ResponseCompleted",
    ]
    restarted = next(e for e in outcome if isinstance(e, StreamRestarted))
    assert restarted.attempt == 2
    assert slept == [1.0]
    assert seen == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_invalid_tool_json_sets_input_error(provider: str) -> None:
    call = ScriptedToolCall(name="Read", input={}, raw_arguments='{"path": "a.py",, }')
    outcome = plain_stream(provider, Reply(tool_calls=(call,)))
    assert isinstance(outcome, list)
    last = outcome[-1]
    assert isinstance(last, ResponseCompleted)
    (use,) = last.response.message.tool_uses
    assert use.input == {}
    assert use.input_error is not None
    assert use.input_error.startswith("invalid JSON in tool input")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_max_tokens_cutting_a_tool_call_sets_input_error(provider: str) -> None:
    call = ScriptedToolCall(name="Write", input={}, raw_arguments='{"path": "a.py", "content": "de')
    outcome = plain_stream(provider, Reply(tool_calls=(call,), stop="max_tokens"))
    assert isinstance(outcome, list)
    last = outcome[-1]
    assert isinstance(last, ResponseCompleted)
    assert last.response.stop_reason is StopReason.MAX_TOKENS
    (use,) = last.response.message.tool_uses
    assert use == ToolUseBlock(
        id=use.id, name="Write", input={}, input_error="tool input JSON was cut off by max tokens"
    )


# --- cancellation ----------------------------------------------------------------------------


def established_connections(port: int) -> int:
    """Count ESTABLISHED TCP connections whose remote end is `port` (Linux /proc)."""
    count = 0
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        if not table.exists():
            continue
        for line in table.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "01" and int(fields[2].rsplit(":", 1)[1], 16) == port:
                count += 1
    return count


async def wait_until(predicate: Callable[[], bool]) -> bool:
    """Poll OS state (which no event reports) for up to 3 s."""
    for _ in range(150):
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return predicate()


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc/net/tcp")
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("retrying", [False, True], ids=["plain", "retrying"])
def test_cancelling_the_consumer_closes_the_connection(provider: str, retrying: bool) -> None:
    step = StallStream(reply=Reply(text="Hello there"), after_events=MID_TEXT[provider], seconds=30)

    async def run(server: LoopbackModelServer) -> None:
        shown = asyncio.Event()

        async def consume(client: LLMClient) -> None:
            async for event in client.stream(request(provider)):
                if isinstance(event, TextDelta):
                    shown.set()

        async with client_for(provider, server, idle_timeout=60.0) as inner:
            client = RetryingClient(inner, sleep=RecordingSleep()) if retrying else inner
            task = asyncio.create_task(consume(client))
            await asyncio.wait_for(shown.wait(), 5.0)
            assert established_connections(server.port) == 1
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert await wait_until(lambda: established_connections(server.port) == 0)

    started = time.monotonic()
    with LoopbackModelServer([step], provider=provider) as server:
        asyncio.run(run(server))
    assert time.monotonic() - started < 10  # the 30 s stall never held anything up
    assert len(server.requests) == 1  # a cancelled stream is not retried


@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="needs Linux /proc/net/tcp")
@pytest.mark.parametrize("provider", PROVIDERS)
def test_closing_the_stream_early_closes_the_connection(provider: str) -> None:
    step = StallStream(reply=Reply(text="Hello there"), after_events=MID_TEXT[provider], seconds=30)

    async def run(server: LoopbackModelServer) -> None:
        async with client_for(provider, server, idle_timeout=60.0) as client:
            async with aclosing(client.stream(request(provider))) as events:
                async for event in events:
                    if isinstance(event, TextDelta):
                        break
                assert established_connections(server.port) == 1
            assert await wait_until(lambda: established_connections(server.port) == 0)

    with LoopbackModelServer([step], provider=provider) as server:
        asyncio.run(run(server))


# --- the policy itself -----------------------------------------------------------------------


def test_policy_delays_double_up_to_the_cap_with_bounded_jitter() -> None:
    policy = RetryPolicy(max_attempts=8, base_delay=1.0, max_delay=10.0, jitter=0.0)
    error = LLMServerError("boom", status=500)
    delays = [policy.delay_before_retry(n, error) for n in range(1, 9)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0, None]
    jittered = RetryPolicy(base_delay=4.0, jitter=0.25)
    assert jittered.delay_before_retry(1, error, rand=lambda: 0.0) == 3.0
    assert jittered.delay_before_retry(1, error, rand=lambda: 1.0) == 5.0


def test_policy_honours_and_caps_retry_after() -> None:
    policy = RetryPolicy(max_retry_after=60.0)
    assert policy.delay_before_retry(1, LLMRateLimitError("slow", retry_after=42.0)) == 42.0
    assert policy.delay_before_retry(1, LLMRateLimitError("slow", retry_after=61.0)) is None
    assert policy.delay_before_retry(1, LLMQuotaError("broke", retry_after=1.0)) is None
    assert policy.delay_before_retry(1, LLMConnectionError("gone")) is not None


def test_call_is_retried_too() -> None:
    sleep = RecordingSleep()
    inner = script(LLMServerError("boom", status=502), reply("fine"))
    client = RetryingClient(inner, NO_JITTER, sleep=sleep)
    response = asyncio.run(client.call(LLMRequest(model="m", system="", messages=())))
    assert response.text == "fine"
    assert sleep.delays == [1.0]
    assert len(inner.requests) == 2
