"""The Anthropic Messages API client, on the `anthropic` SDK (imported lazily)."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from aimon_core.llm._client import collect
from aimon_core.llm._errors import (
    LLMError,
    LLMResponseError,
    LLMStreamError,
)
from aimon_core.llm._joined import JoinedMessages, KeptHead, body_with_messages
from aimon_core.llm._messages import (
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    LLMRequest,
    LLMResponse,
    Message,
    ModelSettings,
    ResponseCompleted,
    StopReason,
    StreamEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseStarted,
    Usage,
    UsageReported,
)
from aimon_core.llm._models import ModelInfo, model_info
from aimon_core.llm._retry import (
    api_url,
    guard_idle,
    looks_like_quota,
    parse_tool_input,
    status_error,
    transport_error,
)
from aimon_core.llm._sse import Wire, sse_data

if TYPE_CHECKING:
    import anthropic

PROVIDER = "anthropic"
_EPHEMERAL = {"type": "ephemeral"}
# Used when the request names no max_tokens (the API requires one).
_DEFAULT_MAX_TOKENS = 32_000
_MIN_THINKING_BUDGET = 1024

_STOP_REASONS = {
    "end_turn": StopReason.END,
    "tool_use": StopReason.TOOL_USE,
    "max_tokens": StopReason.MAX_TOKENS,
    "model_context_window_exceeded": StopReason.MAX_TOKENS,
    "stop_sequence": StopReason.STOP_SEQUENCE,
    "refusal": StopReason.REFUSAL,
}


class AnthropicClient:
    """An LLMClient for the Anthropic Messages API (streaming; no retries of its own)."""

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None = None,
        idle_timeout: float = 60.0,
        connect_timeout: float = 10.0,
    ) -> None:
        """Args:
        idle_timeout: seconds a stream may stay silent before it counts as stalled.
        """
        import anthropic

        self._idle_timeout = idle_timeout
        self._bodies = _BodyEncoder()
        self._sdk = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            # The idle guard fires first; the socket read timeout is only a backstop.
            timeout=anthropic.Timeout(max(2 * idle_timeout, 30.0), connect=connect_timeout),
        )

    @property
    def provider(self) -> str:
        """Return "anthropic"."""
        return PROVIDER

    async def call(self, request: LLMRequest) -> LLMResponse:
        """Run one call (streamed underneath, so long answers cannot hit HTTP timeouts)."""
        return await collect(self.stream(request))

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Stream one call; raise an LLMError unless the response arrived complete.

        The SDK sends the request and maps HTTP errors; the SSE body is read here (raw lines
        into `_Assembler`, as the OpenAI client does), which spares the SDK's pydantic event
        objects: ~1.3-2 ms per call, ~8 ms more on the first (issue 13).
        """
        import httpx2

        body = self._bodies.encode(request, model_info(request.model, PROVIDER))
        try:
            async with asyncio.timeout(self._idle_timeout):
                # The SDK's own client: auth, base URL, headers, timeouts, HTTP errors mapped to
                # its exception types. The body goes as bytes: `messages.create` copies every
                # container of it in Python before each call (~2 ms at 200 messages, growing
                # with the history), then encodes it again.
                response = await self._sdk.post(
                    "/v1/messages", cast_to=httpx2.Response, content=body, stream=True
                )
        except Exception as exc:
            error = _llm_error(exc, streaming=False, url=api_url(self._sdk.base_url))
            if error is exc:
                raise
            raise error from exc
        assembler = _Assembler()
        events = guard_idle(sse_data(response.aiter_lines()), self._idle_timeout,
                            provider=PROVIDER, url=api_url(self._sdk.base_url))
        try:
            async for data in events:
                for out in assembler.feed(_event(data)):
                    yield out
        except LLMError:
            raise
        except Exception as exc:
            error = _llm_error(exc, streaming=True, url=api_url(self._sdk.base_url))
            if error is exc:
                raise
            raise error from exc
        finally:
            # Runs on cancellation and on aclose() too: the HTTP response must not linger.
            await events.aclose()
            await response.aclose()
        yield ResponseCompleted(response=assembler.finish())

    async def aclose(self) -> None:
        """Close the SDK's HTTP client."""
        await self._sdk.close()


# --- our request -> Messages API parameters -----------------------------------------------


