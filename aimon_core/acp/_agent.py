"""aimon as an ACP agent: `aimon acp` speaks the Agent Client Protocol on stdin and stdout.

Built on the `agent-client-protocol` package (imported here and nowhere else). The process is
an application scope (`Application`): `session/new` and `session/load` open live sessions on
its runtimes, `session/prompt` runs a turn and streams it as `session/update`s, and
`session/cancel` interrupts it. Approval questions become `session/request_permission`
(allow once, always for this session, always for this agent, reject); the permission modes are
the session modes; the slash commands are advertised; file reads and edits go through the
editor when it offers its file system.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from acp import PROTOCOL_VERSION, RequestError, schema
from acp.helpers import update_available_commands, update_current_mode

from aimon_core.acp._fs import EditorFileSystem
from aimon_core.acp._updates import replay_updates, started_update, stop_reason, updates_of
from aimon_core.agent import (
    ApprovalAnswer,
    ApprovalRequest,
    ApprovalRequested,
    ApprovalScope,
    ApprovalWithdrawn,
)
from aimon_core.permission import PermissionMode

if TYPE_CHECKING:
    from aimon_core.live import LiveSession, LiveSessionEvent
    from aimon_core.runtime import AgentAssembly, Application, RuntimeFlags

log = logging.getLogger(__name__)

# The permission options of a question: (option id, name, kind, the answer it gives).
_OPTIONS: tuple[tuple[str, str, schema.PermissionOptionKind, ApprovalAnswer], ...] = (
    ("allow_once", "Allow once", "allow_once", ApprovalAnswer(allowed=True)),
    ("allow_session", "Always for this session", "allow_always",
     ApprovalAnswer(allowed=True, scope=ApprovalScope.SESSION)),
    ("allow_agent", "Always for this agent in this project", "allow_always",
     ApprovalAnswer(allowed=True, scope=ApprovalScope.AGENT)),
    ("reject", "Reject", "reject_once",
     ApprovalAnswer(allowed=False, reason="rejected in the editor")),
)
_MODES = {
    PermissionMode.DEFAULT: ("Default", "Ask before anything risky"),
    PermissionMode.ACCEPT_EDITS: ("Accept edits", "Edits in the project without asking"),
    PermissionMode.PLAN: ("Plan", "Read-only: look and plan, change nothing"),
    PermissionMode.BYPASS: ("Bypass permissions", "Everything but deny rules, unasked"),
}


@dataclass(slots=True, kw_only=True)
class _Open:
    """One ACP session: its live session, runtime, and the updates on their way out."""

    live: LiveSession
    assembly: AgentAssembly
    outbox: asyncio.Queue[Any] = field(default_factory=asyncio.Queue)
    sender: asyncio.Task[None] | None = None
    questions: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    unsubscribe: Any = None


class AimonAgent:
    """The ACP Agent: every method the protocol calls, on one application."""

    def __init__(self, app: Application, flags: RuntimeFlags) -> None:
        self._app = app
        self._flags = flags
        self._conn: Any = None
        self._capabilities: schema.ClientCapabilities | None = None
        self._sessions: dict[str, _Open] = {}

    def on_connect(self, conn: Any) -> None:
        """Keep the connection to the client (to send updates and questions)."""
        self._conn = conn

    async def initialize(self, protocol_version: int,
                         client_capabilities: schema.ClientCapabilities | None = None,
                         client_info: schema.Implementation | None = None,
                         **kwargs: Any) -> schema.InitializeResponse:
        """Agree on the protocol and say what aimon offers."""
        from aimon_core import __version__

        self._capabilities = client_capabilities
        return schema.InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=schema.AgentCapabilities(
                load_session=True,
                prompt_capabilities=schema.PromptCapabilities(embedded_context=True)),
            agent_info=schema.Implementation(name="aimon", title="aimon", version=__version__))

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        """Nothing to do: the model's credentials come from the environment and settings."""
        return None

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None,
                          **kwargs: Any) -> schema.NewSessionResponse:
        """Open a new session in `cwd`."""
        opened = await self._open(cwd, None)
        return schema.NewSessionResponse(session_id=str(opened.live.id),
                                         modes=self._modes(opened))

    async def load_session(self, cwd: str, session_id: str,
                           mcp_servers: list[Any] | None = None,
                           **kwargs: Any) -> schema.LoadSessionResponse:
        """Open a stored session by id and replay its conversation as updates."""
        if session_id in self._sessions:
            opened = self._sessions[session_id]
        else:
            opened = await self._open(cwd, session_id)
        for update in replay_updates(opened.live.record.transcript.messages):
            await self._conn.session_update(session_id=session_id, update=update)
        return schema.LoadSessionResponse(modes=self._modes(opened))

    async def _open(self, cwd: str, session_id: str | None) -> _Open:
        from aimon_core.runtime import RuntimeSetupError
        from aimon_core.session import SessionError

        registry = self._app.runtimes(Path(cwd), self._flags, on_notice=log.info)
        try:
            assembly = await registry.get(await asyncio.to_thread(self._agent_of, session_id))
            live = await assembly.open_session(self._app.store, session_id=session_id,
                                               holder="aimon acp")
        except (RuntimeSetupError, SessionError) as exc:
            raise RequestError.invalid_params({"message": str(exc)}) from None
        self._editor_files(live)
        opened = _Open(live=live, assembly=assembly)
        sid = str(live.id)
        opened.sender = asyncio.get_running_loop().create_task(self._send(sid, opened))
        opened.unsubscribe = live.subscribe(lambda event: self._on_event(sid, opened, event),
                                            answers=True)
        self._sessions[sid] = opened
        await self._conn.session_update(session_id=sid, update=self._commands(opened))
        return opened

    def _agent_of(self, session_id: str | None) -> str | None:
        from aimon_core.session import SessionError, parse_session_id

        if session_id is None or self._flags.agent is not None:
            return None
        try:
            ref = self._app.store.records.load(parse_session_id(session_id)).agent_ref
        except (ValueError, SessionError):
            return None
        return ref.removeprefix("agent:").split(":")[0] or None

    def _editor_files(self, live: LiveSession) -> None:
        """Send the file tools' reads and writes through the editor, where it offers them."""
        fs = self._capabilities.fs if self._capabilities is not None else None
        read, write = bool(fs and fs.read_text_file), bool(fs and fs.write_text_file)
        if read or write:
            context = live.tool_context
            live.tool_context = dataclasses.replace(context, fs=EditorFileSystem(
                context.fs, self._conn, str(live.id), read=read, write=write))

    def _modes(self, opened: _Open) -> schema.SessionModeState:
        return schema.SessionModeState(
            current_mode_id=opened.assembly.policy.mode.value,
            available_modes=[schema.SessionMode(id=mode.value, name=name, description=about)
                             for mode, (name, about) in _MODES.items()])

    def _commands(self, opened: _Open) -> Any:
        commands = opened.live.commands
        listed = [] if commands is None else [*commands.system(), *commands.custom()]
        return update_available_commands(
            schema.AvailableCommand(
                name=command.name, description=command.description,
                input=schema.AvailableCommandInput(root=schema.UnstructuredCommandInput(
                    hint=command.usage)) if command.usage else None)
            for command in listed)

    async def set_session_mode(self, session_id: str, mode_id: str,
                               **kwargs: Any) -> schema.SetSessionModeResponse:
        """Switch the permission mode (of the session's agent runtime)."""
        from aimon_core.permission import PermissionModeError

        opened = self._session(session_id)
        try:
            opened.assembly.policy.set_mode(PermissionMode(mode_id))
        except (ValueError, PermissionModeError) as exc:
            raise RequestError.invalid_params({"message": str(exc)}) from None
        opened.outbox.put_nowait(update_current_mode(opened.assembly.policy.mode.value))
        return schema.SetSessionModeResponse()

    def _session(self, session_id: str) -> _Open:
        opened = self._sessions.get(session_id)
        if opened is None:
            raise RequestError.invalid_params({"message": f"no session {session_id!r}"})
        return opened

    async def prompt(self, prompt: list[Any], session_id: str,
                     **kwargs: Any) -> schema.PromptResponse:
        """Run a turn; its events stream as updates; answer how it ended."""
        opened = self._session(session_id)
        turn = opened.live.submit_async(_prompt_text(prompt))
        try:
            result = await asyncio.shield(turn)
        except asyncio.CancelledError:
            if not turn.cancelled():
                raise
            await opened.outbox.join()
            return schema.PromptResponse(stop_reason="cancelled")
        await opened.outbox.join()  # every update of the turn is out before the answer
        return schema.PromptResponse(stop_reason=stop_reason(result.stop))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """Interrupt the session's running turn (its questions are withdrawn)."""
        opened = self._sessions.get(session_id)
        if opened is not None:
            opened.live.interrupt()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """aimon adds no methods to ACP."""
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Ignore extension notifications."""

    # -- the session's events

    def _on_event(self, session_id: str, opened: _Open, event: LiveSessionEvent) -> None:
        match event:
            case ApprovalRequested(request=request):
                task = asyncio.get_running_loop().create_task(
                    self._ask(session_id, opened, request))
                opened.questions[request.id] = task
            case ApprovalWithdrawn(request_id=request_id) if request_id in opened.questions:
                opened.questions.pop(request_id).cancel()
        for update in updates_of(event):
            opened.outbox.put_nowait(update)

    async def _send(self, session_id: str, opened: _Open) -> None:
        while True:
            update = await opened.outbox.get()
            try:
                await self._conn.session_update(session_id=session_id, update=update)
            except Exception:
                log.debug("an update could not be sent", exc_info=True)
            finally:
                opened.outbox.task_done()

    async def _ask(self, session_id: str, opened: _Open, request: ApprovalRequest) -> None:
        """Ask the editor; answer the session with the option it picked (cancelled: reject)."""
        await opened.outbox.join()  # the call is on screen before its question
        options = [schema.PermissionOption(option_id=option_id, name=name, kind=kind)
                   for option_id, name, kind, _ in _OPTIONS]
        call = started_update(request.tool_use_id or request.id, request.tool_name,
                              request.tool_input, request.label, "pending")
        tool_call = schema.ToolCallUpdate(
            tool_call_id=call.tool_call_id, title=call.title, kind=call.kind, status="pending",
            content=call.content, locations=call.locations, raw_input=call.raw_input)
        try:
            response = await self._conn.request_permission(session_id=session_id,
                                                           tool_call=tool_call, options=options)
        finally:
            with contextlib.suppress(KeyError):
                del opened.questions[request.id]
        outcome = response.outcome
        chosen = getattr(outcome, "option_id", None) if outcome.outcome == "selected" else None
        answer = next((answer for option_id, _, _, answer in _OPTIONS if option_id == chosen),
                      ApprovalAnswer(allowed=False, reason="the editor cancelled the question"))
        opened.live.answer(request.id, answer)

    async def aclose(self) -> None:
        """Close every session (they stay stored)."""
        for opened in list(self._sessions.values()):
            for task in opened.questions.values():
                task.cancel()
            await opened.live.close()
            if opened.sender is not None:
                opened.sender.cancel()
                with contextlib.suppress(BaseException):
                    await opened.sender
        self._sessions.clear()


def _prompt_text(blocks: list[Any]) -> str:
    """Return a prompt's content blocks as the text of a turn (resources appended)."""
    parts: list[str] = []
    for block in blocks:
        match block:
            case schema.TextContentBlock(text=text):
                parts.append(text)
            case schema.ResourceContentBlock(uri=uri):
                parts.append(f"@{uri.removeprefix('file://')}")
            case schema.EmbeddedResourceContentBlock(resource=resource) if hasattr(
                    resource, "text"):
                parts.append(f'\n<context uri="{resource.uri}">\n{resource.text}\n</context>')
    return "\n".join(parts).strip()


async def run_acp(app: Application, flags: RuntimeFlags) -> None:
    """Serve ACP on this process's stdin and stdout until the client goes."""
    from acp import run_agent

    agent = AimonAgent(app, flags)
    try:
        await run_agent(cast("Any", agent))
    finally:
        await agent.aclose()
