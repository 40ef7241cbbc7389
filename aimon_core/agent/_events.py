"""Typed events: everything a UI shows about an execution comes from these."""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aimon_core.agent._approval import (
    ApprovalRefused,
    ApprovalRequested,
    ApprovalResolved,
    ApprovalWithdrawn,
)
from aimon_core.agent._workflow_events import WorkflowRunChanged, WorkflowTaskChanged
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
    COMMAND = "command"  # a slash command answered; no model was called
    COMMAND_FAILED = "command_failed"  # a slash command could not run

    @property
    def ok(self) -> bool:
        """Return True when the model (or a slash command) finished its answer."""
        return self in (StopCause.ANSWERED, StopCause.OUTPUT_LIMIT, StopCause.COMMAND)


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
    # Part of `usage` is estimated: a call interrupted mid-stream, its output (and, when the
    # provider had not reported it yet, its input) counted at ~4 characters a token.
    usage_estimated: bool = False


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
class ToolCallAnnounced:
    """The model began a tool call: its name is known, its input is still streaming."""

    tool_use_id: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStarted:
    """A tool call is about to be checked and run; `label` is its one-line form."""

    tool_use_id: str
    name: str
    input: Mapping[str, Any]
    label: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallOutput:
    """Output a running tool call printed (a command's stdout and stderr), as it comes."""

    tool_use_id: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallFinished:
    """A tool call ended (ran, failed, was denied or never ran)."""

    tool_use_id: str
    name: str
    input: Mapping[str, Any]
    result: ToolResult
    duration_s: float
    label: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice:
    """Something the user should know that is not part of the answer."""

    text: str
    level: str = "info"


@dataclass(frozen=True, slots=True, kw_only=True)
class Compacted:
    """The conversation was compacted: older messages summarised (or old tool results shed).

    `messages` is the new transcript; `text` is the report for the user ("Conversation
    compacted (41,200 → 6,300 tokens) ..."); `advice` says what to do after repeated failed
    summaries. `usage` and `cost_usd` are what the summary call cost.
    """

    trigger: str  # "auto" or "manual"
    text: str
    tokens_before: int
    tokens_after: int
    summarised: bool
    messages: tuple[Message, ...] = field(default=(), repr=False)
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    advice: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentStarted:
    """A subagent began work for the session (a Task call, a forked skill, `/task`).

    `label` says what started it ("task 'Find add'", "skill review"); `goal` is its prompt.
    """

    agent: str
    execution_id: str
    label: str
    goal: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentStep:
    """A subagent started one of its tool calls; `label` is the call's one-line form."""

    agent: str
    execution_id: str
    label: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentFinished:
    """A subagent ended; `result` says how, what it answered and what it cost."""

    agent: str
    execution_id: str
    label: str
    result: ExecutionResult


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
    | ToolCallAnnounced
    | ToolCallStarted
    | ToolCallOutput
    | ToolCallFinished
    | Notice
    | Compacted
    | SubagentStarted
    | SubagentStep
    | SubagentFinished
    | ExecutionFinished
    | ApprovalRequested
    | ApprovalResolved
    | ApprovalWithdrawn
    | ApprovalRefused
    | WorkflowTaskChanged
    | WorkflowRunChanged
)

EventSink = Callable[[AgentEvent], None]
