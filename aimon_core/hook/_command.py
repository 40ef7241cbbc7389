"""Command hooks: run a shell command with Claude Code's protocol and read its answer.

The command runs as `/bin/sh -c COMMAND` in the project folder, in its own process group,
with the hook input as JSON on stdin and `AIMON_PROJECT_DIR` / `CLAUDE_PROJECT_DIR` set.
Exit 0 succeeds (stdout may be a JSON answer), exit 2 blocks (stderr is the reason), any
other exit is a non-blocking error for the user.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aimon_core.hook._config import CommandHookSpec
from aimon_core.hook._lifecycle import HookEvent
from aimon_core.hook._result import Flow, HookResult, PermissionDecision
from aimon_core.shell import kill_process_group, spawn_process, wait_exit

if TYPE_CHECKING:
    from aimon_core.hook._events import HookInput

log = logging.getLogger(__name__)

OUTPUT_LIMIT = 64 * 1024
_DRAIN_SECONDS = 0.5
_ERROR_DETAIL = 2000
_LABEL_LENGTH = 80

_PERMISSION_EVENTS = (HookEvent.PRE_TOOL, HookEvent.PERMISSION_REQUEST)
# Events that happen anyway: a hook's block is reported to the user, not obeyed.
_UNBLOCKABLE = frozenset({
    HookEvent.ON_SESSION_START, HookEvent.ON_SESSION_END, HookEvent.POST_COMPACT,
    HookEvent.SUBAGENT_START, HookEvent.PERMISSION_DENIED, HookEvent.NOTIFICATION,
})
# Events whose plain (non-JSON) stdout becomes context for the model, as in Claude Code.
_PLAIN_STDOUT_IS_CONTEXT = (HookEvent.ON_START, HookEvent.ON_SESSION_START)
_PERMISSIONS = {decision.value: decision for decision in PermissionDecision}


def hook_label(command: str) -> str:
    """Return how a command hook is named in messages: its command, shortened."""
    line = " ".join(command.split())
    return line if len(line) <= _LABEL_LENGTH else line[: _LABEL_LENGTH - 3] + "..."


class _Capture:
    """The first `limit` bytes of a stream; the rest is read and dropped."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.cut = False

    async def pump(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        while chunk := await stream.read(65536):
            room = self.limit - len(self.data)
            if room > 0:
                self.data += chunk[:room]
            if len(chunk) > room:
                self.cut = True

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


async def _feed(stdin: asyncio.StreamWriter | None, data: bytes) -> None:
    if stdin is None:
        return
    # A hook that exits without reading its input is fine.
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(data)
        await stdin.drain()
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.close()


def _close_transport(proc: asyncio.subprocess.Process) -> None:
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


async def run_command_hook(
    spec: CommandHookSpec,
    hook_input: HookInput,
    *,
    project_dir: Path | None = None,
    output_limit: int = OUTPUT_LIMIT,
    kill_grace: float = 1.0,
    env: Mapping[str, str] | None = None,
) -> HookResult:
    """Run one command hook and return its answer; never raises except on cancellation.

    Args:
        project_dir: where the command runs and what `AIMON_PROJECT_DIR` names
            (default: the input's cwd).
        kill_grace: seconds between SIGTERM and SIGKILL when the hook is stopped.
        env: more environment variables (`CLAUDE_ENV_FILE` for SessionStart hooks).
    """
    label = hook_label(spec.command)
    root = project_dir or hook_input.cwd
    env = {**os.environ, **(env or {}), "AIMON_PROJECT_DIR": str(root),
           "CLAUDE_PROJECT_DIR": str(root)}
    try:
        # wait_exit is told of the exit (no polling); it does not wait for the pipes, which
        # a child the hook left running may hold open.
        proc = await spawn_process(
            "/bin/sh", "-c", spec.command, cwd=root, env=env, stdin=asyncio.subprocess.PIPE
        )
    except OSError as exc:
        return _error(label, f"could not be started: {exc}")
    out, err = _Capture(output_limit), _Capture(output_limit)
    tasks = [
        asyncio.create_task(_feed(proc.stdin, hook_input.to_json().encode())),
        asyncio.create_task(out.pump(proc.stdout)),
        asyncio.create_task(err.pump(proc.stderr)),
    ]
    timed_out = False
    try:
        try:
            await asyncio.wait_for(wait_exit(proc), spec.timeout)
        except TimeoutError:
            timed_out = True
            await kill_process_group(proc, kill_grace)
        _, pending = await asyncio.wait(tasks, timeout=_DRAIN_SECONDS)
        if pending:  # a child the hook left running holds the pipes
            await kill_process_group(proc, kill_grace)
            await asyncio.wait(tasks, timeout=_DRAIN_SECONDS)
    except asyncio.CancelledError:
        await kill_process_group(proc, kill_grace)
        raise
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        _close_transport(proc)
    if timed_out:
        return _error(label, f"timed out after {spec.timeout:g} s")
    for capture, name in ((out, "stdout"), (err, "stderr")):
        if capture.cut:
            log.warning("hook %r printed more than %d bytes on %s; the rest was dropped",
                        label, output_limit, name)
    code = proc.returncode
    assert code is not None
    return interpret_output(hook_input.event, code, out.text(), err.text(), label)


def _error(label: str, message: str) -> HookResult:
    return HookResult(errors=(f"hook {label!r} {message}",), source=label)


def _detail(text: str) -> str:
    # The tail: a script's last lines say why it failed (a traceback ends with the error).
    text = text.strip()
    return text if len(text) <= _ERROR_DETAIL else "... " + text[-_ERROR_DETAIL:]


def interpret_output(
    event: HookEvent, exit_code: int, stdout: str, stderr: str, label: str
) -> HookResult:
    """Turn a finished hook command's exit code and output into its answer."""
    if exit_code == 0:
        if stderr.strip():
            log.debug("hook %r wrote to stderr: %s", label, stderr.strip())
        return _success(event, stdout, label)
    if exit_code == 2:
        reason = stderr.strip() or f"blocked by hook {label!r} (exit code 2, no reason given)"
        return _block(event, reason, label)
    if exit_code < 0:
        return _error(label, f"was killed by signal {-exit_code}")
    detail = _detail(stderr)
    return _error(label, f"failed with exit code {exit_code}" + (f": {detail}" if detail else ""))


def _block(event: HookEvent, reason: str, label: str) -> HookResult:
    if event in _UNBLOCKABLE:
        return _error(label, f"tried to block {event.claude_name}, which cannot be blocked: "
                             f"{_detail(reason)}")
    permission = PermissionDecision.DENY if event in _PERMISSION_EVENTS else None
    return HookResult(permission=permission, flow=Flow.BLOCK, feedback=reason, source=label)


def _success(event: HookEvent, stdout: str, label: str) -> HookResult:
    text = stdout.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            return _error(label, f"printed invalid JSON ({exc}); its output was ignored")
        return _JSONAnswer(event, label).read(data)
    if text and event in _PLAIN_STDOUT_IS_CONTEXT:
        return HookResult(additional_context=text, source=label)
    if text:
        log.debug("hook %r printed: %s", label, text)
    return HookResult(source=label)


class _JSONAnswer:
    """Reads Claude Code's hook JSON output; wrong fields become errors and are ignored."""

    def __init__(self, event: HookEvent, label: str) -> None:
        self.event = event
        self.label = label
        self.errors: list[str] = []
        self.permission: PermissionDecision | None = None
        self.flow = Flow.CONTINUE
        self.feedback: list[str] = []
        self.messages: list[str] = []
        self.updated_input: Mapping[str, Any] | None = None

    def _text(self, data: Mapping[str, Any], key: str) -> str:
        value = data.get(key)
        if value is None or isinstance(value, str):
            return value or ""
        self.errors.append(f"hook {self.label!r} printed a non-string {key!r}; it was ignored")
        return ""

    def _decide(self, permission: PermissionDecision) -> None:
        ranks = list(PermissionDecision)  # ALLOW, ASK, DENY: the stricter answer wins
        if self.permission is None or ranks.index(permission) > ranks.index(self.permission):
            self.permission = permission

    def read(self, data: dict[str, Any]) -> HookResult:
        if data.get("continue", True) is False:
            self.flow = Flow.STOP
        self.messages.append(self._text(data, "systemMessage"))
        self._read_decision(data)
        context = ""
        specific = data.get("hookSpecificOutput")
        if isinstance(specific, Mapping):
            context = self._text(specific, "additionalContext")
            if self.event is HookEvent.PRE_TOOL:
                self._read_pre_tool(specific)
            elif self.event is HookEvent.PERMISSION_REQUEST:
                self._read_permission_request(specific)
        elif specific is not None:
            self.errors.append(f"hook {self.label!r} printed a non-object 'hookSpecificOutput'")
        if self.flow is Flow.BLOCK and self.event in _UNBLOCKABLE:
            self.flow = Flow.CONTINUE
            self.errors.append(f"hook {self.label!r} tried to block {self.event.claude_name}, "
                               "which cannot be blocked")
        return HookResult(
            permission=self.permission,
            flow=self.flow,
            feedback="\n".join(part for part in self.feedback if part),
            additional_context=context,
            system_message="\n".join(part for part in self.messages if part),
            stop_reason=self._text(data, "stopReason") if self.flow is Flow.STOP else "",
            updated_input=self.updated_input,
            errors=tuple(self.errors),
            source=self.label,
        )

    def _read_decision(self, data: Mapping[str, Any]) -> None:
        decision = data.get("decision")
        reason = self._text(data, "reason")
        if decision == "block":
            if self.event in _PERMISSION_EVENTS:
                self._decide(PermissionDecision.DENY)
            if self.flow is Flow.CONTINUE:
                self.flow = Flow.BLOCK
            self.feedback.append(reason or f"blocked by hook {self.label!r}")
        elif decision == "approve":
            if self.event in _PERMISSION_EVENTS:
                self._decide(PermissionDecision.ALLOW)
                self.messages.append(reason)
        elif decision is not None:
            self.errors.append(f"hook {self.label!r} printed an unknown decision {decision!r} "
                               "(expected 'block' or 'approve'); it was ignored")

    def _read_updated_input(self, data: Mapping[str, Any]) -> None:
        updated = data.get("updatedInput")
        if isinstance(updated, Mapping):
            self.updated_input = dict(updated)
        elif updated is not None:
            self.errors.append(f"hook {self.label!r} printed a non-object 'updatedInput'; "
                               "it was ignored")

    def _read_pre_tool(self, specific: Mapping[str, Any]) -> None:
        value = specific.get("permissionDecision")
        reason = self._text(specific, "permissionDecisionReason")
        permission = _PERMISSIONS.get(value) if isinstance(value, str) else None
        if permission is not None:
            self._decide(permission)
            if permission is PermissionDecision.DENY:
                self.feedback.append(reason or f"denied by hook {self.label!r}")
            else:
                self.messages.append(reason)
        elif value is not None:
            self.errors.append(f"hook {self.label!r} printed an unknown permissionDecision "
                               f"{value!r} (expected 'allow', 'deny' or 'ask'); it was ignored")
        self._read_updated_input(specific)

    def _read_permission_request(self, specific: Mapping[str, Any]) -> None:
        decision = specific.get("decision")
        if decision is None:
            return
        if not isinstance(decision, Mapping):
            self.errors.append(f"hook {self.label!r} printed a non-object 'decision'")
            return
        behavior = decision.get("behavior")
        if behavior == "allow":
            self._decide(PermissionDecision.ALLOW)
            self._read_updated_input(decision)
        elif behavior == "deny":
            self._decide(PermissionDecision.DENY)
            self.feedback.append(self._text(decision, "message")
                                 or f"denied by hook {self.label!r}")
            if decision.get("interrupt") is True:
                self.flow = Flow.STOP
        else:
            self.errors.append(f"hook {self.label!r} printed an unknown decision.behavior "
                               f"{behavior!r} (expected 'allow' or 'deny'); it was ignored")