def request_params(request: LLMRequest, info: ModelInfo) -> dict[str, Any]:
    """Translate a request into `messages.create` keyword arguments (caching included)."""
    settings = request.settings
    max_tokens = settings.max_tokens or min(info.max_output_tokens, _DEFAULT_MAX_TOKENS)
    params: dict[str, Any] = {
        "model": request.model,
        "messages": [_message_param(m) for m in request.messages],
    }
    # Four cache breakpoints, the API's maximum: tools, system, the end of the previous
    # request, and the newest message (see `_mark_cache_breakpoints`).
    if request.system:
        params["system"] = [{"type": "text", "text": request.system, "cache_control": _EPHEMERAL}]
    if request.tools:
        params["tools"] = [_tool_param(t) for t in request.tools]
        params["tools"][-1]["cache_control"] = _EPHEMERAL
    _mark_cache_breakpoints(params["messages"], request.messages)
    thinking = _thinking_param(settings, info)
    if thinking is not None:
        params["thinking"] = thinking
        budget = thinking.get("budget_tokens", 0)
        if budget >= max_tokens:  # the budget is part of max_tokens and must fit below it
            max_tokens = min(budget + _DEFAULT_MAX_TOKENS // 2, info.max_output_tokens)
            thinking["budget_tokens"] = min(budget, max_tokens - 1)
    elif settings.temperature is not None and info.accepts_temperature:
        # The SDK no longer declares `temperature`; models that still accept it get it raw.
        params["extra_body"] = {"temperature": settings.temperature}
    if user_id := request.metadata.get("user_id"):
        params["metadata"] = {"user_id": user_id}
    params["max_tokens"] = max_tokens
    return params


def _thinking_param(settings: ModelSettings, info: ModelInfo) -> dict[str, Any] | None:
    if not settings.thinking_budget or not info.supports_thinking:
        return None
    if info.adaptive_thinking:
        return {"type": "adaptive"}
    return {"type": "enabled", "budget_tokens": max(_MIN_THINKING_BUDGET, settings.thinking_budget)}


def _tool_param(tool: ToolDefinition) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": dict(tool.input_schema),
    }


def _message_param(message: Message) -> dict[str, Any]:
    content = [p for block in message.content if (p := _block_param(block)) is not None]
    if not content:  # the API rejects empty content
        content = [{"type": "text", "text": "(empty)"}]
    return {"role": message.role, "content": content}


def _block_param(block: ContentBlock) -> dict[str, Any] | None:
    match block:
        case TextBlock(text=text):
            return {"type": "text", "text": text} if text else None
        case ImageBlock():
            return _image_param(block)
        case DocumentBlock():
            return _document_param(block)
        case ToolUseBlock(id=tool_id, name=name, input=tool_input):
            return {"type": "tool_use", "id": tool_id, "name": name, "input": dict(tool_input)}
        case ToolResultBlock():
            parts = [
                _image_param(p) if isinstance(p, ImageBlock) else {"type": "text", "text": p.text}
                for p in block.content
                if isinstance(p, ImageBlock) or p.text
            ]
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.tool_use_id}
            if parts:
                result["content"] = parts
            if block.is_error:
                result["is_error"] = True
            return result
        case ThinkingBlock(redacted_data=str() as data):
            return {"type": "redacted_thinking", "data": data}
        case ThinkingBlock(signature=str() as signature, thinking=thinking):
            return {"type": "thinking", "thinking": thinking, "signature": signature}
        case ThinkingBlock():
            return None  # unsigned thinking (from another provider) cannot be sent back
    return None


def _image_param(image: ImageBlock) -> dict[str, Any]:
    source = {"type": "base64", "media_type": image.media_type, "data": image.data}
    return {"type": "image", "source": source}


def _document_param(document: DocumentBlock) -> dict[str, Any]:
    source: dict[str, Any]
    if document.media_type.startswith("text/"):
        text = base64.b64decode(document.data).decode("utf-8", errors="replace")
        source = {"type": "text", "media_type": "text/plain", "data": text}
    else:
        source = {"type": "base64", "media_type": document.media_type, "data": document.data}
    param: dict[str, Any] = {"type": "document", "source": source}
    if document.title:
        param["title"] = document.title
    return param


def _mark_cache_breakpoints(params: list[dict[str, Any]], messages: tuple[Message, ...]) -> None:
    """Mark the newest message and the last message the previous request ended with."""
    for index in _breakpoints(messages):
        _mark_last_block(params[index])


def _breakpoints(messages: tuple[Message, ...]) -> tuple[int, ...]:
    """Return the indices of the messages whose last block carries a cache breakpoint.

    The newest breakpoint writes the whole conversation to the cache for the next call. The
    other one sits where the previous request's newest breakpoint was (the message before the
    latest assistant message: the previous call's answer is the only assistant message it
    has not seen), so this call reads everything it sent before from the cache. Without it a
    read relies on the API's look-back from the newest breakpoint, which gives up after about
    20 content blocks: one batch of ten parallel tool calls and their results is enough to miss.
    """
    if not messages:
        return ()
    latest_answer = next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "assistant"), None
    )
    if latest_answer is not None and 0 < latest_answer < len(messages):
        return (len(messages) - 1, latest_answer - 1)
    return (len(messages) - 1,)


