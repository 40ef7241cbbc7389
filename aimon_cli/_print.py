"""Print mode: `aimon -p PROMPT` runs one turn and prints the answer (text, json, stream-json)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from aimon_core.agent import (
    AgentEvent,
    AssistantMessageCompleted,
    AssistantTextDelta,
    Compacted,
    ExecutionFinished,
    ExecutionResult,
    ModelRetrying,
    ModelStreamRestarted,
    Notice,
    StopCause,
    ToolCallFinished,
    ToolCallStarted,
)
from aimon_core.live import LiveSession, LiveSessionEvent
from aimon_core.llm import Message, Usage

OUTPUT_FORMATS = ("text", "json", "stream-json")


@dataclass(frozen=True, slots=True, kw_only=True)
class PrintJob:
    """One print-mode run."""

    prompt: str
    output_format: str
    max_iterations: int | None


class _StreamJson:
    """Writes one JSON object per line for each event."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def write(self, obj: Mapping[str, Any]) -> None:
        self.out.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
        self.out.flush()

    def __call__(self, event: AgentEvent | object) -> None:
        match event:
            case AssistantTextDelta(text=text):
                self.write({"type": "text_delta", "text": text})
            case AssistantMessageCompleted(message=message, usage=usage, cost_usd=cost):
                self.write({"type": "assistant", "message": message_json(message),
                            "usage": usage_json(usage), "cost_usd": cost})
            case ToolCallStarted(tool_use_id=tool_id, name=name, input=tool_input):
                self.write({"type": "tool_use", "id": tool_id, "name": name, "input": tool_input})
            case ToolCallFinished(tool_use_id=tool_id, name=name, result=result, duration_s=d):
                self.write({"type": "tool_result", "tool_use_id": tool_id, "name": name,
                            "is_error": result.is_error, "content": result.text,
                            "duration_ms": round(d * 1000, 1)})
            case ModelRetrying(attempt=attempt, delay=delay, reason=reason):
                self.write({"type": "retry", "attempt": attempt, "delay_s": delay,
                            "reason": reason})
            case ModelStreamRestarted(attempt=attempt, reason=reason):
                self.write({"type": "stream_restarted", "attempt": attempt, "reason": reason})
            case Notice(text=text, level=level):
                self.write({"type": "notice", "level": level, "text": text})
            case Compacted() as done:
                self.write(compaction_json(done))
            case ExecutionFinished():
                pass  # the result line is written by the caller, with the session id
            case _:
                pass


def message_json(message: Message) -> dict[str, Any]:
    """Return a message as plain JSON for stream-json output."""
    from aimon_core.llm import TextBlock, ThinkingBlock, ToolResultBlock, ToolUseBlock

    blocks: list[dict[str, Any]] = []
    for block in message.content:
        match block:
            case TextBlock(text=text):
                blocks.append({"type": "text", "text": text})
            case ThinkingBlock(thinking=text):
                blocks.append({"type": "thinking", "thinking": text})
            case ToolUseBlock(id=i, name=name, input=tool_input):
                blocks.append({"type": "tool_use", "id": i, "name": name, "input": tool_input})
            case ToolResultBlock(tool_use_id=i, is_error=err):
                blocks.append({"type": "tool_result", "tool_use_id": i, "is_error": err,
                               "content": block.text})
            case _:
                blocks.append({"type": type(block).__name__})
    return {"role": message.role, "content": blocks}


def compaction_json(done: Compacted) -> dict[str, Any]:
    """Return the stream-json line of a compaction."""
    return {"type": "compaction", "trigger": done.trigger, "summarised": done.summarised,
            "tokens_before": done.tokens_before, "tokens_after": done.tokens_after,
            "text": done.text, "advice": done.advice, "usage": usage_json(done.usage),
            "cost_usd": round(done.cost_usd, 6)}


def usage_json(usage: Usage) -> dict[str, int]:
    """Return usage counts as JSON."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
    }


def result_json(result: ExecutionResult, session_id: str) -> dict[str, Any]:
    """Return the final result line (shape close to Claude Code's `result` message)."""
    return {
        "type": "result",
        "subtype": "success" if result.stop.ok else f"error_{result.stop.value}",
        "is_error": not result.stop.ok,
        "result": result.text,
        "stop_reason": result.stop.value,
        "reason": result.reason,
        "session_id": session_id,
        "num_iterations": result.iterations,
        "num_tool_calls": result.tool_calls,
        "duration_ms": round(result.duration_s * 1000),
        "total_cost_usd": round(result.cost_usd, 6),
        "usage": usage_json(result.usage),
    }


def read_prompt(prompt: str | None, stdin: TextIO) -> str:
    """Return the prompt from the argument, or from stdin when it is piped."""
    if prompt and prompt != "-":
        piped = "" if stdin.isatty() else _read_available(stdin)
        return f"{prompt}\n\n{piped}".strip() if piped.strip() else prompt
    if stdin.isatty():
        return ""
    return stdin.read().strip()


def _read_available(stdin: TextIO) -> str:
    """Read piped stdin if something is there; never block on an idle pipe."""
    import select

    try:
        ready, _, _ = select.select([stdin], [], [], 0)
    except (OSError, ValueError):
        return ""
    return stdin.read() if ready else ""


async def run_print(job: PrintJob, live: LiveSession, out: TextIO, err: TextIO
                    ) -> ExecutionResult:
    """Run one turn in the live session and write its output; return the result."""
    runtime = live.runtime
    stream = _StreamJson(out) if job.output_format == "stream-json" else None
    if stream is not None:
        stream.write({"type": "system", "subtype": "init", "session_id": live.id,
                      "model": runtime.model, "provider": runtime.client.provider,
                      "cwd": str(live.project_root), "tools": list(runtime.tools.names()),
                      "agent": runtime.agent.name})

    def on_event(event: LiveSessionEvent) -> None:
        if isinstance(event, Notice) and event.level == "warning":
            # Hook failures (timeout, exit 1, invalid JSON) and other warnings are never
            # silent: on stderr in every output format (stream-json also has them as events).
            err.write(f"aimon: {event.text}\n")
            err.flush()
        if stream is not None:
            stream(event)
        elif isinstance(event, ModelRetrying):
            err.write(f"aimon: {event.reason}; retrying in {event.delay:.1f} s "
                      f"(attempt {event.attempt})\n")
        elif isinstance(event, Compacted) and event.trigger == "auto":
            # `/compact` prints its report as the result; an automatic one goes to stderr.
            advice = f"\naimon: {event.advice}" if event.advice else ""
            err.write(f"aimon: {event.text}{advice}\n")
            err.flush()

    budget = live.budget()
    if job.max_iterations is not None:
        budget = budget.with_overrides(max_iterations=job.max_iterations)
    unsubscribe = live.subscribe(on_event)
    try:
        result = await live.submit(job.prompt, budget=budget)
    finally:
        unsubscribe()
    if stream is not None:
        stream.write(result_json(result, live.id))
    elif job.output_format == "json":
        out.write(json.dumps(result_json(result, live.id), ensure_ascii=False) + "\n")
    elif result.stop is StopCause.COMMAND_FAILED:
        err.write(f"aimon: {result.text.rstrip()}\n")
    else:
        if result.text:
            out.write(result.text.rstrip() + "\n")
        if not result.stop.ok:
            err.write(f"aimon: {result.reason}\n")
    out.flush()
    return result


def exit_code(result: ExecutionResult) -> int:
    """Return the process exit status for a result."""
    if result.stop.ok:
        return 0
    if result.stop is StopCause.INTERRUPTED:
        return 130
    return 1
