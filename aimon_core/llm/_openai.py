"""The OpenAI Chat Completions client, on the `openai` SDK (imported lazily).

It also serves OpenAI-compatible servers (Ollama, vLLM, OpenRouter) through `base_url`.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from aimon_core.llm._client import collect
from aimon_core.llm._errors import (
    LLMError,
    LLMQuotaError,
    LLMResponseError,
    LLMStreamError,
)
from aimon_core.llm._joined import JoinedMessages, KeptHead, body_with_messages
from aimon_core.llm._messages import (
    DocumentBlock,
    ImageBlock,
    LLMRequest,
    LLMResponse,
    Message,
    ResponseCompleted,
    StopReason,
    StreamEvent,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolResultBlock,
    ToolUseBlock,
    ToolUseStarted,
    Usage,
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
from aimon_core.llm._sse import Wire as _Wire
from aimon_core.llm._sse import sse_data

if TYPE_CHECKING:
    import openai

PROVIDER = "openai"

_FINISH_REASONS = {
    "stop": StopReason.END,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "length": StopReason.MAX_TOKENS,
    "content_filter": StopReason.REFUSAL,
}


class OpenAIClient:
    """An LLMClient for OpenAI Chat Completions and compatible servers (no retries of its own)."""

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
        import openai

        self._idle_timeout = idle_timeout
        self._bodies = _BodyEncoder()
        self._sdk = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            # The idle guard fires first; the socket read timeout is only a backstop.
            timeout=openai.Timeout(max(2 * idle_timeout, 30.0), connect=connect_timeout),
        )

    @property
    def provider(self) -> str:
        """Return "openai"."""
        return PROVIDER

    async def call(self, request: LLMRequest) -> LLMResponse:
        """Run one call (streamed underneath, so a stalled server is noticed)."""
        return await collect(self.stream(request))

    async def stream(self, request: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Stream one call; raise an LLMError unless the response arrived complete.

        The SDK sends the request and maps HTTP errors; the SSE body is read here, because
        the SDK's stream iterator ends the same way whether or not `data: [DONE]` arrived,
        and a stream cut before [DONE] must count as failed.
        """
        import httpx2

        body = self._bodies.encode(request, model_info(request.model, PROVIDER))
        try:
            async with asyncio.timeout(self._idle_timeout):
                # The SDK's own client (auth, base URL, headers, timeouts, HTTP errors mapped
                # to its exception types); the body goes as bytes, each message encoded once.
                response = await self._sdk.post(
                    "/chat/completions", cast_to=httpx2.Response, content=body, stream=True
                )
        except Exception as exc:
            error = _llm_error(exc, streaming=False, url=api_url(self._sdk.base_url))
            if error is exc:
                raise
            raise error from exc
        assembler = _Assembler()
        events = guard_idle(sse_data(response.aiter_lines()), self._idle_timeout,
                            provider=PROVIDER, url=api_url(self._sdk.base_url))
        done = False
        try:
            async for data in events:
                if data.startswith("[DONE]"):
                    done = True
                    break
                for out in assembler.feed(_chunk(data)):
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
            try:
                if done:  # read the body's end: a response read whole keeps its connection
                    await _drain(events)
            finally:
                await events.aclose()
                await response.aclose()
        if not done:
            raise LLMStreamError("the stream ended before data: [DONE]", provider=PROVIDER)
        yield ResponseCompleted(response=assembler.finish())

    async def aclose(self) -> None:
        """Close the SDK's HTTP client."""
        await self._sdk.close()


# How long the end of a body may take after `data: [DONE]`; a server that sends nothing
# more only costs its connection (closed, not kept for the next call).
_DRAIN_SECONDS = 0.5


