"""How big a request is: a character-based estimate, calibrated by the provider's usage."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from aimon_core.llm import (
    ContentBlock,
    DocumentBlock,
    ImageBlock,
    LLMClient,
    LLMError,
    LLMRequest,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolDefinition,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)

# About four characters a token for English and code with Claude's and GPT's tokenizers; the
# calibration below corrects it from what the provider reports.
CHARS_PER_TOKEN = 4
# Per-item framing the providers add (role markers, block headers, tool-call wrappers).
MESSAGE_OVERHEAD = 4
BLOCK_OVERHEAD = 3
# Claude bills an image at about width x height / 750 tokens, capped near 1,600 (it scales
# bigger images down); without decoding the image the cap is the safe guess.
IMAGE_TOKENS = 1_600
# A PDF page costs its text plus an image of the page: ~1,500-3,000 tokens. Bytes are all we
# know, so count one token per 30 bytes, and at least one page.
PDF_BYTES_PER_TOKEN = 30
PDF_MIN_TOKENS = 1_500
_MIN_RATIO, _MAX_RATIO = 0.25, 4.0
# json.dumps(x, ensure_ascii=False, default=str) builds this encoder on every call.
_ARGUMENTS = json.JSONEncoder(ensure_ascii=False, default=str)


def text_tokens(text: str) -> int:
    """Return the estimated tokens of a text."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def block_tokens(block: ContentBlock) -> int:
    """Return the estimated tokens of one content block."""
    match block:
        case TextBlock(text=text):
            return BLOCK_OVERHEAD + text_tokens(text)
        case ToolResultBlock(content=parts):
            return BLOCK_OVERHEAD + _blocks_tokens(parts)
        case ToolUseBlock(name=name, input=tool_input):
            return BLOCK_OVERHEAD + text_tokens(name) + text_tokens(_ARGUMENTS.encode(tool_input))
        case ImageBlock():
            return BLOCK_OVERHEAD + IMAGE_TOKENS
        case DocumentBlock(media_type=media_type, data=data):
            size = len(data) * 3 // 4  # base64 -> bytes
            if media_type.startswith("text/"):
                return BLOCK_OVERHEAD + (size + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
            return BLOCK_OVERHEAD + max(PDF_MIN_TOKENS, size // PDF_BYTES_PER_TOKEN)
        case ThinkingBlock(thinking=thinking, redacted_data=redacted):
            return BLOCK_OVERHEAD + text_tokens(thinking) + text_tokens(redacted or "")
    return BLOCK_OVERHEAD


def _blocks_tokens(blocks: Iterable[ContentBlock]) -> int:
    return sum(map(block_tokens, blocks))


def message_tokens(message: Message) -> int:
    """Return the estimated tokens of one message."""
    return MESSAGE_OVERHEAD + _blocks_tokens(message.content)


def messages_tokens(messages: Iterable[Message]) -> int:
    """Return the estimated tokens of a sequence of messages."""
    return sum(map(message_tokens, messages))


def overhead_tokens(system: str, tools: Iterable[ToolDefinition]) -> int:
    """Return the estimated tokens of the system prompt and the tool definitions."""
    total = text_tokens(system)
    for tool in tools:
        schema = json.dumps(tool.input_schema, ensure_ascii=False, default=str)
        total += BLOCK_OVERHEAD + text_tokens(tool.name + tool.description + schema)
    return total


def request_tokens(request: LLMRequest) -> int:
    """Return the uncalibrated estimate of a whole request (system, tools, messages)."""
    return overhead_tokens(request.system, request.tools) + messages_tokens(request.messages)


class RunningEstimate:
    """`request_tokens` of one conversation's requests, walking only what is new.

    A conversation's requests grow at the end: each keeps the messages of the one before
    (the same objects) and adds a few. It keeps the total of the last request's messages;
    a request whose messages begin with those (equal values, checked at C speed: the same
    objects) adds only the rest; anything else (a compaction) is walked whole. The system
    prompt and tools are measured again only when they change. Without this a session's
    compactor walked every message twice a model call (~5 ms each at 10,000 messages) and
    dumped every tool schema to JSON three times.
    """

    __slots__ = ("_messages", "_overhead", "_overhead_of", "_total")

    def __init__(self) -> None:
        self._messages: tuple[Message, ...] = ()
        self._total = 0
        self._overhead_of: tuple[str, tuple[ToolDefinition, ...]] | None = None
        self._overhead = 0

    def overhead(self, system: str, tools: Sequence[ToolDefinition]) -> int:
        """Return `overhead_tokens(system, tools)`."""
        key = (system, tuple(tools))
        if key != self._overhead_of:
            self._overhead_of, self._overhead = key, overhead_tokens(system, tools)
        return self._overhead

    def messages(self, messages: Sequence[Message]) -> int:
        """Return `messages_tokens(messages)`."""
        given = tuple(messages)
        seen = len(self._messages)
        if len(given) >= seen and given[:seen] == self._messages:
            total = self._total + messages_tokens(given[seen:])
        else:
            total = messages_tokens(given)
        self._messages, self._total = given, total
        return total

    def request(self, request: LLMRequest) -> int:
        """Return `request_tokens(request)`."""
        return self.overhead(request.system, request.tools) + self.messages(request.messages)


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenCalibration:
    """How far our estimates are from the provider's counts: `reported / estimated`.

    Start with `TokenCalibration()` (ratio 1) and after every model call keep
    `calibration.observe(estimated=<estimate of the request sent>, usage=response.usage)`.
    """

    ratio: float = 1.0

    def apply(self, estimate: int) -> int:
        """Return `estimate` corrected by the ratio."""
        return round(estimate * self.ratio)

    def observe(self, *, estimated: int, usage: Usage) -> TokenCalibration:
        """Return the calibration learnt from one call: the request's estimate and its usage.

        The ratio is clamped to [0.25, 4]: a usage that reports nothing (some local servers)
        or a wildly different count is a broken report, not a tokenizer.
        """
        reported = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        if estimated <= 0 or reported <= 0:
            return self
        return TokenCalibration(ratio=min(_MAX_RATIO, max(_MIN_RATIO, reported / estimated)))


def estimate_request_tokens(
    request: LLMRequest, calibration: TokenCalibration | None = None
) -> int:
    """Return the calibrated estimate of a request's input tokens."""
    return (calibration or TokenCalibration()).apply(request_tokens(request))


@runtime_checkable
class TokenCounter(Protocol):
    """A client that can count a request's input tokens exactly (a provider endpoint)."""

    async def count_tokens(self, request: LLMRequest) -> int:
        """Return the input tokens `request` would use."""
        ...


async def count_request_tokens(
    request: LLMRequest, *, client: LLMClient, calibration: TokenCalibration | None = None
) -> int:
    """Return the provider's count if the client offers one, else the calibrated estimate."""
    if isinstance(client, TokenCounter):
        try:
            return await client.count_tokens(request)
        except LLMError:
            pass  # counting is an optimisation: the estimate is always there
    return estimate_request_tokens(request, calibration)


_TOO_LONG = re.compile(
    r"prompt is too long|context[_ ]length[_ ]exceeded|maximum context length"
    r"|context window|exceeds? context limit|too many (input )?tokens|input is too long"
    r"|request_too_large",
    re.IGNORECASE,
)
_ANTHROPIC_COUNT = re.compile(r"(\d[\d,]*) tokens > (\d[\d,]*)")


def is_prompt_too_long(error: LLMError) -> bool:
    """Return whether a provider refused a request because it does not fit the window."""
    if error.status not in (400, 413, None) or error.retryable:
        return False
    return error.status == 413 or bool(_TOO_LONG.search(error.message))


def reported_prompt_tokens(error: LLMError) -> int | None:
    """Return the request size a "prompt is too long" error states, if it states one.

    Anthropic says `prompt is too long: 208113 tokens > 200000 maximum`.
    """
    found = _ANTHROPIC_COUNT.search(error.message)
    return int(found.group(1).replace(",", "")) if found else None

