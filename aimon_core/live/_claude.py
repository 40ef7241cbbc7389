"""Claude Code's side of a live session: its transcript shape, `CLAUDE_ENV_FILE`, notifications.

Hooks and tools written for Claude Code read a transcript of `{"type": "user" | "assistant",
"message": {...}}` lines (Stop hooks with `jq`, `ccusage` for token counts). aimon keeps its
own record and writes such a transcript beside it, in the session's folder; that file is the
`transcript_path` hooks get.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aimon_core import __version__
from aimon_core._atomic import private_dir, write_all
from aimon_core.agent import AgentRuntime, AssistantMessageCompleted, Notice
from aimon_core.hook import HookDispatcher, HookEvent, HookResult, feedback_reminder
from aimon_core.llm import (
    ContentBlock,
    ImageBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from aimon_core.session import SessionRecord
from aimon_core.tools import ToolContext

log = logging.getLogger(__name__)

CLAUDE_TRANSCRIPT_SUFFIX = ".claude.jsonl"
IDLE_NOTICE_SECONDS = 60.0
_ENV_FILE = "claude-env.sh"
# The writer's version, as Claude Code writes its own (readers check it is x.y.z).
_VERSION = __version__


def claude_transcript_path(folder: Path, session_id: str) -> Path:
    """Return where the Claude Code-shaped transcript of a session is written."""
    return folder / f"{session_id}{CLAUDE_TRANSCRIPT_SUFFIX}"


def block_json(block: ContentBlock) -> dict[str, Any]:
    """Return a content block as Anthropic's Messages API writes it (Claude Code's shape)."""
    match block:
        case TextBlock():
            return {"type": "text", "text": block.text}
        case ToolUseBlock():
            return {"type": "tool_use", "id": block.id, "name": block.name,
                    "input": dict(block.input)}
        case ToolResultBlock():
            return {"type": "tool_result", "tool_use_id": block.tool_use_id,
                    "content": [block_json(b) for b in block.content],
                    "is_error": block.is_error}
        case ThinkingBlock():
            return {"type": "thinking", "thinking": block.thinking,
                    "signature": block.signature or ""}
        case ImageBlock():
            # The picture stays in aimon's record; a reader of this file needs only its place.
            return {"type": "text", "text": f"[image {block.media_type}]"}
    return {"type": "text", "text": f"[{type(block).__name__}]"}


def usage_json(usage: Usage) -> dict[str, int]:
    """Return token counts under the names Claude Code's transcripts (and ccusage) use."""
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "output_tokens": usage.output_tokens,
    }


