"""Provider-neutral messages, content blocks, requests and responses."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True, kw_only=True)
class TextBlock:
    """Plain text."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ImageBlock:
    """An image, base64-encoded."""

    media_type: str
    data: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentBlock:
    """A document (PDF or plain text), base64-encoded."""

    media_type: str
    data: str
    title: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUseBlock:
    """The model asks to run a tool."""

    id: str
    name: str
    input: Mapping[str, Any]
    # Set when the input JSON could not be parsed (malformed, or cut off by max tokens):
    # such a call is never run; it is answered with this error so the model can retry.
    input_error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultBlock:
    """The answer to one ToolUseBlock."""

    tool_use_id: str
    content: tuple[TextBlock | ImageBlock, ...]
    is_error: bool = False

    @property
    def text(self) -> str:
        """Return the text parts joined."""
        content = self.content
        if len(content) == 1 and type(content[0]) is TextBlock:
            return content[0].text  # the usual result: one text, nothing to join
        return "\n".join(b.text for b in content if isinstance(b, TextBlock))


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingBlock:
    """Model reasoning; kept and sent back as the provider requires.

    `signature` is Anthropic's integrity token; `redacted_data` holds a redacted block's payload.
    """

    thinking: str
    signature: str | None = None
    redacted_data: str | None = None


ContentBlock = (
    TextBlock | ImageBlock | DocumentBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One message of a conversation."""

    role: Role
    content: tuple[ContentBlock, ...]

    @classmethod
    def user(cls, text: str) -> Message:
        """Make a user message holding one text block."""
        return cls(role="user", content=(TextBlock(text=text),))

    @property
    def text(self) -> str:
        """Return the text blocks joined."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def first_text(self) -> str:
        """Return the first text part: of a user message, what was typed (context blocks and
        hook additions follow it)."""
        return next((b.text for b in self.content if isinstance(b, TextBlock)), "")

    @property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        """Return the tool calls in this message."""
        return tuple(b for b in self.content if isinstance(b, ToolUseBlock))


class StopReason(enum.Enum):
    """Why the model stopped producing output."""

    END = "end"
    TOOL_USE = "tool_use"
    MAX_TOKENS = "max_tokens"
    STOP_SEQUENCE = "stop_sequence"
    REFUSAL = "refusal"
    OTHER = "other"


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token counts of one or more model calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total_tokens(self) -> int:
        """Return every token counted, cached ones included."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDefinition:
    """What the model is told about one tool."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSettings:
    """Per-call model parameters; None means the provider's default."""

    max_tokens: int | None = None
    temperature: float | None = None
    thinking_budget: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMRequest:
    """Everything one model call needs."""

    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...] = ()
    settings: ModelSettings = field(default_factory=ModelSettings)
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMResponse:
    """One complete model response."""

    id: str
    model: str
    content: tuple[ContentBlock, ...]
    stop_reason: StopReason
    usage: Usage = field(default_factory=Usage)

    @property
    def message(self) -> Message:
        """Return the response as an assistant message."""
        return Message(role="assistant", content=self.content)

    @property
    def text(self) -> str:
        """Return the text blocks joined."""
        return self.message.text


# Stream events: what LLMClient.stream yields. The last event of a successful stream is
# ResponseCompleted; a stream that ends any other way raises an LLMError.


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    """A piece of answer text."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkingDelta:
    """A piece of model reasoning."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUseStarted:
    """The model began a tool call; its input is still streaming."""

    id: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamRestarted:
    """A retry began after a failed attempt; discard deltas shown since the last start."""

    attempt: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryScheduled:
    """A call failed with a retryable error and will be tried again after `delay` seconds."""

    attempt: int
    delay: float
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageReported:
    """The usage the provider has reported so far (Anthropic: the input tokens, at the start).

    What an interrupted call is counted from; a completed one counts its response's usage.
    """

    usage: Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseCompleted:
    """The stream finished with a complete response."""

    response: LLMResponse


StreamEvent = (
    TextDelta
    | ThinkingDelta
    | ToolUseStarted
    | StreamRestarted
    | RetryScheduled
    | UsageReported
    | ResponseCompleted
)
