"""`aimon attach ID`: the REPL on a session the service hosts.

The history is replayed, then the session's events are drawn as they come by the REPL's own
renderer (they arrive as the same typed events); what is typed runs in the session (slash
commands too, in the service). An approval question rings the terminal bell and is asked
here; any attached client may answer it, the first answer wins and every client shows it.
Ctrl-C interrupts the running turn; Ctrl-D or /detach leaves, and the session runs on.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.patch_stdout import patch_stdout

from aimon_cli._prompt import PROMPT_STYLE
from aimon_cli._terminal import PromptWriter, prompt_message, redraw

if TYPE_CHECKING:
    from aimon_cli.render import Renderer
    from aimon_core.agent import ApprovalRequest
    from aimon_core.service import AsyncServiceClient

# The keys of an approval question and what each answers (the REPL's scopes).
ANSWER_KEYS = {"y": ("once", True), "s": ("session", True), "a": ("agent", True),
               "n": ("once", False)}
ANSWER_HINT = "[y] yes once · [s] this session · [a] always for this agent · [n] no"


def attach(session_id: str) -> int:
    """Attach to `session_id` until the person leaves; return the exit status."""
    return asyncio.run(Attached(session_id).run())


class Attached:
    """One attached terminal: the prompt, the renderer, the questions waiting here."""

    def __init__(self, session_id: str) -> None:
        from rich.console import Console

        self.session_id = session_id
        self.console = Console(highlight=False, file=cast("IO[str]", PromptWriter()))
        self.renderer: Renderer | None = None
        self.client: AsyncServiceClient | None = None
        self.questions: dict[str, ApprovalRequest] = {}
        self.project_root: Path | None = None
        self._prompt: PromptSession[str] = PromptSession(
            message=self._message, style=PROMPT_STYLE, multiline=False)
        self._gone = False
        self._early: list[Any] = []  # events that came before the history was drawn

    def _message(self) -> StyleAndTextTuples:
        return prompt_message(self.renderer, 0, self._prompt.app)

    async def run(self) -> int:
        """Attach, replay, then read input until Ctrl-D or /detach."""
        from aimon_cli.render import Renderer
        from aimon_core.service import AsyncServiceClient, RemoteError, from_wire

        client = await AsyncServiceClient.connect(self._on_notification,
                                                  client_name="aimon attach")
        self.client = client
        try:
            opened = await client.call("session/attach", {"session_id": self.session_id})
        except RemoteError as exc:
            await client.close()
            sys.stderr.write(f"aimon: {exc}\n")
            return 1
        session = opened["session"]
        self.session_id = session["session_id"]
        self.project_root = Path(session["project"])
        self.renderer = Renderer(self.console, session_id=self.session_id,
                                 project_root=self.project_root)
        self.renderer.on_change = functools.partial(redraw, self._prompt.app)
        self._say(f"attached to {self.session_id} · {session['model']} · {session['state']} "
                  "· Ctrl-D or /detach leaves it running", "dim")
        self.renderer.replay(from_wire(opened["messages"]))
        for warning in opened.get("warnings", []):
            self._say(f"warning: {warning}", "yellow")
        for request in from_wire(opened["pending"]):
            self._ask(request)
        early, self._early = self._early, []
        for params in early:
            self._on_notification("session/event", params)
        watching = asyncio.get_running_loop().create_task(self._watch_service(client))
        try:
            with patch_stdout(raw=True):
                return await self._loop()
        finally:
            watching.cancel()
            with contextlib.suppress(Exception):
                await client.call("session/detach", {"session_id": self.session_id})
            await client.close()

    async def _watch_service(self, client: AsyncServiceClient) -> None:
        await client.wait_closed()
        self._gone = True
        self._give_way()

    async def _loop(self) -> int:
        assert self.client is not None
        while not self._gone:
            if self.questions:
                await self._answer_one()
                continue
            try:
                text = await self._prompt.prompt_async()
            except EOFError:
                break
            except KeyboardInterrupt:
                await self._interrupt()
                continue
            text = text.strip()  # empty too when a question came, or the service went
            if text in ("/detach", "/exit", "/quit"):
                break
            if text:
                await self._call("session/prompt", {"session_id": self.session_id,
                                                    "text": text})
        if self._gone:
            self._say("The service went away; the session is stored: aimon attach "
                      f"{self.session_id} starts it again.", "red")
            return 1
        self._say(f"Detached; {self.session_id} runs on (aimon attach {self.session_id}).",
                  "dim")
        return 0

    async def _call(self, method: str, params: Mapping[str, Any]) -> Any:
        from aimon_core.service import RemoteError, ServiceUnavailableError

        assert self.client is not None
        try:
            return await self.client.call(method, params)
        except RemoteError as exc:
            self._say(str(exc), "red")
        except ServiceUnavailableError:
            self._gone = True
        return None

    async def _interrupt(self) -> None:
        done = await self._call("session/stop", {"session_id": self.session_id})
        if done and done.get("interrupted"):
            self._say("Interrupting…", "dim")
        else:
            self._say("No turn runs. Ctrl-D or /detach leaves (the session runs on).", "dim")

    # -- approvals

    def _ask(self, request: ApprovalRequest) -> None:
        from aimon_cli.render import approval_lines

        if request.id in self.questions:
            return
        self.questions[request.id] = request
        sys.stdout.write("\a")  # the terminal bell: a question waits
        sys.stdout.flush()
        for line in approval_lines(request, request.preview, self.project_root):
            self.console.print(line, no_wrap=True, overflow="ellipsis", crop=True)
        self._give_way()

    def _give_way(self) -> None:
        """End the prompt being read, so the loop asks the question (or sees it went)."""
        app = self._prompt.app
        if app.is_running and app.future is not None and not app.future.done():
            app.exit(result="")

    async def _answer_one(self) -> None:
        from aimon_core.agent import ApprovalAnswer, ApprovalScope
        from aimon_core.service import to_wire

        request_id, request = next(iter(self.questions.items()))
        try:
            typed = await self._prompt.prompt_async(f"{ANSWER_HINT} › ")
        except (EOFError, KeyboardInterrupt):
            typed = "n"
        if request_id not in self.questions:
            return  # answered by another client meanwhile
        choice = ANSWER_KEYS.get((typed or "").strip().lower()[:1])
        if choice is None:
            self._say(f"Answer with one of: {ANSWER_HINT}", "yellow")
            return
        scope, allowed = choice
        answer = ApprovalAnswer(allowed=allowed, scope=ApprovalScope(scope),
                                reason="" if allowed else "denied from aimon attach")
        done = await self._call("session/answer", {"session_id": self.session_id,
                                                   "request_id": request.id,
                                                   "answer": to_wire(answer)})
        self.questions.pop(request_id, None)
        if done is not None and not done.get("accepted"):
            self._say("Another client answered first.", "dim")

    # -- events

    def _on_notification(self, method: str, params: Mapping[str, Any]) -> None:
        from aimon_core.agent import ApprovalRequested, ApprovalResolved, ApprovalWithdrawn
        from aimon_core.service import ProtocolError, from_wire

        if method != "session/event":
            return
        if self.renderer is None:  # the reply to attach is still being read
            self._early.append(params)
            return
        try:
            event = from_wire(params.get("event"))
        except ProtocolError as exc:
            self._say(f"an event could not be read: {exc}", "red")
            return
        match event:
            case ApprovalRequested(request=request):
                self._ask(request)
            case ApprovalResolved(request_id=request_id) | ApprovalWithdrawn(
                    request_id=request_id) if request_id in self.questions:
                self.questions.pop(request_id, None)
                self._give_way()
        self.renderer(event)

    def _say(self, text: str, style: str = "") -> None:
        self.console.print(text, style=style or None, markup=False, highlight=False)
