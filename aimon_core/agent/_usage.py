"""What a model call cost: the price of its usage, and an estimate for one cut off mid-stream."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING

from aimon_core.llm import (
    LLMRequest,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)

if TYPE_CHECKING:
    from aimon_core.agent._runtime import AgentRuntime


def call_cost(runtime: AgentRuntime, usage: Usage) -> float:
    """Return what `usage` of the runtime's model costs, in US dollars, by its price table
    (the settings' `prices` over aimon's; 0 for a model without prices)."""
    from aimon_core.llm import DEFAULT_PRICES

    return (runtime.prices or DEFAULT_PRICES).cost(runtime.model, runtime.client.provider, usage)


def interrupted_usage(request: LLMRequest, reported: Usage | None, streamed: str
                      ) -> tuple[Usage, bool] | None:
    """Return what a call interrupted mid-stream spent, and whether part of it is estimated.

    The usage the provider reported so far counts (Anthropic: the input, at the start); what
    is missing is estimated from the text streamed and the request. None: nothing came back,
    so the call may not even have reached the model.
    """
    if reported is None and not streamed:
        return None
    usage, estimated = reported or Usage(), False
    output = _rough_tokens(len(streamed))
    if output > usage.output_tokens:  # the output count comes only at the end
        usage, estimated = replace(usage, output_tokens=output), True
    if reported is None:  # OpenAI reports usage only at the end
        usage, estimated = replace(usage, input_tokens=_input_tokens(request)), True
    return usage, estimated


def _rough_tokens(chars: int) -> int:
    """Return ~4 characters a token (`aimon_core.compact`, above this layer, estimates finer)."""
    return (chars + 3) // 4


def _input_tokens(request: LLMRequest) -> int:
    """Return a rough count of a request's input tokens (an image counts ~1,600)."""
    chars = len(request.system) + sum(
        len(tool.name) + len(tool.description) + len(json.dumps(tool.input_schema, default=str))
        for tool in request.tools)
    images = 0
    for message in request.messages:
        for block in message.content:
            match block:
                case TextBlock(text=text):
                    chars += len(text)
                case ToolUseBlock(name=name, input=tool_input):
                    chars += len(name) + len(json.dumps(tool_input, default=str))
                case ToolResultBlock(content=content):
                    chars += sum(len(part.text) for part in content if isinstance(part, TextBlock))
                    images += sum(not isinstance(part, TextBlock) for part in content)
                case ThinkingBlock(thinking=thinking):
                    chars += len(thinking)
                case _:  # an image or a document
                    images += 1
    return _rough_tokens(chars) + 1_600 * images