# One encoder for every body: `json.dumps` with options builds a new encoder per call, which
# cost more than the encoding for 10,000 small messages.
_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


class _BodyEncoder:
    """Encode request bodies, each message's JSON once: a call adds one or two messages.

    The messages before the first cache breakpoint are the same JSON in the next request:
    they are kept joined (`JoinedMessages`, the last two conversations: a client serves forks
    too); the messages from the first breakpoint on are encoded afresh. The body is the JSON
    of `request_params` plus `"stream": true` (a test compares them).
    """

    def __init__(self) -> None:
        self._history = JoinedMessages()
        self._head: KeptHead[str] = KeptHead()

    def encode(self, request: LLMRequest, info: ModelInfo) -> bytes:
        """Return the request body for `request`, streamed."""
        head = self._head.encode(replace(request, messages=()), info, _head_json)
        messages = request.messages
        marks = _breakpoints(messages)
        # What comes before the first breakpoint is the same JSON in the next request.
        first = min(marks, default=len(messages))
        parts = [self._history.encode(messages[:first], _joined_messages)]
        for index in range(first, len(messages)):
            param = _message_param(messages[index])
            if index in marks:
                _mark_last_block(param)
            parts.append(_json(param))
        return body_with_messages(head, parts)


def _head_json(bare: LLMRequest, info: ModelInfo) -> str:
    """Return the JSON of `bare`'s parameters (no messages), streamed."""
    params = request_params(bare, info)
    params.pop("messages")
    params.update(params.pop("extra_body", {}))
    params["stream"] = True
    return _json(params)


def _joined_messages(messages: Sequence[Message]) -> str:
    """Return the comma-joined JSON of `messages` with no cache breakpoint, in one call."""
    return _json([_message_param(m) for m in messages])[1:-1]


def _mark_last_block(message: dict[str, Any]) -> None:
    """Put a cache breakpoint on a message's last block that may carry one."""
    for block in reversed(message["content"]):
        if block["type"] not in ("thinking", "redacted_thinking"):
            block["cache_control"] = _EPHEMERAL
            return


# --- Messages API stream events -> our events and blocks ----------------------------------


def _event(data: str) -> Wire:
    """Parse one stream event; an `error` event fails the whole response."""
    try:
        event = json.loads(data, object_hook=Wire)
    except ValueError as exc:
        raise LLMStreamError(f"the stream sent invalid JSON: {exc}", provider=PROVIDER) from None
    if not isinstance(event, Wire):
        raise LLMStreamError("the stream sent a non-object event", provider=PROVIDER)
    if event.type == "error":
        error = event.error if isinstance(event.error, Wire) else Wire()
        kind, message = error.type or "", error.message or str(event.error or "")
        # As the SDK did (an error event inside a 200 stream): the response is lost.
        raise LLMStreamError(f"the stream reported {kind or 'an error'}: {message}",
                             provider=PROVIDER)
    return event



@dataclass(slots=True)
class _Part:
    """One content block while it streams."""

    kind: str
    chunks: list[str] = field(default_factory=list)
    signature: str = ""
    id: str = ""
    name: str = ""

    def block(self, stop: StopReason) -> ContentBlock | None:
        text = "".join(self.chunks)
        match self.kind:
            case "text":
                return TextBlock(text=text) if text else None
            case "thinking":
                return ThinkingBlock(thinking=text, signature=self.signature or None)
            case "redacted_thinking":
                return ThinkingBlock(thinking="", redacted_data=text)
            case "tool_use":
                tool_input, error = parse_tool_input(text, stop)
                return ToolUseBlock(id=self.id, name=self.name, input=tool_input, input_error=error)
        return None