async def _drain(events: AsyncIterator[str]) -> None:
    """Read what follows `data: [DONE]` (normally only the body's end) and drop it.

    A response closed before its end was read cannot give its connection back to the pool:
    every call then opened a new TCP (and, on a real endpoint, TLS) connection. Measured on
    the loopback server: ~0.4 ms of each iteration's ~6 ms.
    """
    with contextlib.suppress(Exception):
        async with asyncio.timeout(_DRAIN_SECONDS):
            async for _ in events:
                pass


# One encoder for every body: `json.dumps` with options builds a new encoder per call.
_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


class _BodyEncoder:
    """Encode request bodies, each message's JSON once: a call adds one or two messages.

    The SDK's `create` walks and re-encodes the whole history before every call (its typed
    arguments; a 50-call turn once spent more time there than anywhere else). The messages
    of the previous request are kept joined (`JoinedMessages`, the last two conversations: a
    client serves forks too) and only the new ones are encoded. The body is the JSON of
    `request_params` (a test compares them).
    """

    def __init__(self) -> None:
        self._history = JoinedMessages()
        self._head: KeptHead[tuple[str, str]] = KeptHead()

    def encode(self, request: LLMRequest, info: ModelInfo) -> bytes:
        """Return the request body for `request`."""
        head, system = self._head.encode(replace(request, messages=()), info, _head_json)
        history = self._history.encode(request.messages, _joined_messages)
        return body_with_messages(head, (system, history))


def _head_json(bare: LLMRequest, info: ModelInfo) -> tuple[str, str]:
    """Return the JSON of `bare`'s parameters (no messages) and of its system message."""
    params = request_params(bare, info)
    system = ",".join(_json(m) for m in params.pop("messages"))
    return _json(params), system


def _joined_messages(messages: Sequence[Message]) -> str:
    """Return the comma-joined JSON of `messages` as Chat Completions messages, in one call."""
    return _json([param for m in messages for param in _message_params(m)])[1:-1]


# --- our request -> Chat Completions parameters -------------------------------------------


def request_params(request: LLMRequest, info: ModelInfo) -> dict[str, Any]:
    """Translate a request into `chat.completions.create` keyword arguments."""
    settings = request.settings
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for message in request.messages:
        messages.extend(_message_params(message))
    params: dict[str, Any] = {
        "model": request.model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": dict(t.input_schema),
                },
            }
            for t in request.tools
        ]
    if settings.max_tokens is not None:
        key = "max_completion_tokens" if info.uses_max_completion_tokens else "max_tokens"
        params[key] = settings.max_tokens
    if settings.temperature is not None and info.accepts_temperature:
        params["temperature"] = settings.temperature
    if settings.thinking_budget and info.supports_thinking:
        params["reasoning_effort"] = _effort(settings.thinking_budget)
    return params


def _effort(budget: int) -> str:
    if budget < 4096:
        return "low"
    return "medium" if budget < 16384 else "high"


def _message_params(message: Message) -> list[dict[str, Any]]:
    """Translate one message; a user message with tool results becomes several."""
    if message.role == "assistant":
        return [_assistant_param(message)]
    return _user_params(message)


def _user_params(message: Message) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in message.content:
        match block:
            case ToolResultBlock():
                # Tool messages hold text only: their images go into the user message after.
                out.append(_tool_param(block))
                images = [_image_part(p) for p in block.content if isinstance(p, ImageBlock)]
                if images:
                    note = f"Images from the result of tool call {block.tool_use_id}:"
                    parts += [{"type": "text", "text": note}, *images]
            case TextBlock(text=text) if text:
                parts.append({"type": "text", "text": text})
            case ImageBlock():
                parts.append(_image_part(block))
            case DocumentBlock():
                parts.append(_document_part(block))
    if parts:
        plain = all(p["type"] == "text" for p in parts)
        content: Any = "\n\n".join(p["text"] for p in parts) if plain else parts
        out.append({"role": "user", "content": content})
    return out


