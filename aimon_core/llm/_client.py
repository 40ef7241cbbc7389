"""The LLMClient seam and a scripted client for tests."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from aimon_core.llm._messages import (
    ContentBlock,
    LLMRequest,
    LLMResponse,
    ResponseCompleted,
    StopReason,
    StreamEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
    ToolUseStarted,
    Usage,
)


@runtime_checkable
class LLMClient(Protocol):
    """A model provider: one call, streamed or not."""

    @property
    def provider(self) -> str:
        """Return the provider name ("anthropic", "openai", ...)."""
        ...

    async def call(self, request: LLMRequest) -> LLMResponse:
        """Run one model call and return the complete response."""
        ...

    def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Run one model call, yielding deltas and finally ResponseCompleted."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


async def collect(stream: AsyncIterator[StreamEvent]) -> LLMResponse:
    """Drain a stream and return its final response."""
    response: LLMResponse | None = None
    async for event in stream:
        if isinstance(event, ResponseCompleted):
            response = event.response
    if response is None:
        from aimon_core.llm._errors import LLMStreamError

        raise LLMStreamError("stream ended without a complete response")
    return response


ScriptStep = LLMResponse | Exception | Callable[[LLMRequest], "LLMResponse | Exception"]


class ScriptedLLMClientError(AssertionError):
    """The scripted client was called more often than its script allows."""


@dataclass(slots=True)
class ScriptedLLMClient:
    """An LLMClient that answers from a script: for tests of agents, tools and UIs.

    Each call takes the next step: a response, an exception to raise, or a function of the
    request. A call past the end of the script fails the test loudly.
    """

    steps: list[ScriptStep]
    requests: list[LLMRequest] = field(default_factory=list)
    provider: str = "scripted"

    def _next(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        if not self.steps:
            raise ScriptedLLMClientError(
                f"unexpected model call #{len(self.requests)}: the script is exhausted"
            )
        step = self.steps.pop(0)
        if callable(step) and not isinstance(step, (LLMResponse, Exception)):
            step = step(request)
        if isinstance(step, Exception):
            raise step
        return step

    async def call(self, request: LLMRequest) -> LLMResponse:
        """Return the next scripted response."""
        return self._next(request)

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Yield the next scripted response as deltas, then complete it."""
        response = self._next(request)
        for block in response.content:
            match block:
                case ThinkingBlock(thinking=text):
                    yield ThinkingDelta(text=text)
                case TextBlock(text=text):
                    yield TextDelta(text=text)
                case ToolUseBlock(id=tool_id, name=name):
                    yield ToolUseStarted(id=tool_id, name=name)
                case _:
                    pass
        yield ResponseCompleted(response=response)

    async def aclose(self) -> None:
        """Nothing to release."""


_ids = itertools.count(1)


def reply(
    text: str = "",
    *tool_calls: tuple[str, dict[str, object]],
    stop: StopReason | None = None,
    usage: Usage | None = None,
) -> LLMResponse:
    """Build a scripted response: text and/or (name, input) tool calls."""
    content: list[ContentBlock] = []
    if text:
        content.append(TextBlock(text=text))
    for name, tool_input in tool_calls:
        content.append(ToolUseBlock(id=f"toolu_{next(_ids):04d}", name=name, input=tool_input))
    if stop is None:
        stop = StopReason.TOOL_USE if tool_calls else StopReason.END
    return LLMResponse(
        id=f"msg_{next(_ids):04d}",
        model="scripted",
        content=tuple(content),
        stop_reason=stop,
        usage=usage or Usage(input_tokens=10, output_tokens=5),
    )


def script(*steps: ScriptStep) -> ScriptedLLMClient:
    """Make a ScriptedLLMClient from steps."""
    return ScriptedLLMClient(steps=list(steps))
