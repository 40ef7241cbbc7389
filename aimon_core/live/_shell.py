"""`!command`: a shell command the person runs in the session, without the model.

It runs as the Bash tool runs (the same shell, environment, limits and redaction), under the
same permission rules except that the person's typing is the approval: a deny rule (or plan
mode, for a command that is not read-only) refuses it, anything that would ask runs. The
command and its output join the transcript as one user message in Claude Code's
`<bash-input>` / `<bash-stdout>` form, which the next prompt carries to the model.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from aimon_core.agent import (
    AgentEvent,
    ApprovalRefused,
    ExecutionResult,
    StopCause,
    ToolCallFinished,
    ToolCallOutput,
    ToolCallStarted,
)
from aimon_core.llm import Message, TextBlock, Usage
from aimon_core.permission import PermissionPolicy, Verdict
from aimon_core.tools import (
    LiveOutput,
    Tool,
    ToolContext,
    ToolResult,
    builtin_tools,
    execute_tool,
)

SHELL_INPUT = "<bash-input>"
# What the model gets of a command's output at most (the Bash tool's own cap is larger).
_OUTPUT_CHARS = 30_000


def is_shell_record(message: Message) -> bool:
    """Tell whether `message` records a `!command` (it leads the next prompt, as tool
    results do, rather than being a prompt that got no answer)."""
    first = message.content[0] if message.content else None
    return message.role == "user" and isinstance(first, TextBlock) and \
        first.text.startswith(SHELL_INPUT)


def shell_record(command: str, output: str, *, interrupted: bool = False) -> Message:
    """Return the transcript message of a command the person ran and what it printed."""
    note = "\n(interrupted by the user)" if interrupted else ""
    text = (f"{SHELL_INPUT}{command}</bash-input>\n"
            f"<bash-stdout>{output[:_OUTPUT_CHARS]}{note}</bash-stdout>")
    return Message(role="user", content=(TextBlock(text=text),))


@dataclass(frozen=True, slots=True, kw_only=True)
class ShellRun:
    """What a `!command` turn is given."""

    command: str
    tool_use_id: str
    context: ToolContext
    policy: PermissionPolicy | None
    emit: Callable[[AgentEvent], None]
    persist: Callable[[Message], None]


async def run_shell(run: ShellRun) -> ExecutionResult:
    """Run the command as a Bash call, tell it as one, and record it; return the outcome."""
    bash = next(tool for tool in builtin_tools() if tool.name == "Bash")
    tool_input = {"command": run.command, "description": "run by the user (!)"}
    label = f"Bash({' '.join(run.command.split())})"
    run.emit(ToolCallStarted(tool_use_id=run.tool_use_id, name="Bash", input=tool_input,
                             label=label))
    started = time.monotonic()
    refused = _refusal(run, bash, tool_input)
    if refused is not None:  # told as a call a rule refused (✗), as the model's are
        run.emit(ApprovalRefused(tool_use_id=run.tool_use_id, tool_name="Bash",
                                 tool_input=tool_input, label=label, reason=refused,
                                 denied=True, suggested_rule=""))
        result = ToolResult.error(f"Not run: {refused}.")
        _finished(run, tool_input, label, result, started)
        return _outcome(StopCause.COMMAND_FAILED, f"!{run.command} was not run: {refused}",
                        started)
    output = LiveOutput(run.context.secrets, lambda text: run.emit(
        ToolCallOutput(tool_use_id=run.tool_use_id, text=text)))
    try:
        result = await execute_tool(bash, tool_input, replace(run.context, on_output=output))
    except asyncio.CancelledError:
        output.flush()
        run.persist(shell_record(run.command, output.tail, interrupted=True))
        kept = f"\n\nIts last lines of output:\n{output.tail}" if output.tail else ""
        _finished(run, tool_input, label, ToolResult.error(f"Interrupted.{kept}"), started)
        raise
    output.flush()
    run.persist(shell_record(run.command, result.text))
    _finished(run, tool_input, label, result, started)
    if result.is_error:
        return _outcome(StopCause.COMMAND_FAILED, f"!{run.command} failed", started,
                        text=result.text)
    return _outcome(StopCause.COMMAND, f"!{run.command}", started, text=result.text)


def _refusal(run: ShellRun, bash: Tool, tool_input: dict[str, str]) -> str | None:
    """Return why the rules refuse the command (a deny rule, plan mode), else None."""
    if run.policy is None:
        return None
    decision = run.policy.decide(bash, tool_input, cwd=run.context.cwd)
    return decision.reason if decision.verdict is Verdict.DENY else None


def _finished(run: ShellRun, tool_input: dict[str, str], label: str, result: ToolResult,
              started: float) -> None:
    run.emit(ToolCallFinished(tool_use_id=run.tool_use_id, name="Bash", input=tool_input,
                              result=result, duration_s=time.monotonic() - started,
                              label=label))


def interrupted(command: str, started: float) -> ExecutionResult:
    """Return the outcome of a `!command` the person interrupted."""
    return _outcome(StopCause.INTERRUPTED, f"!{command} was interrupted", started)


def _outcome(stop: StopCause, reason: str, started: float, text: str = "") -> ExecutionResult:
    return ExecutionResult(stop=stop, reason=reason, text=text, new_messages=(), usage=Usage(),
                           cost_usd=0.0, iterations=0, tool_calls=1,
                           duration_s=time.monotonic() - started)