def _assistant_param(message: Message) -> dict[str, Any]:
    # Thinking blocks are dropped: Chat Completions has no place for them. One pass over the
    # blocks (`message.text` and `message.tool_uses` were three).
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            texts.append(block.text)
        elif isinstance(block, ToolUseBlock):
            arguments = json.dumps(dict(block.input))
            calls.append({"id": block.id, "type": "function",
                          "function": {"name": block.name, "arguments": arguments}})
    param: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        param["tool_calls"] = calls
    elif param["content"] is None:
        param["content"] = ""
    return param


def _tool_param(result: ToolResultBlock) -> dict[str, Any]:
    text = result.text
    if not text and any(isinstance(p, ImageBlock) for p in result.content):
        text = "(the result is the image(s) in the next message)"
    if result.is_error:
        text = f"Error: {text}"
    return {"role": "tool", "tool_call_id": result.tool_use_id, "content": text}


def _image_part(image: ImageBlock) -> dict[str, Any]:
    url = f"data:{image.media_type};base64,{image.data}"
    return {"type": "image_url", "image_url": {"url": url}}


def _document_part(document: DocumentBlock) -> dict[str, Any]:
    if document.media_type.startswith("text/"):
        text = base64.b64decode(document.data).decode("utf-8", errors="replace")
        title = f"{document.title}:\n" if document.title else ""
        return {"type": "text", "text": title + text}
    data = f"data:{document.media_type};base64,{document.data}"
    return {"type": "file", "file": {"filename": document.title or "document", "file_data": data}}


# --- Chat Completions chunks -> our events and blocks -------------------------------------


@dataclass(slots=True)
class _Call:
    """One tool call while its arguments stream."""

    id: str
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    announced: bool = False


def _chunk(data: str) -> Any:
    """Parse one chunk; an error object in the stream fails the whole response."""
    try:
        chunk = json.loads(data, object_hook=_Wire)
    except ValueError as exc:
        raise LLMStreamError(f"the stream sent invalid JSON: {exc}", provider=PROVIDER) from None
    if not isinstance(chunk, _Wire):
        raise LLMStreamError("the stream sent a non-object event", provider=PROVIDER)
    error = chunk.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else str(error)
        code = error.get("code") if isinstance(error, dict) else None
        if looks_like_quota(code, error.get("type") if isinstance(error, dict) else None,
                            str(message)):
            raise LLMQuotaError(str(message), provider=PROVIDER)
        raise LLMStreamError(f"the stream reported an error: {message}", provider=PROVIDER)
    chunk.setdefault("choices", [])
    return chunk


