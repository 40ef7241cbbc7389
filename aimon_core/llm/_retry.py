"""Retries of model calls, and the fault rules the provider clients share.

`RetryingClient` is the one retry owner: the SDKs run with `max_retries=0`. The helpers below
turn an HTTP status and its headers into the right `LLMError`, and guard streams against
going silent.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from aimon_core.llm._client import LLMClient
from aimon_core.llm._errors import (
    LLMAuthError,
    LLMBadRequestError,
    LLMError,
    LLMOverloadedError,
    LLMQuotaError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
)
from aimon_core.llm._messages import (
    LLMRequest,
    LLMResponse,
    RetryScheduled,
    StopReason,
    StreamEvent,
    StreamRestarted,
    TextDelta,
    ThinkingDelta,
    ToolUseStarted,
)

Sleep = Callable[[float], Awaitable[None]]
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How often and how long to wait before trying a failed model call again.

    Args:
        max_attempts: attempts in all, the first one included.
        base_delay: the wait after the first failure; it doubles after each further one.
        max_delay: the longest computed wait.
        jitter: the fraction by which a computed wait is varied at random (0.2 = ±20%).
        max_retry_after: the longest wait a server may ask for; asking for more gives up.
    """

    max_attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0
    jitter: float = 0.2
    max_retry_after: float = 60.0

    def delay_before_retry(
        self, attempt: int, error: LLMError, rand: Callable[[], float] = random.random
    ) -> float | None:
        """Return the wait before attempt `attempt + 1`, or None to give up with `error`."""
        if not error.retryable or attempt >= self.max_attempts:
            return None
        if error.retry_after is not None:
            if error.retry_after > self.max_retry_after:
                return None
            return max(0.0, error.retry_after)
        delay = min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1))
        return max(0.0, delay * (1 + self.jitter * (2 * rand() - 1)))


class RetryingClient:
    """An LLMClient that retries retryable failures of another one, with backoff."""

    def __init__(
        self,
        inner: LLMClient,
        policy: RetryPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.inner = inner
        self.policy = policy or RetryPolicy()
        self._sleep = sleep
        self._rand = rand

    @property
    def provider(self) -> str:
        """Return the wrapped client's provider."""
        return self.inner.provider

    async def call(self, request: LLMRequest) -> LLMResponse:
        """Run the call, retrying retryable errors; raise the last error when giving up."""
        attempt = 1
        while True:
            try:
                return await self.inner.call(request)
            except LLMError as error:
                delay = self.policy.delay_before_retry(attempt, error, self._rand)
                if delay is None:
                    raise
            await self._sleep(delay)
            attempt += 1

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Stream the call; on a retryable failure yield RetryScheduled, wait and start over.

        When the failed attempt had already yielded deltas, StreamRestarted (carrying the new
        attempt's number) comes right before the new attempt, so a UI drops the partial text.
        """
        attempt = 1
        while True:
            shown = False
            events = self.inner.stream(request)
            try:
                async for event in events:
                    shown = shown or isinstance(event, TextDelta | ThinkingDelta | ToolUseStarted)
                    yield event
                return
            except LLMError as error:
                delay = self.policy.delay_before_retry(attempt, error, self._rand)
                if delay is None:
                    raise
                reason = str(error)
            finally:
                await _aclose(events)
            yield RetryScheduled(attempt=attempt, delay=delay, reason=reason)
            await self._sleep(delay)
            attempt += 1
            if shown:
                yield StreamRestarted(attempt=attempt, reason=reason)

    async def aclose(self) -> None:
        """Close the wrapped client."""
        await self.inner.aclose()


async def _aclose(events: AsyncIterator[StreamEvent]) -> None:
    close = getattr(events, "aclose", None)
    if close is not None:
        await close()


# --- fault rules shared by the provider clients -------------------------------------------

_QUOTA_MARKERS = (
    "insufficient_quota",
    "quota",
    "credit balance",
    "spend limit",
    "spend_limit",
    "billing",
    "payment required",
)


def looks_like_quota(*texts: object) -> bool:
    """Tell whether an error's type, code or message speaks of credit, quota or spend caps."""
    return any(
        marker in text.lower()
        for text in texts
        if isinstance(text, str)
        for marker in _QUOTA_MARKERS
    )


def retry_hints(headers: Mapping[str, str] | None) -> tuple[float | None, bool | None]:
    """Return (seconds to wait, should retry) from retry-after-ms, retry-after, x-should-retry."""
    if not headers:
        return None, None
    should = headers.get("x-should-retry", "").strip().lower()
    should_retry = {"true": True, "false": False}.get(should)
    return _retry_after(headers), should_retry


def _retry_after(headers: Mapping[str, str]) -> float | None:
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def status_error(
    status: int,
    message: str,
    *,
    provider: str,
    headers: Mapping[str, str] | None = None,
    quota: bool = False,
    overloaded: bool = False,
) -> LLMError:
    """Return the LLMError for an HTTP error status (quota/overloaded as the body tells)."""
    retry_after, should_retry = retry_hints(headers)
    kind: type[LLMError]
    if status in (401, 403):
        kind = LLMAuthError
    elif status == 402 or (quota and status < 500):
        kind = LLMQuotaError
    elif status == 429:
        kind = LLMRateLimitError
    elif status == 529 or overloaded:
        kind = LLMOverloadedError
    elif status == 408:
        kind = LLMTimeoutError
    elif status == 409 or status >= 500:
        kind = LLMServerError
    else:
        kind = LLMBadRequestError
    error = kind(message, provider=provider, status=status, retry_after=retry_after)
    # The server may veto a retry; it can never make auth, quota or request errors retryable.
    if should_retry is False:
        error.retryable = False
    return error


async def guard_idle(
    events: AsyncIterator[_T], seconds: float, *, provider: str
) -> AsyncGenerator[_T, None]:
    """Yield from `events`, raising LLMTimeoutError when none arrives within `seconds`."""
    iterator = aiter(events)
    while True:
        try:
            async with asyncio.timeout(seconds):
                event = await anext(iterator)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise LLMTimeoutError(
                f"no stream event for {seconds:g}s; the stream is considered stalled",
                provider=provider,
            ) from None
        yield event


def parse_tool_input(raw: str, stop: StopReason) -> tuple[dict[str, Any], str | None]:
    """Parse streamed tool input JSON; return (input, None) or ({}, why it is unusable)."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except ValueError as error:
        if stop is StopReason.MAX_TOKENS:
            return {}, "tool input JSON was cut off by max tokens"
        return {}, f"invalid JSON in tool input: {error}"
    if not isinstance(value, dict):
        return {}, f"tool input must be a JSON object, not {type(value).__name__}"
    return value, None
