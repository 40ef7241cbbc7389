"""Retries of model calls, and the fault rules the provider clients share.

`RetryingClient` is the one retry owner: the SDKs run with `max_retries=0`. The helpers below
turn an HTTP status and its headers into the right `LLMError`, and guard streams against
going silent.
"""

from __future__ import annotations

import asyncio
import email.utils
import errno
import json
import random
import socket
import time
import urllib.parse
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from aimon_core.llm._client import LLMClient
from aimon_core.llm._errors import (
    LLMAuthError,
    LLMBadRequestError,
    LLMConnectionError,
    LLMError,
    LLMOverloadedError,
    LLMQuotaError,
    LLMRateLimitError,
    LLMServerError,
    LLMStreamError,
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
        unreachable_attempts: attempts in all when nothing answers at the API's address
            (connection refused, unknown host): a wrong URL or a stopped server fails in
            about a second, not after a minute of backoff.
    """

    max_attempts: int = 5
    base_delay: float = 1.0
    max_delay: float = 30.0
    jitter: float = 0.2
    max_retry_after: float = 60.0
    unreachable_attempts: int = 2

    def delay_before_retry(
        self, attempt: int, error: LLMError, rand: Callable[[], float] = random.random
    ) -> float | None:
        """Return the wait before attempt `attempt + 1`, or None to give up with `error`."""
        if not error.retryable or attempt >= self.max_attempts:
            return None
        unreachable = isinstance(error, LLMConnectionError) and error.unreachable
        if unreachable and attempt >= self.unreachable_attempts:
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
                    error.attempts = attempt
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
                    error.attempts = attempt
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
    events: AsyncIterator[_T], seconds: float, *, provider: str, url: str = ""
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
                provider=provider, url=url,
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


# --- transport failures: what failed, and where -------------------------------------------

_ERRNO_WORDS = {
    errno.ECONNREFUSED: "connection refused",
    errno.ECONNRESET: "connection reset",
    errno.ECONNABORTED: "connection aborted",
    errno.ENETUNREACH: "network unreachable",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ETIMEDOUT: "connection timed out",
    errno.EPIPE: "connection closed",
}
# Nothing answered at the address: retrying soon rarely helps.
_UNREACHABLE = frozenset({errno.ECONNREFUSED})


def api_url(base_url: object) -> str:
    """Return a client's base URL as shown to the user: no credentials, query or final /."""
    parts = urllib.parse.urlsplit(str(base_url))
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def transport_error(exc: BaseException, *, provider: str, url: str, streaming: bool,
                    timed_out: bool) -> LLMError:
    """Return the LLMError for a request that failed below HTTP (no status), naming `url`.

    `timed_out`: the SDK or our own deadline gave up waiting; otherwise the connection
    failed (before the response: LLMConnectionError; mid-stream: LLMStreamError).
    """
    if timed_out:
        what = ("could not connect in time" if _in_chain(exc, "ConnectTimeout")
                else "no response in time")
        return LLMTimeoutError(what, provider=provider, url=url)
    cause, unreachable = _connection_cause(exc)
    if streaming:
        return LLMStreamError(f"the connection to {url or 'the API'} broke mid-stream ({cause})",
                              provider=provider, url=url)
    return LLMConnectionError(cause, provider=provider, url=url, unreachable=unreachable)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 20:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _in_chain(exc: BaseException, class_name: str) -> bool:
    return any(type(link).__name__ == class_name for link in _chain(exc))


def _connection_cause(exc: BaseException) -> tuple[str, bool]:
    """Return what failed in a few words, and whether nothing answered at the address."""
    import ssl  # loaded by the SDK's HTTP client already; not on `aimon --version`'s path

    for link in _chain(exc):
        if isinstance(link, socket.gaierror):
            return "host name not found", True
        if isinstance(link, ssl.SSLError):
            return f"TLS error: {link.reason or link}", False
        if isinstance(link, OSError) and link.errno in _ERRNO_WORDS:
            return _ERRNO_WORDS[link.errno], link.errno in _UNREACHABLE
    innermost = _chain(exc)[-1]
    return str(innermost) or type(innermost).__name__, False