@dataclass(slots=True)
class _Assembler:
    """Turn streamed chunks into our deltas and, at the end, a response."""

    id: str = ""
    model: str = ""
    finish_reason: str | None = None
    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    calls: dict[int, _Call] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)

    def feed(self, chunk: Any) -> list[StreamEvent]:
        """Take one chunk; return the deltas to show."""
        self.id, self.model = chunk.id or self.id, chunk.model or self.model
        if chunk.usage is not None:
            self.usage = _usage(chunk.usage)
        out: list[StreamEvent] = []
        for choice in chunk.choices[:1]:
            delta = choice.delta
            # Some servers (vLLM, DeepSeek, Ollama, OpenRouter) stream reasoning as an extra field.
            reasoning = getattr(delta, "reasoning_content", None) or getattr(
                delta, "reasoning", None
            )
            if isinstance(reasoning, str) and reasoning:
                self.thinking.append(reasoning)
                out.append(ThinkingDelta(text=reasoning))
            if delta.content:
                self.text.append(delta.content)
                out.append(TextDelta(text=delta.content))
            for call in delta.tool_calls or ():
                out.extend(self._call_delta(call))
            self.finish_reason = choice.finish_reason or self.finish_reason
        return out

    def _call_delta(self, delta: Any) -> list[StreamEvent]:
        index = delta.index if isinstance(delta.index, int) else self._index_for(delta.id)
        call = self.calls.setdefault(index, _Call(id=delta.id or f"call_{index}"))
        if delta.id:
            call.id = delta.id
        if delta.function is not None:
            call.name += delta.function.name or ""
            call.arguments.append(delta.function.arguments or "")
        if call.name and not call.announced:
            call.announced = True
            return [ToolUseStarted(id=call.id, name=call.name)]
        return []

    def _index_for(self, call_id: str | None) -> int:
        """Place a tool call delta that lacks an index: by its id, else on the latest call."""
        for index, call in self.calls.items():
            if call_id and call.id == call_id:
                return index
        return len(self.calls) if call_id or not self.calls else max(self.calls)

    def finish(self) -> LLMResponse:
        """Return the complete response, or raise LLMStreamError if no finish_reason came."""
        if self.finish_reason is None:
            raise LLMStreamError("the stream ended without a finish_reason", provider=PROVIDER)
        stop = _FINISH_REASONS.get(self.finish_reason, StopReason.OTHER)
        if self.calls and stop is StopReason.END:
            stop = StopReason.TOOL_USE  # some servers say "stop" after tool calls
        content: list[TextBlock | ThinkingBlock | ToolUseBlock] = []
        if self.thinking:
            content.append(ThinkingBlock(thinking="".join(self.thinking)))
        if text := "".join(self.text):
            content.append(TextBlock(text=text))
        for _, call in sorted(self.calls.items()):
            tool_input, error = parse_tool_input("".join(call.arguments), stop)
            content.append(
                ToolUseBlock(id=call.id, name=call.name, input=tool_input, input_error=error)
            )
        return LLMResponse(
            id=self.id, model=self.model, content=tuple(content), stop_reason=stop, usage=self.usage
        )


def _usage(usage: Any) -> Usage:
    """Count cached prompt tokens apart, so that input_tokens means uncached input."""
    details = usage.prompt_tokens_details
    cached = (details and details.cached_tokens) or 0
    written = (details and getattr(details, "cache_write_tokens", None)) or 0
    return Usage(
        input_tokens=max(0, (usage.prompt_tokens or 0) - cached - written),
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=cached,
        cache_write_tokens=written,
    )


# --- SDK exceptions -> LLMError ------------------------------------------------------------


def _llm_error(exc: Exception, *, streaming: bool, url: str = "") -> Exception:
    """Map an SDK or transport exception to an LLMError; return anything else (a bug) as is."""
    import httpx2
    import openai

    if isinstance(exc, openai.APIStatusError):
        return _status_error(exc)
    if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException | TimeoutError):
        return transport_error(exc, provider=PROVIDER, url=url, streaming=streaming,
                               timed_out=True)
    if isinstance(exc, openai.APIConnectionError | httpx2.TransportError):
        return transport_error(exc, provider=PROVIDER, url=url, streaming=streaming,
                               timed_out=False)
    if isinstance(exc, openai.APIResponseValidationError):
        return LLMResponseError(str(exc), provider=PROVIDER, status=exc.status_code)
    if isinstance(exc, openai.APIError):
        # An error object inside a 200 stream: the whole response is lost.
        if looks_like_quota(exc.code, exc.type, exc.message):
            return LLMQuotaError(exc.message, provider=PROVIDER)
        return LLMStreamError(f"the stream reported an error: {exc.message}", provider=PROVIDER)
    return exc


def _status_error(exc: openai.APIStatusError) -> LLMError:
    body = exc.body if isinstance(exc.body, dict) else {}
    text = body.get("message") if isinstance(body.get("message"), str) else exc.message
    code = exc.code or exc.type or ""
    message = f"{code}: {text}" if code else str(text)
    return status_error(
        exc.status_code,
        message,
        provider=PROVIDER,
        headers=exc.response.headers,
        quota=looks_like_quota(exc.code, exc.type, text),
        overloaded=exc.status_code == 529 or "overloaded" in (exc.type or ""),
    )
