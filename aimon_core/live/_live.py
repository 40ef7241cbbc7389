"""LiveSession: the in-process handle that runs turns for one session and keeps it on disk.

Everything a front end shows comes from its one event stream (`events()` / `subscribe`): the
turn's text, tool calls and results, retries, notices, and approval questions. Whoever
subscribes with ``answers=True`` answers those questions through `answer`; with no such
subscriber (print mode, a script) a call that needs approval is refused with a clear message.
Input that starts with ``/`` runs a slash command instead of calling the model.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path

from aimon_core.agent import (
    AgentEvent,
    AgentRuntime,
    ApprovalAnswer,
    ApprovalRequest,
    Compacted,
    Environment,
    ExecutionBudget,
    ExecutionFinished,
    ExecutionRequest,
    ExecutionResult,
    Notice,
    OrcaExecutor,
    gather_environment,
    repair_tool_pairs,
)
from aimon_core.checkpoint import SessionCheckpoints, checkpointed, checkpoints_for
from aimon_core.command import CommandHost, CommandRegistry, parse_slash
from aimon_core.compact import CompactionSettings, SessionCompactor, context_window
from aimon_core.hook import HookEvent
from aimon_core.live._claude import ClaudeSide
from aimon_core.live._compaction import context_size, session_folder, with_cost, with_extra_root
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
from aimon_core.live._history import stored_part, turn_history
from aimon_core.live._questions import PendingQuestions
from aimon_core.live._writer import SessionWriter
from aimon_core.llm import Message, TextBlock, ToolUseBlock, Usage
from aimon_core.session._ids import SessionId
from aimon_core.session._record import (
    BudgetOverride,
    ModelChoice,
    SessionRecord,
    SessionTranscript,
    unanswered_tool_ids,
)
from aimon_core.session._store import ClaimedSession, SessionStore
from aimon_core.tools import ToolContext


class LiveSession:
    """Runs turns for one session: one at a time, queued in order, each kept on disk as it goes.

    Closing releases the session's lease and background shells; the AgentRuntime stays open.
    """

    def __init__(
        self,
        *,
        runtime: AgentRuntime,
        store: SessionStore,
        claimed: ClaimedSession,
        tool_context: ToolContext,
        environment: Environment,
        executor: OrcaExecutor | None = None,
        commands: CommandRegistry | None = None,
        compaction: CompactionSettings | None = None,
    ) -> None:
        # (/model) a model chosen in this session before, on the same provider, applies again.
        runtime = _with_session_model(runtime, claimed.record.model_choice)
        self.runtime = runtime
        # Input starting with `/` runs one of these (None: every input goes to the model).
        self.commands = commands
        # What the commands may do (switch sessions, list...); None: what this session can.
        self.command_host: CommandHost | None = None
        # Rewrite a prompt before its turn (MCP: `@server:uri` attaches the resource).
        self.prompt_expanders: list[Callable[[str], Awaitable[str]]] = []
        self._store = store
        self._claimed = claimed
        self._record = claimed.record
        self._stored = claimed.stored  # (R) a new session reaches disk with its first message
        # Every write to the session's files goes through one writer, off the event loop.
        self._writer = SessionWriter()
        # (R) Stored tool results that lead the next prompt: not stored a second time.
        self._carried: Message | None = None
        self._context = replace(tool_context, session_id=claimed.record.id)
        self._context.state.restore(claimed.record.reads)  # (R) Edit after resume
        self._environment = environment
        self._executor = executor or OrcaExecutor()
        self._lock = asyncio.Lock()
        self._subscribers: list[Callable[[LiveSessionEvent], None]] = []
        self._questions = PendingQuestions(self._publish)
        spill_dir = session_folder(self.transcript_path, self.id)
        self.claude = ClaudeSide.for_session(runtime, claimed.record, tool_context, spill_dir,
                                             stored=self.transcript_path is not None,
                                             publish=self._publish)
        self.hooks = self.claude.hooks
        self._running: tuple[TurnId, asyncio.Task[ExecutionResult]] | None = None
        self._waiting = 0
        self._closed = False
        self._closers: list[Callable[[], None]] = []
        self._pending_context: list[str] = []
        self._turns = itertools.count(1)
        self._context = with_extra_root(self._context, spill_dir)
        # Snapshots of the project before each prompt (/undo, /rewind); None: not taken.
        self.checkpoints: SessionCheckpoints | None = checkpoints_for(
            store, self._context.project_root, claimed.record.id)
        self._compactor = SessionCompactor(
            client=runtime.client, model=runtime.model, settings=compaction, hooks=self.hooks,
            spill_dir=spill_dir, failures=claimed.record.compaction_failure_count,
            on_compacted=self._save_compaction, on_notice=self._publish)

    @classmethod
    async def open(
        cls,
        runtime: AgentRuntime,
        store: SessionStore,
        tool_context: ToolContext,
        *,
        session_id: str | None = None,
        holder: str | None = None,
        environment: Environment | None = None,
        commands: CommandRegistry | None = None,
        compaction: CompactionSettings | None = None,
    ) -> LiveSession:
        """Claim a session (new when `session_id` is None) and return its live handle."""
        claimed = await asyncio.to_thread(
            store.claim, session_id, project_root=str(tool_context.project_root),
            agent_ref=str(runtime.runtime_id), holder=holder, lazy=True,
        )
        try:
            env = environment or await gather_environment(
                tool_context.project_root, tool_context.cwd)
        except BaseException:
            store.release(claimed)
            raise
        live = cls(runtime=runtime, store=store, claimed=claimed, tool_context=tool_context,
                   environment=env, commands=commands, compaction=compaction)
        await live._session_hook(HookEvent.ON_SESSION_START,
                                 source="startup" if session_id is None else "resume")
        return live

    @property
    def id(self) -> SessionId:
        """Return the session id."""
        return self._record.id

    @property
    def record(self) -> SessionRecord:
        """Return the session record as of the last committed message."""
        return self._record

    @property
    def is_stored(self) -> bool:
        """(R) Tell whether the session is on disk (a new one is, from its first prompt)."""
        return self._stored

    @property
    def store(self) -> SessionStore:
        """Return the store that keeps this session."""
        return self._store

    @property
    def project_root(self) -> Path:
        """Return the project the session works in."""
        return self._context.project_root

    def budget(self) -> ExecutionBudget:
        """Return the budget a turn gets: the agent's default with the session's override."""
        base = ExecutionBudget(max_iterations=self.runtime.agent.max_iterations or 100)
        override = self._record.budget_override
        if override is None:
            return base
        return base.with_overrides(max_iterations=override.max_iterations,
                                   max_tokens=override.max_tokens,
                                   max_seconds=override.max_seconds)

    def status(self) -> LiveSessionStatus:
        """Return what the session is doing now."""
        return LiveSessionStatus(
            session_id=self.id, agent=self.runtime.agent.name, model=self.runtime.model,
            running_turn=self._running[0] if self._running else None, queued=self._waiting,
            message_count=len(self._record.transcript.messages), totals=self._record.totals,
            budget=self.budget(), budget_override=self._record.budget_override,
            pending_approvals=len(self._questions.pending()),
            context_tokens=context_size(self._compactor, self._record.transcript.messages,
                                        self.runtime.tools.definitions()),
            context_window=self._compactor.window,
        )

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

    async def submit(self, prompt: str, *, budget: ExecutionBudget | None = None
                     ) -> ExecutionResult:
        """Run a turn (after any running or queued ones) and return its result."""
        return await self.submit_async(prompt, budget=budget)

    def submit_async(self, prompt: str, *, budget: ExecutionBudget | None = None
                     ) -> asyncio.Task[ExecutionResult]:
        """Start a turn in the background (queued behind running ones); return its task."""
        return self.offer_async(prompt, budget=budget)[1]

    def offer_async(self, prompt: str, *, budget: ExecutionBudget | None = None
                    ) -> tuple[SubmitOutcome, asyncio.Task[ExecutionResult]]:
        """Run the prompt now if the session is idle, else queue it; say which.

        `budget` replaces the session's budget for this one turn.
        """
        if self._closed:
            raise LiveSessionClosedError(f"session {self.id} is closed")
        turn_id = TurnId(f"{self.id}#{next(self._turns)}-{uuid.uuid4().hex[:6]}")
        busy = self._running is not None or self._lock.locked() or self._waiting > 0
        self._waiting += 1
        task = asyncio.get_running_loop().create_task(self._turn(turn_id, prompt, budget))
        if busy:
            position = self._waiting - (0 if self._running is not None else 1)
            self._publish(TurnQueued(turn_id=turn_id, prompt=prompt, position=position))
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

    def pending_approvals(self) -> tuple[ApprovalRequest, ...]:
        """Return the approval questions waiting for an answer, oldest first."""
        return self._questions.pending()

    def answer(self, request_id: str, answer: ApprovalAnswer) -> bool:
        """Answer a waiting approval question; False if none with that id waits."""
        return self._questions.answer(request_id, answer)

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        """Ask this session's answerer about work done for it (a fork); None: nobody can."""
        return await self._ask(request)

    def notify(self, event: AgentEvent) -> None:
        """Put an event of work done for this session (a fork's progress) on its stream."""
        self._publish(event)

    async def _ask(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        """Put `request` on the event stream and wait for an answer; None if nobody answers."""
        return await self._questions.ask(
            request, lambda asked: self.claude.approval_requested(asked.tool_name))

    def set_budget_override(self, override: BudgetOverride | None) -> None:
        """Store a budget override on the record (it survives resume)."""
        self._record = replace(self._record, budget_override=override)
        self._write_side(sync=True)
        self._writer.flush_blocking()  # a setting the user made is on disk when it returns

    def turn_running(self) -> bool:
        """Tell whether another turn runs now (a command that runs as a turn is not one)."""
        return self._running is not None and self._running[1] is not asyncio.current_task()

    def set_model(self, model: str) -> None:
        """Use `model` from the next turn on (a running turn keeps its model); it is stored
        with the session, so a resumed session keeps it."""
        self.runtime = replace(self.runtime, model=model)
        self._compactor.model = model
        self._compactor.window = context_window(model, self.runtime.client.provider,
                                                self._compactor.settings)
        choice = ModelChoice(model=model, provider=self.runtime.client.provider)
        self._record = replace(self._record, model_choice=choice)
        self._write_side(sync=True)
        self._writer.flush_blocking()  # a setting the user made is on disk when it returns

    def set_approvals(self, approvals: tuple[str, ...]) -> None:
        """Store the session-scope approval rules on the record."""
        self._record = replace(self._record, approvals=approvals)
        self._write_side(sync=True)
        self._writer.flush_blocking()  # a setting the user made is on disk when it returns

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
            await self._context.shell.close()
        with contextlib.suppress(Exception):
            await self._session_hook(HookEvent.ON_SESSION_END, reason=reason)
        with contextlib.suppress(Exception):
            await self.claude.aclose()
        for closer in self._closers:
            closer()
        try:
            await self._writer.close()  # everything queued is on disk before the lease goes
        finally:
            self._store.release(self._claimed)

    async def _session_hook(self, event: HookEvent, *, source: str | None = None,
                            reason: str | None = None) -> None:
        """Run SessionStart / SessionEnd hooks; SessionStart context joins the next prompt."""
        context = await self.claude.session_hook(event, source=source, reason=reason)
        if context:
            self._pending_context.append(context)

    @property
    def transcript_path(self) -> str | None:
        """Return where the transcript is stored, when the store keeps files."""
        records = self._store.records
        path_for = getattr(records, "path_for", None)
        if not self._stored and callable(path_for):  # (R) not written yet: where it will be
            return str(path_for(self.id, self._record.project_root))
        path_of = getattr(records, "path_of", None)
        return str(path_of(self.id)) if callable(path_of) else None

    def _ensure_stored(self) -> None:
        """(R) Write a new session the first time it has something to keep."""
        if not self._stored:
            self._writer.write(self._store.store_new, self._record, self._claimed)
            self._stored = True

    async def _turn(self, turn_id: TurnId, prompt: str, budget: ExecutionBudget | None
                    ) -> ExecutionResult:
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
            if self.commands is not None and parse_slash(prompt) is not None:
                outcome = await self._command(turn_id, prompt)
                if outcome.prompt is None:
                    return outcome.result
                prompt = outcome.prompt
            for expand in self.prompt_expanders:
                prompt = await expand(prompt)
            async with checkpointed(self.checkpoints, prompt, len(self._record.transcript),
                                    lambda text: self._publish(Notice(text=text, level="warning"))
                                    ) as snapshot:
                return await self._execute(turn_id, prompt, budget or self.budget(),
                                           before_changes=snapshot)
        finally:
            self._running = None
            self._lock.release()

    async def _command(self, turn_id: TurnId, text: str) -> CommandRan:
        """Run a slash command (before any model call); publish and return what it did."""
        from aimon_core.live._host import SessionCommandHost

        assert self.commands is not None
        started = time.monotonic()
        host = self.command_host or SessionCommandHost(self, self.commands)
        outcome = await self.commands.run(text, host)
        ran = CommandRan(turn_id=turn_id, text=text, outcome=outcome,
                         duration_s=time.monotonic() - started)
        self._publish(ran)
        return ran

    async def _execute(self, turn_id: TurnId, prompt: str, budget: ExecutionBudget, *,
                       before_changes: Awaitable[object] | None = None) -> ExecutionResult:
        self._publish(TurnStarted(turn_id=turn_id, prompt=prompt))
        self.claude.turn_started()
        finished: list[ExecutionResult] = []

        def on_event(event: AgentEvent) -> None:
            self.claude.on_event(event)
            if isinstance(event, ExecutionFinished):
                finished.append(event.result)
            self._publish(event)

        message = Message.user(prompt)
        if self._pending_context:
            extra = tuple(TextBlock(text=text) for text in self._pending_context)
            message = Message(role="user", content=(*message.content, *extra))
            self._pending_context.clear()
        history, message = self._recovered(message)
        request = ExecutionRequest(
            prompt=message, tool_context=self._context, hooks=self.hooks, ask=self._ask,
            history=history, history_repaired=True, budget=budget,
            environment=self._environment, on_event=on_event, on_message=self._persist,
            execution_id=turn_id, on_tool_started=self._mark_started,
            compactor=self._compactor, before_changes=before_changes,
        )
        try:
            result = await self._executor.execute(self.runtime, request)
        finally:
            if finished:
                self._count_turn(finished[-1])
            self._write_side(sync=True)
            await self._writer.flush()  # the turn is on disk (fsync-ed) before it is reported
            if finished:
                self._publish(TurnFinished(turn_id=turn_id, result=finished[-1],
                                           totals=self._record.totals))
            self.claude.turn_finished(someone_at_prompt=self._questions.answerers > 0)
        return result

    def _count_turn(self, result: ExecutionResult) -> None:
        totals = self._record.totals.add_turn(
            iterations=result.iterations, usage=result.usage, cost_usd=result.cost_usd)
        self._record = replace(self._record, totals=totals)

    def _persist(self, message: Message) -> None:
        self._ensure_stored()
        message, self._carried = stored_part(message, self._carried), None
        self._writer.write(self._store.records.append, self.id, [message],
                           lease=self._claimed.lease)
        self._writer.write(self.claude.append, message)
        self._record = replace(self._record,
                               transcript=self._record.transcript.appended([message]),
                               started_tool_ids=unanswered_tool_ids(
                                   self._record.started_tool_ids, [message]))

    # -- crash recovery: a call recorded as started and never answered may have run.

    async def _mark_started(self, use: ToolUseBlock, may_change: bool) -> None:
        # Written before the tool runs: after a crash the record must not say "not run".
        # Durable (fsync, ~0.5-4 ms), and waited for, only for a call that may change
        # something; a read-only call's line is queued in order behind the session's other
        # writes and not synced: whether it ran or not, it changed nothing.
        self._ensure_stored()
        mark = self._store.records.mark_tool_started
        if may_change:
            await self._writer.write_now(mark, self.id, [use.id], lease=self._claimed.lease,
                                         sync=True)
        else:
            self._writer.write(mark, self.id, [use.id], lease=self._claimed.lease, sync=False)
        self._record = replace(self._record,
                               started_tool_ids=(*self._record.started_tool_ids, use.id))

    def _recovered(self, prompt: Message) -> tuple[tuple[Message, ...], Message]:
        """Answer the calls a crash left without a result; trailing answers lead the prompt.

        (R) A prompt a failed turn or a crash left unanswered is not resent: it is named.
        """
        built = turn_history(self._record.transcript.messages, prompt,
                             self._record.started_tool_ids)
        stored = self._record.transcript.messages
        self._carried = built.carried if stored and stored[-1] == built.carried else None
        for text in built.unanswered:
            short = text if len(text) <= 200 else text[:199] + "…"
            self._publish(Notice(
                text=f"Your previous prompt got no answer (its turn failed) and is not sent "
                     f"again: “{short}”", level="warning"))
        return built.history, built.prompt

    async def compact(self, instructions: str | None = None) -> Compacted:
        """Summarise the conversation now (`/compact`), between turns; return the report.

        Waits for a running turn to end, unless called from inside it (a slash command).
        """
        running = self._running is not None and self._running[1] is asyncio.current_task()
        async with contextlib.nullcontext() if running else self._lock:
            history = repair_tool_pairs(self._record.transcript.messages,
                                        self._record.started_tool_ids)
            done = await self._compactor.compact(
                history, trigger="manual", instructions=instructions,
                tools=self.runtime.tools.definitions())
            if done.usage != Usage():
                self._record = replace(self._record, totals=with_cost(self._record.totals, done))
                self._write_side(sync=True)
            await self._writer.flush()  # the compacted transcript is on disk when it is told
            self._publish(done)
            return done

    def _save_compaction(self, done: Compacted) -> None:
        """Keep the compacted transcript as a snapshot (what --resume starts from)."""
        self._ensure_stored()
        self._writer.write(self._store.records.replace_transcript, self.id, done.messages,
                           lease=self._claimed.lease)
        self._record = replace(
            self._record, transcript=SessionTranscript(messages=done.messages),
            compaction_failure_count=self._compactor.failures,
            started_tool_ids=unanswered_tool_ids(self._record.started_tool_ids, done.messages))
        self._write_side(sync=True)

    def _write_side(self, *, sync: bool) -> None:
        if not self._stored:  # (R) kept in memory; written with the session's first message
            return
        record = self._record
        self._writer.write(
            self._store.records.write_side,
            self.id, totals=record.totals, budget_override=record.budget_override,
            compaction_failure_count=record.compaction_failure_count,
            approvals=record.approvals, lease=self._claimed.lease, sync=sync,
            reads=self._context.state.reads(), model_choice=record.model_choice,
        )

    def _publish(self, event: LiveSessionEvent) -> None:
        for callback in list(self._subscribers):
            callback(event)


def _with_session_model(runtime: AgentRuntime, choice: ModelChoice | None) -> AgentRuntime:
    """Return `runtime` with the session's `/model` choice, if made on the same provider."""
    if choice is None or choice.provider != runtime.client.provider:
        return runtime
    return replace(runtime, model=choice.model)