@dataclass(slots=True, kw_only=True)
class ClaudeTranscript:
    """Appends each message of a session as one Claude Code transcript line.

    Write failures are logged and never break the turn: aimon's own record is the one that
    must not lose anything.
    """

    path: Path
    session_id: str
    cwd: Path
    model: str
    _parent: str | None = None
    _usage: tuple[Message, Usage] | None = None

    def note_usage(self, message: Message, usage: Usage) -> None:
        """Remember the usage of a response; it goes on that message's line."""
        self._usage = (message, usage)

    def append(self, message: Message, *, usage: Usage | None = None) -> None:
        """Write one message line."""
        if usage is None and self._usage is not None and self._usage[0] == message:
            usage = self._usage[1]
        line = self.line(message, usage)
        try:
            data = (json.dumps(line, ensure_ascii=False) + "\n").encode()
            fd = self._open()
            try:
                write_all(fd, data)
            finally:
                os.close(fd)
        except (OSError, UnicodeError) as exc:  # UnicodeError: a lone surrogate in a text
            log.warning("cannot write the Claude Code transcript %s: %s", self.path, exc)
            return
        self._parent = line["uuid"]

    def _open(self) -> int:
        """Open the file to append; its folder is made (as private as the session's) only
        when it is missing: this runs on the session's writer thread, once a message."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
        try:
            return os.open(self.path, flags, 0o600)
        except FileNotFoundError:
            private_dir(self.path.parent)
            return os.open(self.path, flags, 0o600)

    def backfill(self, messages: tuple[Message, ...]) -> None:
        """Continue a resumed session's file (its last uuid is the next parent), or write its
        earlier messages when it has no file yet."""
        if self.path.exists():
            self._parent = _last_uuid(self.path)
            return
        for message in messages:
            self.append(message, usage=Usage())

    def line(self, message: Message, usage: Usage | None) -> dict[str, Any]:
        """Return the transcript line of `message` (a new uuid, chained to the last one)."""
        content = [block_json(block) for block in message.content]
        body: dict[str, Any] = {"role": message.role, "content": content}
        line: dict[str, Any] = {
            "parentUuid": self._parent, "isSidechain": False, "userType": "external",
            "cwd": str(self.cwd), "sessionId": self.session_id, "version": _VERSION,
            "type": message.role, "uuid": str(uuid.uuid4()),
            "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace(
                "+00:00", "Z"),
        }
        if message.role == "assistant":
            body = {"id": f"msg_{uuid.uuid4().hex}", "type": "message", "model": self.model,
                    **body, "usage": usage_json(usage or Usage())}
            line["requestId"] = f"req_{uuid.uuid4().hex}"
        line["message"] = body
        return line


def _last_uuid(path: Path) -> str | None:
    """Return the uuid of the last whole line of a transcript (None if unreadable)."""
    try:
        with path.open("rb") as file:
            file.seek(max(0, file.seek(0, os.SEEK_END) - 256 * 1024))
            tail = file.read().decode("utf-8", "replace")
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        with contextlib.suppress(ValueError):
            value = json.loads(line).get("uuid")
            return value if isinstance(value, str) else None
    return None


async def sourced_env(path: Path, cwd: Path) -> dict[str, str]:
    """Return the variables a `CLAUDE_ENV_FILE` sets or changes, by sourcing it in bash.

    Claude Code sources the file before each Bash command; sourcing it once after the
    SessionStart hooks and passing the result to every later command gives the same values
    for the usual `export NAME=value` lines. A file that fails to source changes nothing.
    """
    script = 'env -0; printf "\\0--aimon--\\0"; set -a; . "$1" >/dev/null 2>&1; env -0'
    try:
        proc = await asyncio.create_subprocess_exec(
            "/bin/bash", "-c", script, "bash", str(path), cwd=cwd,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            stdin=asyncio.subprocess.DEVNULL)
        out, _ = await asyncio.wait_for(proc.communicate(), 10)
    except (OSError, TimeoutError) as exc:
        log.warning("cannot read CLAUDE_ENV_FILE %s: %s", path, exc)
        return {}
    before, _, after = out.decode("utf-8", "replace").partition("\0--aimon--\0")

    def parse(text: str) -> dict[str, str]:
        pairs = (item.partition("=") for item in text.split("\0") if "=" in item)
        return {name: value for name, _, value in pairs}

    old, new = parse(before), parse(after)
    return {name: value for name, value in new.items()
            if old.get(name) != value and name not in ("_", "SHLVL", "PWD", "OLDPWD")}


class ClaudeSide:
    """What a live session does for Claude Code compatibility, in one owner of its tasks.

    Args:
        transcript: None when the session store keeps no files (nothing to write beside).
        publish: puts an event (a Notice) on the session's stream.
        shell_env: the variables every later Bash command gets (updated from
            `CLAUDE_ENV_FILE`); None when the shell keeps no such mapping.
    """

    def __init__(self, *, hooks: HookDispatcher, folder: Path, model: str,
                 transcript: ClaudeTranscript | None, publish: Callable[[Any], None],
                 shell_env: dict[str, str] | None) -> None:
        self.hooks = hooks
        self.folder = folder
        self.transcript = transcript
        self.model = model
        self.idle_after = IDLE_NOTICE_SECONDS
        self._publish = publish
        self._shell_env = shell_env
        self._tasks: set[asyncio.Task[None]] = set()
        self._idle: asyncio.Task[None] | None = None
        self.opening: list[Notice] = []

    def on_event(self, event: object) -> None:
        """Note the usage of each model response for its transcript line."""
        if isinstance(event, AssistantMessageCompleted) and self.transcript is not None:
            self.transcript.note_usage(event.message, event.usage)

    def append(self, message: Message) -> None:
        """Write a stored message to the Claude Code transcript."""
        if self.transcript is not None:
            self.transcript.append(message)

    def backfill(self, messages: tuple[Message, ...]) -> None:
        """Write a resumed session's messages when it has no Claude Code transcript yet."""
        if self.transcript is not None:
            self.transcript.backfill(messages)

    @classmethod
    def for_session(cls, runtime: AgentRuntime, record: SessionRecord, context: ToolContext,
                    folder: Path, *, stored: bool, publish: Callable[[Any], None]
                    ) -> ClaudeSide:
        """Return the Claude Code side of a new live session, with its hook dispatcher.

        `stored`: the store keeps files, so a transcript is written in `folder`.
        """
        path = claude_transcript_path(folder, record.id) if stored else None
        hooks = HookDispatcher(
            runtime.hooks, session_id=record.id, cwd=context.cwd,
            transcript_path=None if path is None else str(path),
            permission_mode=runtime.permission_mode,
            notice=lambda text, level: publish(Notice(text=text, level=level)))
        transcript = None if path is None else ClaudeTranscript(
            path=path, session_id=record.id, cwd=context.cwd, model=runtime.model)
        side = cls(hooks=hooks, folder=folder, model=runtime.model, transcript=transcript,
                   publish=publish, shell_env=shell_env_of(context.shell))
        side.backfill(record.transcript.messages)
        return side

    async def session_hook(self, event: HookEvent, *, source: str | None,
                           reason: str | None) -> str:
        """Fire SessionStart (with `model` and `CLAUDE_ENV_FILE`) or SessionEnd.

        Their errors and messages are published as warnings; return the context they add
        for the model, as a reminder ("" for none).
        """
        if not self.hooks.active(event, source or reason):
            return ""
        if event is HookEvent.ON_SESSION_START:
            result = await self._session_start(source or "startup")
        else:
            from aimon_core.hook import SessionEndInput  # the input types load when one fires

            result = await self.hooks.fire(SessionEndInput(reason=reason or "other"))
        for note in (*result.errors, result.system_message):
            if note:
                warning = Notice(text=note, level="warning")
                if event is HookEvent.ON_SESSION_START:
                    # Fired while the session opens, before anyone could listen: every
                    # subscriber hears these first, so a hook error never goes unseen.
                    self.opening.append(warning)
                self._publish(warning)
        return feedback_reminder(result.additional_context)

    async def _session_start(self, source: str) -> HookResult:
        from aimon_core.hook import SessionStartInput

        env_file = self.folder / _ENV_FILE
        with contextlib.suppress(OSError):
            env_file.parent.mkdir(parents=True, exist_ok=True)
            env_file.touch()
        result = await self.hooks.fire(SessionStartInput(source=source, model=self.model),
                                       env={"CLAUDE_ENV_FILE": str(env_file)})
        if self._shell_env is not None and env_file.is_file() and env_file.stat().st_size:
            self._shell_env.update(await sourced_env(env_file, self.hooks.cwd))
        return result

    def approval_requested(self, tool_name: str) -> None:
        """Fire Notification: the agent waits for the user's approval."""
        self._notify("permission_prompt", f"aimon needs your permission to use {tool_name}")

    def turn_started(self) -> None:
        """Stop waiting for the user to be idle."""
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    def turn_finished(self, someone_at_prompt: bool) -> None:
        """Start the idle clock: Notification after `idle_after` s without a new prompt."""
        self.turn_started()
        if someone_at_prompt and self.hooks.active(HookEvent.NOTIFICATION, "idle_prompt"):
            self._idle = asyncio.get_running_loop().create_task(self._idle_notice())

    async def _idle_notice(self) -> None:
        await asyncio.sleep(self.idle_after)
        self._idle = None
        # A task of its own, so a new prompt no longer cancels a notice already sent.
        self._notify("idle_prompt", "aimon is waiting for your input")

    def _notify(self, kind: str, message: str) -> None:
        if not self.hooks.active(HookEvent.NOTIFICATION, kind):
            return
        # The question is shown at once; the hook (a desktop notice) runs beside it.
        task = asyncio.get_running_loop().create_task(self._fire_notification(kind, message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _fire_notification(self, kind: str, message: str) -> None:
        from aimon_core.hook import NotificationInput

        result = await self.hooks.fire(NotificationInput(message=message,
                                                         notification_type=kind))
        for note in result.errors:
            self._publish(Notice(text=f"hook error: {note}", level="warning"))

    async def aclose(self, drain_within: float = 30.0) -> None:
        """Stop the idle clock, finish notifications and let async hooks end."""
        self.turn_started()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        registry = self.hooks.registry
        if registry is not None:
            await registry.drain(drain_within)


def shell_env_of(shell: object) -> dict[str, str] | None:
    """Return the mutable variables a shell adds to every command, if it keeps them."""
    env = getattr(shell, "env", None)
    return env if isinstance(env, dict) else None

