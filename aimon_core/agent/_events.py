"""Typed events: everything a UI shows about an execution comes from these."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aimon_core.llm import LLMError, Message, Usage
from aimon_core.tools import ToolResult


class StopCause(enum.Enum):
    """Why an execution ended."""

    ANSWERED = "answered"
    OUTPUT_LIMIT = "output_limit"  # the answer was cut off at the model's max output tokens
    REFUSED = "refused"
    ITERATION_LIMIT = "iteration_limit"
    TOKEN_LIMIT = "token_limit"
    TIME_LIMIT = "time_limit"
    REPEATED_TOOL_CALL = "repeated_tool_call"
    MODEL_ERROR = "model_error"
    INTERRUPTED = "interrupted"
    PROMPT_BLOCKED = "prompt_blocked"  # a UserPromptSubmit hook refused the prompt
    HOOK_STOPPED = "hook_stopped"  # a hook answered `"continue": false`

    @property
    def ok(self) -> bool:
        """Return True when the model finished its answer."""
        return self in (StopCause.ANSWERED, StopCause.OUTPUT_LIMIT)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionResult:
    """How an execution ended, what it said and what it cost."""

    stop: StopCause
    reason: str
    text: str
    new_messages: tuple[Message, ...]
    usage: Usage
    cost_usd: float
    iterations: int
    tool_calls: int
    duration_s: float
    error: LLMError | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionStarted:
    """An execution began."""

    execution_id: str
    prompt: str


@dataclass(frozen=True, slots=True, kw_only=True)
class IterationStarted:
    """A model call is about to be made."""

    iteration: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantTextDelta:
    """Streamed answer text."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantThinkingDelta:
    """Streamed model reasoning."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRetrying:
    """The model call failed with a retryable error; the next attempt starts after `delay`."""

    attempt: int
    delay: float
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelStreamRestarted:
    """A failed stream is being retried; text streamed since the iteration began is void."""

    attempt: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AssistantMessageCompleted:
    """The model finished one response."""

    message: Message
    usage: Usage
    cost_usd: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStarted:
    """A tool call is about to be checked and run."""

    tool_use_id: str
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallFinished:
    """A tool call ended (ran, failed, was denied or never ran)."""

    tool_use_id: str
    name: str
    input: Mapping[str, Any]
    result: ToolResult
    duration_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice:
    """Something the user should know that is not part of the answer."""

    text: str
    level: str = "info"


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutionFinished:
    """An execution ended; `result` says how."""

    result: ExecutionResult
    extra: Mapping[str, Any] = field(default_factory=dict)


AgentEvent = (
    ExecutionStarted
    | IterationStarted
    | AssistantTextDelta
    | AssistantThinkingDelta
    | ModelRetrying
    | ModelStreamRestarted
    | AssistantMessageCompleted
    | ToolCallStarted
    | ToolCallFinished
    | Notice
    | ExecutionFinished
)

EventSink = Callable[[AgentEvent], None]
