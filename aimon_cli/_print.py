"""Print mode: `aimon -p PROMPT` runs one turn and prints the answer (text, json, stream-json)."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import errno
import json
import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from aimon_core.agent import (
    AgentEvent,
    ApprovalRefused,
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
    WorkflowRunChanged,
    WorkflowTaskChanged,
)
from aimon_core.live import LiveSession, LiveSessionEvent
from aimon_core.llm import Message, Usage

if TYPE_CHECKING:
    from aimon_core.permission import PermissionMode, PermissionPolicy
    from aimon_core.tools import ToolRegistry

OUTPUT_FORMATS = ("text", "json", "stream-json")
# What a shell reports for a writer killed by SIGPIPE (128 + 13), as `yes | head -1` gives.
EXIT_OUTPUT_CLOSED = 141


class OutputClosedError(Exception):
    """Standard output's reader went away (EPIPE): the run stopped as if interrupted."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PrintJob:
    """One print-mode run."""

    prompt: str
    output_format: str
    max_iterations: int | None


class _Output:
    """stdout (or stderr) that notices when its reader goes away (`aimon -p ... | head -1`).

    On EPIPE it stops writing, points the file descriptor at /dev/null (so no later flush,
    the one at exit included, can fail again) and calls `on_closed` once: for stdout, print
    mode stops the turn there, since nobody reads what the next tool calls would do.
    """

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self.closed = False
        self.on_closed: Callable[[], None] = _nothing

    def write(self, text: str) -> None:
        """Write and flush `text`, unless the reader is gone."""
        if self.closed:
            return
        try:
            self._out.write(text)
            self._out.flush()
        except OSError as exc:
            if not isinstance(exc, BrokenPipeError) and exc.errno != errno.EPIPE:
                raise
            self._close()

    def _close(self) -> None:
        self.closed = True
        with contextlib.suppress(OSError, ValueError):  # no file descriptor (a StringIO)
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._out.fileno())
            finally:
                os.close(devnull)
        self.on_closed()


def _nothing() -> None:
    return None


class _StreamJson:
    """Writes one JSON object per line for each event."""

    def __init__(self, out: _Output) -> None:
        self.out = out

    def write(self, obj: Mapping[str, Any]) -> None:
        self.out.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")

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
            case WorkflowTaskChanged() | WorkflowRunChanged():
                self.write(workflow_json(event))
            case ExecutionFinished():
                pass  # the result line is written by the caller, with the session id
            case _:
                pass


def workflow_json(event: WorkflowTaskChanged | WorkflowRunChanged) -> dict[str, Any]:
    """Return the stream-json line of a workflow run's or task's change."""
    import dataclasses

    data = {k: v.value if isinstance(v, enum.Enum) else v
            for k, v in dataclasses.asdict(event).items()}
    kind = "workflow_task" if isinstance(event, WorkflowTaskChanged) else "workflow_run"
    return {"type": kind, **data}


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


def result_json(result: ExecutionResult, session_id: str,
                refused: Sequence[ApprovalRefused] = (),
                artifacts: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
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
        # Claude Code's field: every call refused without a person to ask, or denied.
        "permission_denials": [{"tool_name": r.tool_name, "tool_use_id": r.tool_use_id,
                                "tool_input": dict(r.tool_input)} for r in refused],
        # The files the turn's tools created or changed (aimon_core.tools.collect_artifacts).
        "artifacts": list(artifacts),
    }


def refusal_summary(refused: Sequence[ApprovalRefused], tools: ToolRegistry,
                    policy: PermissionPolicy | None) -> str:
    """Return the stderr lines that list refused calls and the flags that would allow them.

    A flag is named only when it is shown to allow the call (`policy` decides the call again
    with it); calls a deny refused get no flag.
    """
    asked = [r for r in refused if not r.denied]
    denied = [r for r in refused if r.denied]
    lines: list[str] = []
    if asked:
        were = "it was" if len(asked) == 1 else "they were"
        lines.append(f"aimon: {_calls(len(asked))} needed approval, which print mode cannot "
                     f"ask for; {were} refused:")
        lines.extend(f"  {r.label or r.tool_name}" for r in asked)
        lines.extend(_allowing_flags(asked, tools, policy))
    if denied:
        were = "was" if len(denied) == 1 else "were"
        lines.append(f"aimon: {_calls(len(denied))} {were} denied (no flag is suggested):")
        lines.extend(f"  {r.label or r.tool_name}: {r.reason}" for r in denied)
    return "".join(line + "\n" for line in lines)


