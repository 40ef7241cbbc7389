"""RecordKeeper: what survives of a live session, kept on disk through one writer.

The record (messages, totals, budget override, approvals, model choice) is the truth a
session is reopened from, on this node or another. A live session changes it only through its
keeper, which writes every change in order on the session's writer thread, and never before
the session has something to keep: a new session reaches disk with its first message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from aimon_core.agent import Compacted, ExecutionResult
from aimon_core.live._history import stored_part, turn_history
from aimon_core.live._writer import SessionWriter
from aimon_core.llm import Message, ToolUseBlock
from aimon_core.session import (
    BudgetOverride,
    ClaimedSession,
    ModelChoice,
    SessionId,
    SessionRecord,
    SessionStore,
    SessionTranscript,
    unanswered_tool_ids,
)
from aimon_core.tools import ToolState

# Told the text of each earlier prompt a failed turn or a crash left unanswered.
Unanswered = Callable[[str], None]


class RecordKeeper:
    """Keeps one claimed session's record, in memory and on disk, in order.

    Args:
        state: the session's read tracking, stored with the record (Edit after resume).
    """

    def __init__(self, store: SessionStore, claimed: ClaimedSession, state: ToolState) -> None:
        self.store = store
        self.claimed = claimed
        self._record = claimed.record
        self._stored = claimed.stored  # (R) a new session reaches disk with its first message
        self._state = state
        # Every write to the session's files goes through one writer, off the event loop.
        self.writer = SessionWriter()
        # (R) Stored tool results that lead the next prompt: not stored a second time.
        self._carried: Message | None = None

    @property
    def id(self) -> SessionId:
        """Return the session id."""
        return self._record.id

    @property
    def record(self) -> SessionRecord:
        """Return the record as of the last change."""
        return self._record

    @property
    def stored(self) -> bool:
        """(R) Tell whether the session is on disk (a new one is, from its first prompt)."""
        return self._stored

    def transcript_path(self) -> str | None:
        """Return where the transcript is stored, when the store keeps files."""
        records = self.store.records
        path_for = getattr(records, "path_for", None)
        if not self._stored and callable(path_for):  # (R) not written yet: where it will be
            return str(path_for(self.id, self._record.project_root))
        path_of = getattr(records, "path_of", None)
        return str(path_of(self.id)) if callable(path_of) else None

    def _ensure_stored(self) -> None:
        """(R) Write a new session the first time it has something to keep."""
        if not self._stored:
            self.writer.write(self.store.store_new, self._record, self.claimed)
            self._stored = True

    def persist(self, message: Message) -> Message:
        """Append a message of the transcript; return the part that was stored."""
        self._ensure_stored()
        message, self._carried = stored_part(message, self._carried), None
        self.writer.write(self.store.records.append, self.id, [message],
                          lease=self.claimed.lease)
        self._record = replace(self._record,
                               transcript=self._record.transcript.appended([message]),
                               started_tool_ids=unanswered_tool_ids(
                                   self._record.started_tool_ids, [message]))
        return message

    async def mark_started(self, use: ToolUseBlock, may_change: bool) -> None:
        """Record a tool call as started, before it runs (crash recovery: "may have run").

        Waited for either way, so that everything before it (the turn's prompt, the model's
        answer) is written before the tool runs: a process killed while a long command runs
        keeps the turn so far. Durable (fsync, ~0.5-4 ms) only for a call that may change
        something; a read-only call's line is not synced: whether it ran or not, it changed
        nothing, and what is written survives a killed process (not a lost machine).
        """
        self._ensure_stored()
        await self.writer.write_now(self.store.records.mark_tool_started, self.id, [use.id],
                                    lease=self.claimed.lease, sync=may_change)
        self._record = replace(self._record,
                               started_tool_ids=(*self._record.started_tool_ids, use.id))

    def recovered(self, prompt: Message, unanswered: Unanswered
                  ) -> tuple[tuple[Message, ...], Message]:
        """Answer the calls a crash left without a result; trailing answers lead the prompt.

        (R) A prompt a failed turn or a crash left unanswered is not resent: it is named.
        """
        built = turn_history(self._record.transcript.messages, prompt,
                             self._record.started_tool_ids)
        stored = self._record.transcript.messages
        self._carried = built.carried if stored and stored[-1] == built.carried else None
        for text in built.unanswered:
            unanswered(text)
        return built.history, built.prompt

    def count_turn(self, result: ExecutionResult) -> None:
        """Add a finished turn to the totals."""
        totals = self._record.totals.add_turn(
            iterations=result.iterations, usage=result.usage, cost_usd=result.cost_usd)
        self._record = replace(self._record, totals=totals)

    def add_cost(self, done: Compacted) -> None:
        """Add what a manual compaction cost to the totals."""
        from aimon_core.live._compaction import with_cost

        self._record = replace(self._record, totals=with_cost(self._record.totals, done))
        self.write_side(sync=True)

    def save_compaction(self, done: Compacted, failures: int) -> None:
        """Keep the compacted transcript as a snapshot (what --resume starts from)."""
        self._ensure_stored()
        self.writer.write(self.store.records.replace_transcript, self.id, done.messages,
                          lease=self.claimed.lease)
        self._record = replace(
            self._record, transcript=SessionTranscript(messages=done.messages),
            compaction_failure_count=failures,
            started_tool_ids=unanswered_tool_ids(self._record.started_tool_ids, done.messages))
        self.write_side(sync=True)

    def set_budget_override(self, override: BudgetOverride | None) -> None:
        """Store a budget override (it survives resume); on disk when it returns."""
        self._record = replace(self._record, budget_override=override)
        self._settle()

    def set_model_choice(self, choice: ModelChoice) -> None:
        """Store the session's model choice; on disk when it returns."""
        self._record = replace(self._record, model_choice=choice)
        self._settle()

    def set_approvals(self, approvals: tuple[str, ...]) -> None:
        """Store the session-scope approval rules; on disk when it returns."""
        self._record = replace(self._record, approvals=approvals)
        self._settle()

    def _settle(self) -> None:
        self.write_side(sync=True)
        self.writer.flush_blocking()  # a setting the user made is on disk when it returns

    def write_side(self, *, sync: bool) -> None:
        """Write the side record (totals, settings of the session, read tracking)."""
        if not self._stored:  # (R) kept in memory; written with the session's first message
            return
        record = self._record
        self.writer.write(
            self.store.records.write_side,
            self.id, totals=record.totals, budget_override=record.budget_override,
            compaction_failure_count=record.compaction_failure_count,
            approvals=record.approvals, lease=self.claimed.lease, sync=sync,
            reads=self._state.reads(), model_choice=record.model_choice,
        )

    async def close(self) -> None:
        """Write what is queued, then release the session's lease."""
        try:
            await self.writer.close()  # everything queued is on disk before the lease goes
        finally:
            self.store.release(self.claimed)
