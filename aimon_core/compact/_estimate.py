"""How big a request is: a character-based estimate, calibrated by the provider's usage."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
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


def text_tokens(text: str) -> int:
    """Return the estimated tokens of a text."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def block_tokens(block: ContentBlock) -> int:
    """Return the estimated tokens of one content block."""
    match block:
        case TextBlock(text=text):
            return BLOCK_OVERHEAD + text_tokens(text)
        case ImageBlock():
            return BLOCK_OVERHEAD + IMAGE_TOKENS
        case DocumentBlock(media_type=media_type, data=data):
            size = len(data) * 3 // 4  # base64 -> bytes
            if media_type.startswith("text/"):
                return BLOCK_OVERHEAD + (size + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN
            return BLOCK_OVERHEAD + max(PDF_MIN_TOKENS, size // PDF_BYTES_PER_TOKEN)
        case ToolUseBlock(name=name, input=tool_input):
            arguments = json.dumps(tool_input, ensure_ascii=False, default=str)
            return BLOCK_OVERHEAD + text_tokens(name) + text_tokens(arguments)
        case ToolResultBlock(content=content):
            return BLOCK_OVERHEAD + sum(block_tokens(part) for part in content)
        case ThinkingBlock(thinking=thinking, redacted_data=redacted):
            return BLOCK_OVERHEAD + text_tokens(thinking) + text_tokens(redacted or "")
    return BLOCK_OVERHEAD


def message_tokens(message: Message) -> int:
    """Return the estimated tokens of one message."""
    return MESSAGE_OVERHEAD + sum(block_tokens(block) for block in message.content)


def messages_tokens(messages: Iterable[Message]) -> int:
    """Return the estimated tokens of a sequence of messages."""
    return sum(message_tokens(message) for message in messages)


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