def _calls(count: int) -> str:
    return "1 tool call" if count == 1 else f"{count} tool calls"


def _allowing_flags(asked: Sequence[ApprovalRefused], tools: ToolRegistry,
                    policy: PermissionPolicy | None) -> list[str]:
    """Return the lines naming `--allowed-tools` rules (and acceptEdits) that allow `asked`."""
    from aimon_core.permission import EDIT_TOOLS, PermissionMode

    rules: list[str] = []
    unallowed: list[str] = []
    edits = [r for r in asked if r.tool_name in EDIT_TOOLS]
    by_mode = [r.label or r.tool_name for r in edits
               if _allows(policy, tools, r, mode=PermissionMode.ACCEPT_EDITS)]
    for refusal in asked:
        rule = refusal.suggested_rule
        if rule and _allows(policy, tools, refusal, rule=rule):
            rules.append(rule)
        else:
            unallowed.append(refusal.label or refusal.tool_name)
    lines: list[str] = []
    if rules:
        # One argument (the option takes one value; rules split at commas outside brackets),
        # quoted for the shell.
        flag = shlex.quote(",".join(dict.fromkeys(rules)))
        lines.append(f"aimon: to allow {'it' if len(rules) == 1 else 'them'}, run again with "
                     f"--allowed-tools {flag}")
    if by_mode:
        which = "the edits" if len(by_mode) == len(edits) else ", ".join(by_mode)
        lines.append(f"aimon: or allow {which} with --permission-mode acceptEdits")
    if unallowed:
        lines.append("aimon: no --allowed-tools rule allows only "
                     + ("this call" if len(unallowed) == 1 else "these calls")
                     + "; run aimon interactively to approve: " + ", ".join(unallowed))
    return lines


def _allows(policy: PermissionPolicy | None, tools: ToolRegistry, refusal: ApprovalRefused,
            *, rule: str = "", mode: PermissionMode | None = None) -> bool:
    """Tell whether the policy with `rule` added (or in `mode`) allows the refused call."""
    from dataclasses import replace

    from aimon_core.permission import PermissionPolicy, RuleError, Verdict, parse_rule

    tool = tools.get(refusal.tool_name)
    if policy is None or tool is None:
        return policy is None  # nothing to check against: trust the approval's rule
    try:
        rules = (replace(policy.rules, allow=(*policy.rules.allow, parse_rule(rule)))
                 if rule else policy.rules)
    except RuleError:
        return False
    trial = PermissionPolicy(rules, mode or policy.mode, policy.project_root,
                             extra_dirs=policy.extra_dirs)
    return trial.decide(tool, refusal.tool_input).verdict is Verdict.ALLOW


