"""Interceptors around model calls: a decorating LLMClient that runs each call through a chain.

The seeds' interceptor chain, at the model-call seam: each `ModelCallInterceptor` is given the
call and `proceed` (the rest of the chain, then the wrapped client) and yields the call's
stream events, seeing every one. The cost ledger and its caps are one interceptor; a library
user adds their own the same way. A non-streamed call (`call`) runs through the same chain as
a stream of one event, so an interceptor is written once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from aimon_core.llm._client import LLMClient, collect
from aimon_core.llm._messages import LLMRequest, LLMResponse, ResponseCompleted, StreamEvent

ModelProceed = Callable[[LLMRequest], AsyncIterator[StreamEvent]]
"""The rest of the chain: call it with the (maybe changed) request, iterate what it yields."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelCall:
    """One model call as the interceptors see it.

    Args:
        request: the request as the caller made it.
        provider: the wrapped client's provider ("anthropic", "openai", ...).
        streamed: whether the caller streams (`stream`) or waits for the whole answer (`call`).
    """

    request: LLMRequest
    provider: str
    streamed: bool = True

    @property
    def session_id(self) -> str:
        """Return the session the call is made for ("" when none said)."""
        value = self.request.metadata.get("session_id", "")
        return value if isinstance(value, str) else ""


class ModelCallInterceptor(Protocol):
    """Runs around every model call of a client: before it, on each event, after it."""

    def around_model_call(self, call: ModelCall, proceed: ModelProceed
                          ) -> AsyncIterator[StreamEvent]:
        """Yield the call's events; call `proceed(call.request)` to make it (or raise instead)."""
        ...


class InterceptingLLMClient:
    """An LLMClient that runs each call of another one through interceptors, first outermost."""

    def __init__(self, inner: LLMClient, interceptors: Sequence[ModelCallInterceptor]) -> None:
        self.inner = inner
        self.interceptors = tuple(interceptors)

    @property
    def provider(self) -> str:
        """Return the wrapped client's provider."""
        return self.inner.provider

    def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Stream the call through the chain."""
        return self._chain(ModelCall(request=request, provider=self.provider),
                           self.inner.stream)

    async def call(self, request: LLMRequest) -> LLMResponse:
        """Run the call through the chain as a stream of one event; return the response."""
        inner = self.inner

        async def once(changed: LLMRequest) -> AsyncIterator[StreamEvent]:
            yield ResponseCompleted(response=await inner.call(changed))

        call = ModelCall(request=request, provider=self.provider, streamed=False)
        return await collect(self._chain(call, once))

    def _chain(self, call: ModelCall, last: ModelProceed) -> AsyncIterator[StreamEvent]:
        proceed = last
        for interceptor in reversed(self.interceptors):
            proceed = _link(interceptor, call, proceed)
        return proceed(call.request)

    async def aclose(self) -> None:
        """Close the wrapped client."""
        await self.inner.aclose()


def _link(interceptor: ModelCallInterceptor, call: ModelCall, proceed: ModelProceed
          ) -> ModelProceed:
    def run(request: LLMRequest) -> AsyncIterator[StreamEvent]:
        here = call if request is call.request else replace(call, request=request)
        return interceptor.around_model_call(here, proceed)

    return run


@dataclass(frozen=True, slots=True)
class _Tagging:
    metadata: Mapping[str, str]

    async def around_model_call(self, call: ModelCall, proceed: ModelProceed
                                ) -> AsyncIterator[StreamEvent]:
        request = call.request
        missing = {k: v for k, v in self.metadata.items() if k not in request.metadata}
        changed = replace(request, metadata={**request.metadata, **missing}) if missing else request
        async for event in proceed(changed):
            yield event


def tagged(client: LLMClient, **metadata: str) -> LLMClient:
    """Return `client` with `metadata` added to each request that does not say it already
    (a session's compaction summaries carry its `session_id`, as its turns' calls do)."""
    return InterceptingLLMClient(client, (_Tagging(metadata),))
