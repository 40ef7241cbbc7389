"""LiveSession: the in-process handle that runs turns for one session and keeps it on disk.

Everything a front end shows comes from its one event stream (`events()` / `subscribe`): the
turn's text, tool calls and results, retries, notices, and approval questions. Whoever
subscribes with ``answers=True`` answers those questions through `answer`; with no such
subscriber (print mode, a script) a call that needs approval is refused with a clear message.
Input that starts with ``/`` runs a slash command instead of calling the model.

A live session owns what belongs to its session alone: the running turn, its queue, its
subscribers, its "for this turn" and "for this session" approvals, its hook dispatcher. It
builds one `Turn` value for each turn and hands it to the executor, which passes it to the
permission gate and the tools; the runtime it runs on is shared with other sessions and holds
nothing of this one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType

from aimon_core.agent import (
    AgentEvent,
    AgentExecutor,
    AgentRuntime,
    ApprovalAnswer,
    ApprovalRequest,
    Compacted,
    Environment,
    ExecutionBudget,
    ExecutionFinished,
    ExecutionId,
    ExecutionRequest,
    ExecutionResult,
    Notice,
    OrcaExecutor,
    Turn,
    gather_environment,
    new_execution_id,
    repair_tool_pairs,
)
from aimon_core.checkpoint import SessionCheckpoints, checkpointed, checkpoints_for
from aimon_core.command import CommandRegistry, memory_shorthand, parse_slash
from aimon_core.compact import CompactionSettings, SessionCompactor, context_window
from aimon_core.hook import HookDispatcher, HookEvent
from aimon_core.live._claude import ClaudeSide
from aimon_core.live._compaction import context_size, session_folder, with_extra_root
from aimon_core.live._events import (
    CommandRan,
    LiveSessionClosedError,
    LiveSessionEvent,
    LiveSessionStatus,
    SubmitOutcome,
    TurnFinished,
    TurnId,
    TurnQueued,
    TurnStarted,
)
from aimon_core.live._host import CommandScope, SessionCommandHost
from aimon_core.live._keeper import RecordKeeper
from aimon_core.live._questions import PendingQuestions
from aimon_core.live._shell import ShellRun, interrupted, run_shell
from aimon_core.llm import ContentBlock, LLMClient, Message, TextBlock, Usage, model_info, tagged
from aimon_core.permission import SessionApprovals, TurnApprovals
from aimon_core.session import (
    BudgetOverride,
    ClaimedSession,
    ModelChoice,
    SessionId,
    SessionRecord,
    SessionStore,
)
from aimon_core.tools import NO_MENTIONS, ToolContext, attach_mentions

# Rewrites a prompt before its turn (MCP: `@server:uri` attaches the resource).
PromptExpander = Callable[[str], Awaitable[str]]


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveSessionOptions:
    """How a live session runs, beyond its runtime, store and tool context.

    Args:
        commands: input starting with `/` runs one of these (None: all input goes to the model).
        scope: what those commands may act on beyond the session (the runtime's policy,
            settings and MCP servers; an `AgentAssembly` is one).
        compaction: when and how the transcript is compacted (None: the defaults).
        environment: the facts the system prompt describes (None: gathered at open).
        prompt_expanders: rewrite each prompt before its turn, in order.
        model: the model for this session, beating a model the session chose before (a
            `--model` flag); None: the session's own choice applies.
        executor: what runs each turn (aimon's Orca executor by default).
        mentions: `@path` in a prompt attaches that file or folder (`tools.attach_mentions`).
    """

    commands: CommandRegistry | None = None
    scope: CommandScope | None = None
    compaction: CompactionSettings | None = None
    environment: Environment | None = None
    prompt_expanders: tuple[PromptExpander, ...] = ()
    model: str | None = None
    executor: AgentExecutor = field(default_factory=OrcaExecutor)
    mentions: bool = False


class LiveSession:
    """Runs turns for one session: one at a time, queued in order, each kept on disk as it goes.

    Closing releases the session's lease and background shells; the AgentRuntime stays open.
    Use it as `async with` to close it on the way out.
    """

    def __init__(self, *, runtime: AgentRuntime, store: SessionStore, claimed: ClaimedSession,
                 tool_context: ToolContext, options: LiveSessionOptions) -> None:
        # (/model) a model chosen in this session before, on the same provider, applies again.
        self.runtime = _with_session_model(runtime, claimed.record.model_choice)
        self.commands = options.commands
        self._options = options
        self._keeper = RecordKeeper(store, claimed, tool_context.state)
        tool_context.state.restore(claimed.record.reads)  # (R) Edit after resume
        self._subscribers: list[Callable[[LiveSessionEvent], None]] = []
        self._questions = PendingQuestions(self._publish)
        spill_dir = session_folder(self.transcript_path, self.id)
        self.claude = ClaudeSide.for_session(self.runtime, claimed.record, tool_context,
                                             spill_dir, stored=self.transcript_path is not None,
                                             publish=self._publish)
        self.hooks: HookDispatcher = self.claude.hooks
        # The session's own approvals: "for this turn" (cleared as each turn starts) and "for
        # this session" (kept on the record, so a resumed session has them again).
        self.turn_approvals = TurnApprovals()
        self.session_approvals = SessionApprovals(claimed.record.approvals,
                                                  on_change=self._keeper.set_approvals)
        self._running: tuple[TurnId, asyncio.Task[ExecutionResult]] | None = None
        self._lock = asyncio.Lock()
        self._waiting = 0
        self._closed = False
        self._closers: list[Callable[[], None]] = []
        self._own_client: LLMClient | None = None  # one `use_client` gave it
        self._pending_context: list[str] = []
        self._turns = itertools.count(1)
        self.tool_context = with_extra_root(tool_context, spill_dir)
        # Snapshots of the project before each prompt (/undo, /rewind); None: not taken.
        self.checkpoints: SessionCheckpoints | None = checkpoints_for(
            store, tool_context.project_root, claimed.record.id)
        self._compactor = SessionCompactor(
            # Its summaries are the session's calls too (the cost ledger keeps them so).
            client=tagged(self.runtime.client, session_id=str(claimed.record.id)),
            model=self.runtime.model, settings=options.compaction,
            hooks=self.hooks, spill_dir=spill_dir,
            failures=claimed.record.compaction_failure_count,
            on_compacted=self._save_compaction, on_notice=self._publish,
            prices=self.runtime.prices)
        if options.model and options.model != self.runtime.model:
            self.set_model(options.model)

    @classmethod
    async def open(cls, runtime: AgentRuntime, store: SessionStore, tool_context: ToolContext,
                   *, session_id: str | None = None, holder: str | None = None,
                   options: LiveSessionOptions | None = None) -> LiveSession:
        """Claim a session (new when `session_id` is None) and return its live handle."""
        options = options or LiveSessionOptions()
        claimed = await asyncio.to_thread(
            store.claim, session_id, project_root=str(tool_context.project_root),
            agent_ref=str(runtime.runtime_id), holder=holder, lazy=True,
        )
        try:
            if options.environment is None:
                options = replace(options, environment=await gather_environment(
                    tool_context.project_root, tool_context.cwd,
                    path_filter=tool_context.path_filter))
        except BaseException:
            store.release(claimed)
            raise
        live = cls(runtime=runtime, store=store, claimed=claimed, tool_context=tool_context,
                   options=options)
        await live._session_hook(HookEvent.ON_SESSION_START,
                                 source="startup" if session_id is None else "resume")
        return live

    async def __aenter__(self) -> LiveSession:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    @property
    def id(self) -> SessionId:
        """Return the session id."""
        return self._keeper.id

    @property
    def record(self) -> SessionRecord:
        """Return the session record as of the last committed message."""
        return self._keeper.record

    @property
    def is_stored(self) -> bool:
        """(R) Tell whether the session is on disk (a new one is, from its first prompt)."""
        return self._keeper.stored

    @property
    def store(self) -> SessionStore:
        """Return the store that keeps this session."""
        return self._keeper.store

    @property
    def project_root(self) -> Path:
        """Return the project the session works in."""
        return self.tool_context.project_root

    @property
    def transcript_path(self) -> str | None:
        """Return where the transcript is stored, when the store keeps files."""
        return self._keeper.transcript_path()

    def budget(self) -> ExecutionBudget:
        """Return the budget a turn gets: the agent's default with the session's override."""
        base = ExecutionBudget(max_iterations=self.runtime.agent.max_iterations or 100)
        override = self.record.budget_override
        if override is None:
            return base
        return base.with_overrides(max_iterations=override.max_iterations,
                                   max_tokens=override.max_tokens,
                                   max_seconds=override.max_seconds)

    def status(self) -> LiveSessionStatus:
        """Return what the session is doing now."""
        record = self.record
        return LiveSessionStatus(
            session_id=self.id, agent=self.runtime.agent.name, model=self.runtime.model,
            running_turn=self._running[0] if self._running else None, queued=self._waiting,
            message_count=len(record.transcript.messages), totals=record.totals,
            budget=self.budget(), budget_override=record.budget_override,
            pending_approvals=len(self._questions.pending()),
            context_tokens=context_size(self._compactor, record.transcript.messages,
                                        self.runtime.tools.definitions()),
            context_window=self._compactor.window,
        )

    # -- the event stream

    def subscribe(self, callback: Callable[[LiveSessionEvent], None], *,
                  answers: bool = False) -> Callable[[], None]:
        """Call `callback` with every event; return a function that unsubscribes.

        ``answers=True`` says the subscriber answers `ApprovalRequested` events (through
        `answer`); while none does, calls that need approval are refused instead of asked.
        """
        self._subscribers.append(callback)
        self._questions.answerers += answers
        for event in self.claude.opening:  # a SessionStart hook failed before anyone listened
            callback(event)
        done = False

        def unsubscribe() -> None:
            nonlocal done
            if not done:
                done = True
                self._subscribers.remove(callback)
                self._questions.answerers -= answers

        return unsubscribe

    async def events(self, *, answers: bool = False) -> AsyncIterator[LiveSessionEvent]:
        """Yield every event from now on, until the session closes (see `subscribe`)."""
        queue: asyncio.Queue[LiveSessionEvent | None] = asyncio.Queue()
        unsubscribe = self.subscribe(queue.put_nowait, answers=answers)
        self._closers.append(lambda: queue.put_nowait(None))
        try:
            while (event := await queue.get()) is not None:
                yield event
        finally:
            unsubscribe()

    def notify(self, event: AgentEvent) -> None:
        """Put an event of work done for this session (a fork's progress) on its stream."""
        self._publish(event)

    def _publish(self, event: LiveSessionEvent) -> None:
        for callback in list(self._subscribers):
            callback(event)

    # -- approvals

    def pending_approvals(self) -> tuple[ApprovalRequest, ...]:
        """Return the approval questions waiting for an answer, oldest first."""
        return self._questions.pending()

    def answer(self, request_id: str, answer: ApprovalAnswer) -> bool:
        """Answer a waiting approval question; False if none with that id waits."""
        return self._questions.answer(request_id, answer)

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        """Put `request` on the event stream and wait for an answer; None if nobody answers."""
        return await self._questions.ask(
            request, lambda asked: self.claude.approval_requested(asked.tool_name))

    # -- turns

    def command_turn(self, execution_id: ExecutionId | None = None) -> Turn:
        """Return a Turn for work a slash command does for this session (a fork it starts).

        It shares the session's hooks, asker, event stream and approvals; nothing it does
        is written to the transcript.
        """
        return self._turn(execution_id or new_execution_id(), emit=self._publish)

    def _turn(self, execution_id: ExecutionId, *, emit: Callable[[AgentEvent], None],
              before_changes: Awaitable[object] | None = None, stored: bool = False) -> Turn:
        """Build the Turn of one execution for this session (the one place one is made).

        `stored`: its messages are the session's transcript, and its tool calls are recorded
        as started before they run (a turn); a command's fork keeps nothing.
        """
        turn = Turn(execution_id=execution_id, session_id=self.id, hooks=self.hooks, emit=emit,
                    ask=self.ask, turn_approvals=self.turn_approvals,
                    session_approvals=self.session_approvals, before_changes=before_changes)
        if not stored:
            return turn
        return replace(turn, persist=self._persist, tool_started=self._keeper.mark_started)

    async def submit(self, prompt: str, *, budget: ExecutionBudget | None = None
                     ) -> ExecutionResult:
        """Run a turn (after any running or queued ones) and return its result."""
        return await self.submit_async(prompt, budget=budget)

    def submit_async(self, prompt: str, *, budget: ExecutionBudget | None = None,
                     attachments: tuple[ContentBlock, ...] = ()
                     ) -> asyncio.Task[ExecutionResult]:
        """Start a turn in the background (queued behind running ones); return its task."""
        return self.offer_async(prompt, budget=budget, attachments=attachments)[1]

    def offer_async(self, prompt: str, *, budget: ExecutionBudget | None = None,
                    attachments: tuple[ContentBlock, ...] = (), shell: bool = False
                    ) -> tuple[SubmitOutcome, asyncio.Task[ExecutionResult]]:
        """Run the prompt now if the session is idle, else queue it; say which.

        `budget` replaces the session's budget for this one turn; `attachments` (images,
        documents) join the prompt. `shell`: the prompt is a command the person runs
        without the model (`!command`, see `_shell`).
        """
        if self._closed:
            raise LiveSessionClosedError(f"session {self.id} is closed")
        turn_id = TurnId(f"{self.id}#{next(self._turns)}-{uuid.uuid4().hex[:6]}")
        busy = self._running is not None or self._lock.locked() or self._waiting > 0
        self._waiting += 1
        work = self._shell_turn(turn_id, prompt) if shell else \
            self._run_turn(turn_id, prompt, budget, attachments)
        task = asyncio.get_running_loop().create_task(work)
        if busy:
            position = self._waiting - (0 if self._running is not None else 1)
            shown = f"!{prompt}" if shell else prompt
            self._publish(TurnQueued(turn_id=turn_id, prompt=shown, position=position))
            return SubmitOutcome.QUEUED, task
        return SubmitOutcome.EXECUTED, task

    def interrupt(self, turn_id: TurnId | None = None) -> bool:
        """Cancel the running turn (only if it is `turn_id`, when given); True if one was."""
        if self._running is None:
            return False
        running_id, task = self._running
        if turn_id is not None and turn_id != running_id:
            return False
        task.cancel()
        return True

    def turn_running(self) -> bool:
        """Tell whether another turn runs now (a command that runs as a turn is not one)."""
        return self._running is not None and self._running[1] is not asyncio.current_task()

    async def _shell_turn(self, turn_id: TurnId, command: str) -> ExecutionResult:
        """Run a `!command` as a turn of its own (queued, checkpointed, interruptible)."""
        async with self._turn_slot(turn_id):
            self._publish(TurnStarted(turn_id=turn_id, prompt=f"!{command}"))
            policy = self._options.scope.policy if self._options.scope is not None else None
            run = ShellRun(command=command, tool_use_id=f"shell-{turn_id}",
                           context=self.tool_context, policy=policy, emit=self._publish,
                           persist=self._persist)
            started = time.monotonic()
            try:
                async with self._checkpointed(f"!{command}") as snapshot:
                    if snapshot is not None:
                        await snapshot
                    result = await run_shell(run)
            except asyncio.CancelledError:  # told as a turn's end, as an interrupted turn is
                await self._keeper.writer.flush()
                self._publish(TurnFinished(turn_id=turn_id, result=interrupted(command, started),
                                           totals=self.record.totals))
                raise
            await self._keeper.writer.flush()
            self._publish(TurnFinished(turn_id=turn_id, result=result, totals=self.record.totals))
            return result

    @contextlib.asynccontextmanager
    async def _turn_slot(self, turn_id: TurnId) -> AsyncIterator[None]:
        """Hold the session's one turn slot (after the turns queued before) for a turn."""
        try:
            await self._lock.acquire()
        finally:
            self._waiting -= 1
        try:
            if self._closed:
                raise LiveSessionClosedError(f"session {self.id} is closed")
            task = asyncio.current_task()
            assert task is not None
            self._running = (turn_id, task)
            yield
        finally:
            self._running = None
            self._lock.release()

    async def _run_turn(self, turn_id: TurnId, prompt: str, budget: ExecutionBudget | None,
                        attachments: tuple[ContentBlock, ...]) -> ExecutionResult:
        async with self._turn_slot(turn_id):
            if self.commands is not None and self.commands.get("memory") is not None and (
                    note := memory_shorthand(prompt)) is not None:
                prompt = f"/memory add {note}"  # `# text`, as in Claude Code
            if self.commands is not None and parse_slash(prompt) is not None:
                outcome = await self._command(turn_id, prompt)
                if outcome.prompt is None:
                    return outcome.result
                prompt = outcome.prompt
            for expand in self._options.prompt_expanders:
                prompt = await expand(prompt)
            async with self._checkpointed(prompt) as snapshot:
                return await self._execute(turn_id, prompt, budget or self.budget(), snapshot,
                                           attachments)

    def _checkpointed(self, prompt: str) -> contextlib.AbstractAsyncContextManager[
            Awaitable[object] | None]:
        """Return the checkpoint around a turn (a failing one warns, never stops it)."""
        return checkpointed(self.checkpoints, prompt, len(self.record.transcript),
                            lambda text: self._publish(Notice(text=text, level="warning")))

    async def _command(self, turn_id: TurnId, text: str) -> CommandRan:
        """Run a slash command (before any model call); publish and return what it did."""
        assert self.commands is not None
        started = time.monotonic()
        host = SessionCommandHost(self, self.commands, self._options.scope)
        outcome = await self.commands.run(text, host)
        ran = CommandRan(turn_id=turn_id, text=text, outcome=outcome,
                         duration_s=time.monotonic() - started)
        self._publish(ran)
        return ran

    async def _execute(self, turn_id: TurnId, prompt: str, budget: ExecutionBudget,
                       before_changes: Awaitable[object] | None,
                       attachments: tuple[ContentBlock, ...] = ()) -> ExecutionResult:
        self.turn_approvals.clear()  # "for this turn" ends when the next turn starts
        self._publish(TurnStarted(turn_id=turn_id, prompt=prompt))
        extra = (*await self._mentions(prompt), *attachments)
        self.claude.turn_started()
        finished: list[ExecutionResult] = []

        def on_event(event: AgentEvent) -> None:
            self.claude.on_event(event)
            if isinstance(event, ExecutionFinished):
                finished.append(event.result)
            self._publish(event)

        extra += tuple(TextBlock(text=text) for text in self._pending_context)
        self._pending_context.clear()
        message = Message(role="user", content=(TextBlock(text=prompt), *extra))
        history, message = self._keeper.recovered(message, self._unanswered)
        request = ExecutionRequest(
            prompt=message, tool_context=self.tool_context, history=history,
            history_repaired=True, budget=budget, environment=self._options.environment,
            compactor=self._compactor,
            turn=self._turn(ExecutionId(turn_id), emit=on_event, before_changes=before_changes,
                            stored=True),
        )
        try:
            result = await self._options.executor.execute(self.runtime, request)
        finally:
            if finished:
                self._keeper.count_turn(finished[-1])
            self._keeper.write_side(sync=True)
            await self._keeper.writer.flush()  # the turn is on disk (fsync-ed) before it is told
            if finished:
                self._publish(TurnFinished(turn_id=turn_id, result=finished[-1],
                                           totals=self.record.totals))
            self.claude.turn_finished(someone_at_prompt=self._questions.answerers > 0)
        return result

    async def _mentions(self, prompt: str) -> tuple[ContentBlock, ...]:
        """Return what the prompt's `@path` mentions attach; tell the person each one."""
        if not self._options.mentions:
            return NO_MENTIONS.blocks
        info = model_info(self.runtime.model, self.runtime.client.provider)
        found = await attach_mentions(prompt, self.tool_context, images=info.takes_images,
                                      pdfs=info.takes_pdfs)
        for note in found.notes:
            self._publish(Notice(text=f"⎿ {note}"))
        return found.blocks

    def _persist(self, message: Message) -> None:
        stored = self._keeper.persist(message)
        self._keeper.writer.write(self.claude.append, stored)

    def _unanswered(self, text: str) -> None:
        short = text if len(text) <= 200 else text[:199] + "…"
        self._publish(Notice(text=f"Your previous prompt got no answer (its turn failed) and is "
                                  f"not sent again: “{short}”", level="warning"))

    # -- what the session keeps

    def set_budget_override(self, override: BudgetOverride | None) -> None:
        """Store a budget override on the record (it survives resume)."""
        self._keeper.set_budget_override(override)

    def set_model(self, model: str) -> None:
        """Use `model` from the next turn on (a running turn keeps its model); it is stored
        with the session, so a resumed session keeps it."""
        self.runtime = replace(self.runtime, model=model)
        self._compactor.model = model
        self._compactor.window = context_window(model, self.runtime.client.provider,
                                                self._compactor.settings)
        self._keeper.set_model_choice(ModelChoice(model=model,
                                                  provider=self.runtime.client.provider))

    async def use_client(self, client: LLMClient, model: str) -> None:
        """Talk through `client` (another account: `/profile`) with `model` from the next turn
        on. The session owns it: it closes it when it closes or switches again."""
        old, self._own_client = self._own_client, client
        self.runtime = replace(self.runtime, client=client)
        self._compactor.client = client
        self.set_model(model)
        if old is not None:
            await old.aclose()

    async def compact(self, instructions: str | None = None) -> Compacted:
        """Summarise the conversation now (`/compact`), between turns; return the report.

        Waits for a running turn to end, unless called from inside it (a slash command).
        """
        running = self._running is not None and self._running[1] is asyncio.current_task()
        async with contextlib.nullcontext() if running else self._lock:
            record = self.record
            history = repair_tool_pairs(record.transcript.messages, record.started_tool_ids)
            done = await self._compactor.compact(
                history, trigger="manual", instructions=instructions,
                tools=self.runtime.tools.definitions())
            if done.usage != Usage():
                self._keeper.add_cost(done)
            await self._keeper.writer.flush()  # the compacted transcript is on disk when told
            self._publish(done)
            return done

    def _save_compaction(self, done: Compacted) -> None:
        self._keeper.save_compaction(done, self._compactor.failures)

    async def close(self, *, reason: str = "other") -> None:
        """Stop any running turn, kill background shells and release the lease.

        `reason` is for SessionEnd hooks: "clear", "logout", "prompt_input_exit" or "other".
        """
        if self._closed:
            return
        self._closed = True
        if self._running is not None:
            self._running[1].cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._running[1]
        with contextlib.suppress(Exception):
            await self.tool_context.shell.close()
        with contextlib.suppress(Exception):
            await self._session_hook(HookEvent.ON_SESSION_END, reason=reason)
        with contextlib.suppress(Exception):
            await self.claude.aclose()
        for closer in self._closers:
            closer()
        if self._own_client is not None:
            with contextlib.suppress(Exception):
                await self._own_client.aclose()
        await self._keeper.close()

    async def _session_hook(self, event: HookEvent, *, source: str | None = None,
                            reason: str | None = None) -> None:
        """Run SessionStart / SessionEnd hooks; SessionStart context joins the next prompt."""
        context = await self.claude.session_hook(event, source=source, reason=reason)
        if context:
            self._pending_context.append(context)


def _with_session_model(runtime: AgentRuntime, choice: ModelChoice | None) -> AgentRuntime:
    """Return `runtime` with the session's `/model` choice, if made on the same provider."""
    if choice is None or choice.provider != runtime.client.provider:
        return runtime
    return replace(runtime, model=choice.model)