@dataclass(slots=True)
class _Assembler:
    """Turn raw Messages API stream events into our deltas and, at the end, a response."""

    id: str = ""
    model: str = ""
    stop_reason: str | None = None
    stopped: bool = False
    usage: dict[str, int] = field(default_factory=dict)
    parts: dict[int, _Part] = field(default_factory=dict)

    def feed(self, event: Wire) -> list[StreamEvent]:
        """Take one stream event (JSON read off the wire); return the deltas to show."""
        match event.type:
            case "message_start":
                message = _object(event.message)
                self.id, self.model = message.id or "", message.model or ""
                self._count(message.usage)
                return [UsageReported(usage=self._usage())]  # counts an interrupted call
            case "content_block_start":
                return self._start(event.index, _object(event.content_block))
            case "content_block_delta":
                return self._delta(event.index, _object(event.delta))
            case "message_delta":
                self.stop_reason = _object(event.delta).stop_reason or self.stop_reason
                self._count(event.usage)
            case "message_stop":
                self.stopped = True
        return []

    def _start(self, index: int, block: Wire) -> list[StreamEvent]:
        match block.type:
            case "text":
                text = block.text or ""
                self.parts[index] = _Part("text", [text])
                return [TextDelta(text=text)] if text else []
            case "thinking":
                text = block.thinking or ""
                self.parts[index] = _Part("thinking", [text], signature=block.signature or "")
                return [ThinkingDelta(text=text)] if text else []
            case "redacted_thinking":
                self.parts[index] = _Part("redacted_thinking", [block.data or ""])
            case "tool_use":
                tool_id, name = block.id or "", block.name or ""
                self.parts[index] = _Part("tool_use", id=tool_id, name=name)
                return [ToolUseStarted(id=tool_id, name=name)]
        return []  # server tool blocks: we declare no server tools

    def _delta(self, index: int, delta: Wire) -> list[StreamEvent]:
        part = self.parts.get(index)
        if part is None:
            return []
        match delta.type:
            case "text_delta":
                part.chunks.append(text := delta.text or "")
                return [TextDelta(text=text)]
            case "thinking_delta":
                part.chunks.append(text := delta.thinking or "")
                return [ThinkingDelta(text=text)]
            case "signature_delta":
                part.signature += delta.signature or ""
            case "input_json_delta":
                part.chunks.append(delta.partial_json or "")
        return []

    def _count(self, usage: object) -> None:
        if not isinstance(usage, Wire):
            return
        for name in ("input_tokens", "output_tokens", "cache_read_input_tokens",
                     "cache_creation_input_tokens"):
            if isinstance(value := usage.get(name), int):
                self.usage[name] = value

    def finish(self) -> LLMResponse:
        """Return the complete response, or raise LLMStreamError if message_stop never came."""
        if not self.stopped:
            raise LLMStreamError("the stream ended before message_stop", provider=PROVIDER)
        stop = _STOP_REASONS.get(self.stop_reason or "", StopReason.OTHER)
        content = tuple(
            block
            for _, part in sorted(self.parts.items())
            if (block := part.block(stop)) is not None
        )
        return LLMResponse(
            id=self.id, model=self.model, content=content, stop_reason=stop, usage=self._usage()
        )

    def _usage(self) -> Usage:
        return Usage(
            input_tokens=self.usage.get("input_tokens", 0),
            output_tokens=self.usage.get("output_tokens", 0),
            cache_read_tokens=self.usage.get("cache_read_input_tokens", 0),
            cache_write_tokens=self.usage.get("cache_creation_input_tokens", 0),
        )


def _object(value: object) -> Wire:
    """Return `value` if the wire had an object there, else an empty one (fields read None)."""
    return value if isinstance(value, Wire) else Wire()


# --- SDK exceptions -> LLMError ------------------------------------------------------------


def _llm_error(exc: Exception, *, streaming: bool, url: str = "") -> Exception:
    """Map an SDK or transport exception to an LLMError; return anything else (a bug) as is."""
    import anthropic
    import httpx2

    if isinstance(exc, anthropic.APIStatusError):
        return _status_error(exc)
    if isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException | TimeoutError):
        return transport_error(exc, provider=PROVIDER, url=url, streaming=streaming,
                               timed_out=True)
    if isinstance(exc, anthropic.APIConnectionError | httpx2.TransportError):
        # Mid-stream the SDK lets transport errors (a dropped connection) escape unwrapped.
        return transport_error(exc, provider=PROVIDER, url=url, streaming=streaming,
                               timed_out=False)
    if isinstance(exc, anthropic.APIResponseValidationError):
        return LLMResponseError(str(exc), provider=PROVIDER, status=exc.status_code)
    return exc


def _status_error(exc: anthropic.APIStatusError) -> LLMError:
    kind = exc.type or ""
    message = exc.api_message or exc.message
    if exc.status_code < 400:
        # An `event: error` inside a 200 stream: the whole response is lost.
        text = f"the stream reported {kind or 'an error'}: {message}"
        return LLMStreamError(text, provider=PROVIDER)
    import anthropic

    spend_cap = (
        anthropic.ContractSpendLimitReachedError,
        anthropic.EnforcedSpendLimitReachedError,
        anthropic.LinkedOrganizationSpendLimitReachedError,
        anthropic.LinkedOrganizationBillingUnavailableError,
    )
    quota = isinstance(exc, spend_cap) or looks_like_quota(kind, exc.error_code, exc.api_message)
    return status_error(
        exc.status_code,
        f"{kind}: {message}" if kind else message,
        provider=PROVIDER,
        headers=exc.response.headers,
        quota=quota,
        overloaded=kind == "overloaded_error",
    )