async def run_print(job: PrintJob, live: LiveSession, out: TextIO, err: TextIO, *,
                    policy: PermissionPolicy | None = None) -> ExecutionResult:
    """Run one turn in the live session and write its output; return the result.

    Calls refused for want of someone to ask (or denied) are summed up on stderr at the end,
    with the flags that would allow them (checked against `policy`, when given).
    Raises OutputClosedError when standard output's reader went away: the turn was stopped
    as if interrupted (and recorded so), and nothing more is written.
    """
    output, errors = _Output(out), _Output(err)  # stderr's reader may go too (`2>&1 | head`)
    stream = _StreamJson(output) if job.output_format == "stream-json" else None
    if stream is not None:
        runtime = live.runtime
        stream.write({"type": "system", "subtype": "init", "session_id": live.id,
                      "model": runtime.model, "provider": runtime.client.provider,
                      "cwd": str(live.project_root), "tools": list(runtime.tools.names()),
                      "agent": runtime.agent.name})
    if output.closed:
        raise OutputClosedError

    def stop_turn() -> None:  # nobody reads on: no more tool calls for a reader that is gone
        live.interrupt()

    output.on_closed = stop_turn
    budget = live.budget()
    if job.max_iterations is not None:
        budget = budget.with_overrides(max_iterations=job.max_iterations)
    refused: list[ApprovalRefused] = []
    unsubscribe = live.subscribe(_on_event(stream, errors, refused))
    try:
        turn = live.submit_async(job.prompt, budget=budget)
        await asyncio.wait([turn])
    finally:
        unsubscribe()
    if output.closed and turn.cancelled():
        raise OutputClosedError
    result = turn.result()
    _write_result(job, result, live, output, errors, refused)
    if refused:
        errors.write(refusal_summary(refused, live.runtime.tools, policy))
    if output.closed:
        raise OutputClosedError
    return result


def _on_event(stream: _StreamJson | None, err: _Output, refused: list[ApprovalRefused]
              ) -> Callable[[LiveSessionEvent], None]:
    """Return the subscriber that shows a turn's events (stderr, or stream-json lines)."""

    def on_event(event: LiveSessionEvent) -> None:
        if isinstance(event, ApprovalRefused):
            refused.append(event)
        if isinstance(event, Notice) and event.level == "warning":
            # Hook failures (timeout, exit 1, invalid JSON) and other warnings are never
            # silent: on stderr in every output format (stream-json also has them as events).
            err.write(f"aimon: {event.text}\n")
        if stream is not None:
            stream(event)
        elif isinstance(event, ModelRetrying):
            err.write(f"aimon: {event.reason}; retrying in {event.delay:.1f} s "
                      f"(attempt {event.attempt})\n")
        elif isinstance(event, WorkflowTaskChanged | WorkflowRunChanged):
            # `/workflow` tells each task's change as `aimon workflow run` does.
            from aimon_cli._workflow_view import progress_line

            if (line := progress_line(event)) is not None:
                err.write(f"aimon: {line}\n")
        elif isinstance(event, Compacted) and event.trigger == "auto":
            # `/compact` prints its report as the result; an automatic one goes to stderr.
            advice = f"\naimon: {event.advice}" if event.advice else ""
            err.write(f"aimon: {event.text}{advice}\n")

    return on_event


def _write_result(job: PrintJob, result: ExecutionResult, live: LiveSession, output: _Output,
                  err: _Output, refused: Sequence[ApprovalRefused]) -> None:
    """Write the turn's answer (or result object) to stdout, and its failure to stderr."""
    if job.output_format != "text":
        from aimon_core.tools import collect_artifacts

        made = collect_artifacts(result.new_messages, live.runtime.tools, live.tool_context.cwd)
        artifacts = [a.to_json(live.tool_context.project_root) for a in made]
        output.write(json.dumps(result_json(result, live.id, refused, artifacts),
                                ensure_ascii=False, default=str) + "\n")
    elif result.stop is StopCause.COMMAND_FAILED:
        err.write(f"aimon: {result.text.rstrip()}\n")
    else:
        if result.text:
            output.write(result.text.rstrip() + "\n")
        if not result.stop.ok:
            from aimon_cli._rules import auth_hint

            hint = auth_hint(result.error)
            err.write(f"aimon: {result.reason}\n" + (f"aimon: {hint}\n" if hint else ""))


def exit_code(result: ExecutionResult, live: LiveSession | None = None) -> int:
    """Return the process exit status for a result (2: a slash command that does not
    exist, a usage error as the README says)."""
    if result.stop.ok:
        return 0
    if result.stop is StopCause.INTERRUPTED:
        return 130
    if result.stop is StopCause.COMMAND_FAILED and live is not None and live.commands is not None:
        from aimon_core.command import parse_slash

        name = result.reason.removeprefix("/")
        if parse_slash(result.reason) is not None and live.commands.get(name) is None:
            return 2
    return 1
